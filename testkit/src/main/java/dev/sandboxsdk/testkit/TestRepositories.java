package dev.sandboxsdk.testkit;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Test git repositories made with the host's git, which reads no configuration of the user's or
 * the system's here: a bare repository with one commit, for the servers the tests clone from.
 */
public final class TestRepositories {
  private TestRepositories() {
  }

  /**
   * Makes a bare repository at {@code bare} with one commit of {@code files} (path to text) on
   * {@code main}.
   *
   * @throws IllegalStateException if git fails (not installed, say)
   */
  public static void createBare(Path bare, Map<String, String> files) throws IOException {
    Path work = Files.createTempDirectory("test-repository-");
    try {
      for (Map.Entry<String, String> f : files.entrySet()) {
        Path p = work.resolve(f.getKey()).normalize();
        if (!p.startsWith(work) || p.equals(work)) {
          throw new IllegalArgumentException("invalid file name: " + f.getKey());
        }
        Files.createDirectories(p.getParent());
        Files.writeString(p, f.getValue());
      }
      git(work, "init", "-q", "-b", "main");
      git(work, "add", "-A");
      git(work, "-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "initial");
      git(work, "init", "-q", "--bare", "-b", "main", bare.toString());
      git(work, "push", "-q", bare.toString(), "main");
    } finally {
      TempFiles.deleteTree(work);
    }
  }

  /**
   * Runs {@code git ARGS} in {@code dir}.
   *
   * @throws IllegalStateException if it fails, with its output
   */
  public static void git(Path dir, String... args) throws IOException {
    List<String> command = new ArrayList<>(List.of("git"));
    command.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
    isolate(pb.environment());
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    try {
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        p.destroyForcibly();
        throw new IllegalStateException("git " + String.join(" ", args) + " failed: " + out);
      }
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** Git run with {@code env} reads no configuration of the user's or the system's and never prompts. */
  static void isolate(Map<String, String> env) {
    env.put("GIT_CONFIG_NOSYSTEM", "1");
    env.put("GIT_CONFIG_GLOBAL", "/dev/null");
    env.put("GIT_TERMINAL_PROMPT", "0");
  }
}
