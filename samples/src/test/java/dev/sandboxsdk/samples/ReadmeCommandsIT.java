package dev.sandboxsdk.samples;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Shell commands of the README that leave something behind: they must not leave it in the
 * checkout, and what they write must be private. (.ci/run runs the README's agent command itself.)
 */
@org.junit.jupiter.api.Timeout(value = 2, unit = java.util.concurrent.TimeUnit.MINUTES) // a hanging child must not hang the build
class ReadmeCommandsIT {
  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
  private static final Pattern BASH = Pattern.compile("```bash\\n(.*?)```", Pattern.DOTALL);

  @TempDir
  Path tmp;

  @Test
  void theHttpRecipeWritesAPrivateTokenFileOutsideTheCurrentDirectory() throws Exception {
    String recipe = bashBlockContaining("--token-file");
    String makeToken = recipe.lines().findFirst().orElseThrow();
    Path home = Files.createDirectories(tmp.resolve("home"));
    Path cwd = Files.createDirectories(tmp.resolve("checkout"));

    ProcessBuilder pb = new ProcessBuilder("bash", "-c", makeToken).directory(cwd.toFile())
        .redirectErrorStream(true);
    pb.environment().put("HOME", home.toString());
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();

    assertThat(p.exitValue()).as("%s: %s", makeToken, out).isZero();
    try (var left = Files.list(cwd)) {
      assertThat(left.toList()).as("files left in the directory it ran in").isEmpty();
    }
    Matcher file = Pattern.compile("--token-file (\\S+)").matcher(recipe);
    assertThat(file.find()).isTrue();
    Path token = Path.of(file.group(1).replace("~", home.toString()));
    assertThat(token).as("the file the server is told to read").exists();
    assertThat(Files.readString(token)).matches("[A-Za-z0-9]{40}");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(token))).isEqualTo("rw-------");
  }

  @Test
  void aTokenFileMadeInTheCheckoutIsIgnoredByGit() throws Exception {
    Process p = new ProcessBuilder("git", "check-ignore", "-q", "mcp-token").directory(ROOT.toFile()).start();

    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as("git check-ignore mcp-token (0: ignored)").isZero();
  }

  @Test
  void theAgentCommandServesAFreshWorkspaceNotTheCheckout() throws Exception {
    String run = bashBlockContaining("container-agent.jar --bind");

    assertThat(run).contains("--workspace \"$(mktemp -d)\"");
  }

  private String bashBlockContaining(String text) throws Exception {
    Matcher m = BASH.matcher(Files.readString(ROOT.resolve("README.md"), StandardCharsets.UTF_8));
    List<String> blocks = m.results().map(r -> r.group(1)).filter(b -> b.contains(text)).toList();
    assertThat(blocks).as("README bash blocks with %s", text).hasSize(1);
    return blocks.get(0);
  }
}
