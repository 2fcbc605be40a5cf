package dev.sandboxsdk.agent.http;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.process.CommandUser;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * File changes made as the {@code --command-user}: coreutils ({@code mkdir}, {@code rm}, {@code
 * mv}, {@code chmod}, {@code dd}, {@code cat}) started through the user's {@code setpriv} prefix
 * with an argument vector, never a shell, and paths that {@link WorkspacePaths} already checked.
 *
 * <p>Why not the agent itself: in container mode the agent is root with only CAP_SETUID,
 * CAP_SETGID, CAP_SETPCAP and CAP_KILL, so it may neither write into the user's workspace nor
 * chown. And what the user's own process does with a path can never reach further than the user
 * could anyway, even if a command swaps a directory for a link between the agent's check and the
 * change. The files belong to the user because the user made them.
 */
final class UserFiles {
  /** A helper that has not finished by then is killed (a stuck NFS mount, say). */
  private static final long HELPER_TIMEOUT_SECONDS = 60;
  private static final int BUFFER = 64 * 1024;

  private final CommandUser user;

  UserFiles(CommandUser user) {
    this.user = user;
  }

  void mkdir(Path dir, boolean parents, String field, String raw) {
    run(field, raw, parents ? List.of("mkdir", "-p", "--", dir.toString()) : List.of("mkdir", "--", dir.toString()));
  }

  void remove(Path p, boolean recursive, String field, String raw) {
    run(field, raw, List.of("rm", recursive ? "-rf" : "-f", "--", p.toString()));
  }

  /** Like rename(2): {@code to} is replaced if it is a file or an empty directory. */
  void rename(Path from, Path to, String field, String raw) {
    run(field, raw, List.of("mv", "-f", "-T", "--", from.toString(), to.toString()));
  }

  void chmod(Path p, int mode, String field, String raw) {
    run(field, raw, List.of("chmod", Integer.toOctalString(mode & 07777), "--", p.toString()));
  }

  /**
   * Writes {@code in} to {@code target} (created or truncated) and returns the number of bytes. An
   * IOException from {@code in} is the client's: the helper is killed and the exception propagates.
   */
  long write(Path target, InputStream in, boolean fsync, String field, String raw) throws IOException {
    List<String> argv = new java.util.ArrayList<>(List.of("dd", "of=" + target, "bs=" + BUFFER, "status=none"));
    if (fsync) {
      argv.add("conv=fsync");
    }
    Process p = start(argv, true);
    long written = 0;
    boolean done = false;
    try {
      OutputStream stdin = p.getOutputStream();
      byte[] buf = new byte[BUFFER];
      boolean helperGone = false;
      for (int n; (n = in.read(buf)) >= 0; ) {
        if (!helperGone) {
          try {
            stdin.write(buf, 0, n);
          } catch (IOException e) {
            helperGone = true; // dd failed (no space, say); its message says why, below
          }
        }
        written += n;
      }
      try {
        stdin.close();
      } catch (IOException e) {
        // dd already exited; its status tells
      }
      finish(p, field, raw);
      done = true;
      return written;
    } finally {
      if (!done) {
        p.destroyForcibly();
      }
    }
  }

  /** The file's bytes, read by the user (for a file the agent itself may not open); close it to end the helper. */
  InputStream read(Path file, String field, String raw) throws IOException {
    Process p = start(List.of("cat", "--", file.toString()), false);
    InputStream out = p.getInputStream();
    return new InputStream() {
      private boolean eof;

      @Override
      public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
      }

      @Override
      public int read(byte[] b, int off, int len) throws IOException {
        int n = out.read(b, off, len);
        if (n < 0 && !eof) {
          eof = true;
          try {
            finish(p, field, raw); // a failed cat must not look like a short file
          } catch (AgentException e) {
            throw new IOException(e.getMessage(), e);
          }
        }
        return n;
      }

      @Override
      public void close() throws IOException {
        p.destroyForcibly();
        out.close();
      }
    };
  }

  private void run(String field, String raw, List<String> argv) {
    try {
      Process p = start(argv, false);
      p.getOutputStream().close();
      finish(p, field, raw);
    } catch (IOException e) {
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "cannot run " + argv.get(0) + " as the command user: "
          + e.getMessage());
    }
  }

  private Process start(List<String> argv, boolean stdin) throws IOException {
    ProcessBuilder pb = user.helper(argv).redirectError(ProcessBuilder.Redirect.PIPE);
    if (stdin) {
      pb.redirectInput(ProcessBuilder.Redirect.PIPE);
    }
    if (!argv.get(0).equals("cat")) {
      pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
    }
    return pb.start();
  }

  /** Waits for the helper; a non-zero status becomes the protocol error its message names. */
  private static void finish(Process p, String field, String raw) {
    try {
      byte[] err = p.getErrorStream().readNBytes(4096);
      if (!p.waitFor(HELPER_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new AgentException(ErrorCode.FILESYSTEM_ERROR, "the file operation on '" + WorkspacePaths.shorten(raw)
            + "' did not finish within " + HELPER_TIMEOUT_SECONDS + " s", Map.of("field", field));
      }
      if (p.exitValue() != 0) {
        String message = new String(err, StandardCharsets.UTF_8).trim();
        int colon = message.lastIndexOf(": ");
        String reason = colon >= 0 ? message.substring(colon + 2) : message;
        throw WorkspacePaths.failure(new FileSystemException(raw, null, reason.isEmpty()
            ? "exit status " + p.exitValue() : reason), field, raw);
      }
    } catch (IOException e) {
      throw new AgentException(ErrorCode.FILESYSTEM_ERROR, "the file operation on '" + WorkspacePaths.shorten(raw)
          + "' failed: " + e.getMessage(), Map.of("field", field));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "interrupted");
    }
  }
}
