package dev.sandboxsdk.agent.process;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs a short command of the agent's own (a port probe, a git clone) exactly as a caller's
 * command runs: an argv that never passes through a shell, as the command user, inside bubblewrap
 * and the sandbox's network namespace when the agent isolates, in its own process group, killed
 * by the agent when its time is up. Output is kept up to a small cap per stream.
 */
public final class InternalCommand {
  /** What the command left behind. */
  public record Outcome(int exitCode, boolean timedOut, String stdout, String stderr) {
  }

  private InternalCommand() {}

  /**
   * Runs {@code argv} with {@code env} over the commands' start environment, in {@code cwd} (null:
   * the workspace), and waits for it; a command still running after {@code timeoutMs} is killed
   * (SIGTERM, SIGKILL after the grace period) and reported with {@code timedOut}.
   *
   * @throws AgentException as spawning a command does (COMMAND_NOT_FOUND, TOO_MANY_PROCESSES, ...)
   */
  public static Outcome run(ProcessManager processes, List<String> argv, Map<String, String> env, String cwd, long timeoutMs,
      int maxOutputBytes) throws InterruptedException {
    ExecSpec spec = new ExecSpec(null, argv, env, cwd, timeoutMs, null, false, maxOutputBytes, ExecSpec.Encoding.UTF8,
        null, false, null);
    Capture out = new Capture(maxOutputBytes);
    Capture err = new Capture(maxOutputBytes);
    ManagedProcess p = processes.spawnForeground(spec, ManagedProcess.Kind.EXEC);
    p.startPumps(out, err);
    long waitMs = timeoutMs + processes.config().graceMs() + 10_000;
    try {
      p.finished().get(waitMs, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      processes.killForDisconnect(p);
      throw e;
    } catch (ExecutionException e) {
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "internal error: the command failed to finish");
    } catch (TimeoutException e) {
      processes.killForDisconnect(p);
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "internal error: the command did not end after it was killed");
    }
    ManagedProcess.Snapshot s = p.snapshot();
    return new Outcome(s.exitCode() == null ? -1 : s.exitCode(), s.timedOut(), out.text(), err.text());
  }

  /** Keeps the first {@code limit} bytes of a stream and drops the rest. */
  private static final class Capture implements ManagedProcess.OutputSink {
    private final int limit;
    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

    Capture(int limit) {
      this.limit = limit;
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) {
      int n = Math.min(len, limit - bytes.size());
      if (n > 0) {
        bytes.write(b, off, n);
      }
    }

    synchronized String text() {
      return bytes.toString(StandardCharsets.UTF_8);
    }
  }
}
