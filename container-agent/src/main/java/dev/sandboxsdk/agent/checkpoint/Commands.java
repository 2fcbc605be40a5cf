package dev.sandboxsdk.agent.checkpoint;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.process.CommandUser;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs the commands of checkpoints (tar, find, chmod) as the command user and turns tar's
 * failures into the protocol errors their messages name.
 */
final class Commands {
  private static final int MAX_STDERR_BYTES = 8 * 1024;
  /** tar of a huge workspace may take long; this only stops one that hangs (a dead NFS mount). */
  private static final long TAR_TIMEOUT_MINUTES = 60;
  private static final String DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin";

  private final CommandUser user;

  Commands(CommandUser user) {
    this.user = user;
  }

  record Outcome(int exit, String stderr) {
  }

  /**
   * Runs {@code argv} as the command user (or the agent's user without one), with an environment of
   * PATH and LC_ALL=C only, in "/"; stdin and stdout from files the agent opens. Waits for the end.
   */
  Outcome run(List<String> argv, File stdin, File stdout) {
    ProcessBuilder pb;
    if (user != null) {
      pb = user.helper(argv);
    } else {
      pb = new ProcessBuilder(argv).directory(new File("/"));
      Map<String, String> env = pb.environment();
      String path = env.get("PATH");
      env.clear(); // never the agent's token
      env.put("PATH", path == null ? DEFAULT_PATH : path);
      env.put("LC_ALL", "C");
    }
    pb.redirectInput(stdin != null ? ProcessBuilder.Redirect.from(stdin) : ProcessBuilder.Redirect.from(new File("/dev/null")));
    pb.redirectOutput(stdout != null ? ProcessBuilder.Redirect.to(stdout) : ProcessBuilder.Redirect.DISCARD);
    pb.redirectError(ProcessBuilder.Redirect.PIPE);
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "cannot run " + argv.get(0) + " for checkpoints ("
          + argv.get(0) + " must be installed where the agent runs): " + e.getMessage());
    }
    try {
      String err = readCapped(p.getErrorStream());
      if (!p.waitFor(TAR_TIMEOUT_MINUTES, TimeUnit.MINUTES)) {
        p.destroyForcibly();
        return new Outcome(-1, err + "\n" + argv.get(0) + " did not finish within " + TAR_TIMEOUT_MINUTES + " minutes");
      }
      return new Outcome(p.exitValue(), err);
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new AgentException(ErrorCode.SHUTTING_DOWN, "interrupted while running " + argv.get(0));
    } catch (IOException e) {
      p.destroyForcibly();
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "cannot read the messages of " + argv.get(0) + ": " + e);
    }
  }

  /** The first bytes of the stream; the rest is read and dropped so the process never blocks. */
  private static String readCapped(InputStream in) throws IOException {
    byte[] kept = in.readNBytes(MAX_STDERR_BYTES);
    byte[] skip = new byte[8192];
    while (in.read(skip) >= 0) {
      // drain
    }
    return new String(kept, StandardCharsets.UTF_8);
  }

  /** tar's failure as the protocol error its message names (no space, permission, ...). */
  static AgentException tarFailure(String what, Outcome o, String consequence) {
    String err = abbreviate(o.stderr().trim());
    Map<String, Object> context = new LinkedHashMap<>();
    context.put("exitCode", o.exit());
    context.put("stderr", err);
    // "Wrote only N of M bytes": a short write to the archive, which on a local disk is a full one.
    if (err.contains("No space left") || err.contains("Disk quota exceeded") || err.contains("Wrote only")) {
      return new AgentException(ErrorCode.NO_SPACE, what + " failed: no space left on the device (or quota exceeded);"
          + " " + consequence + ". Free space (delete checkpoints or files) and try again", context);
    }
    if (err.contains("Permission denied") || err.contains("Operation not permitted")) {
      return new AgentException(ErrorCode.PERMISSION_DENIED, what + " failed: " + err + "; " + consequence
          + ". Files the sandbox's user cannot read cannot be checkpointed", context);
    }
    return new AgentException(ErrorCode.FILESYSTEM_ERROR, what + " failed: tar exited with " + o.exit()
        + (err.isEmpty() ? "" : ": " + err) + "; " + consequence, context);
  }

  static String abbreviate(String s) {
    return s.length() <= 2000 ? s : s.substring(0, 2000) + "...";
  }
}
