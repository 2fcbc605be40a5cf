package dev.sandboxsdk.agent.code;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.process.ExecSpec;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.IOException;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One code context: a language, a working directory, an environment and the interpreter that
 * holds its state. Runs are serialised by a fair lock (a second run waits for the first);
 * {@link #interrupt()} and {@link #close()} may be called from any thread at any time.
 */
public final class CodeContext {
  /** What a run reports while it runs; a failing write means the client went away. */
  public interface Listener {
    /** A runner event: stdout, stderr, result or error. */
    void event(ObjectNode event) throws IOException;

    /** Nothing happened for a while: a chance to send a keep-alive. */
    void idle() throws IOException;
  }

  /** How a run ended; {@code restarted}: the interpreter was killed and started afresh (state lost). */
  public record Outcome(int executionCount, long durationMs, boolean interrupted, boolean timedOut,
      boolean restarted, boolean truncated) {
  }

  private static final long IDLE_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

  private final String id;
  private final CodeLanguage language;
  private final String cwd;
  private final Map<String, String> env;
  private final Instant created = Instant.now();
  private final ProcessManager processes;
  private final CodeLimits limits;
  private final ReentrantLock runLock = new ReentrantLock(true);
  private volatile Interpreter interpreter;
  private volatile long interruptAt;
  private volatile boolean closed;
  private volatile int executions;
  private volatile Instant lastUsed = created;

  CodeContext(String id, CodeLanguage language, String cwd, Map<String, String> env, ProcessManager processes,
      CodeLimits limits) {
    this.id = id;
    this.language = language;
    this.cwd = cwd;
    this.env = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(env));
    this.processes = processes;
    this.limits = limits;
    this.interpreter = startInterpreter();
  }

  public String id() {
    return id;
  }

  public CodeLanguage language() {
    return language;
  }

  /** The working directory as asked (null: the workspace). */
  public String cwd() {
    return cwd;
  }

  public Instant created() {
    return created;
  }

  public Instant lastUsed() {
    return lastUsed;
  }

  public int executions() {
    return executions;
  }

  /** Whether a run is in progress (or waiting for the one before it). */
  public boolean isBusy() {
    return runLock.isLocked();
  }

  /** The interpreter's pid, or 0 while none runs. */
  public long pid() {
    Interpreter in = interpreter;
    return in == null || !in.isAlive() ? 0 : in.pid();
  }

  private Interpreter startInterpreter() {
    String path = env.containsKey("PATH") ? env.get("PATH") : System.getenv("PATH");
    Map<String, String> full = new java.util.LinkedHashMap<>();
    full.put("PYTHONUNBUFFERED", "1");
    full.put("PYTHONIOENCODING", "utf-8");
    full.put("MPLBACKEND", "Agg");
    full.putAll(env);
    ExecSpec spec = new ExecSpec(null, language.argv(), full, cwd, null, null, true, 0, ExecSpec.Encoding.UTF8,
        null, false, null);
    try {
      return Interpreter.start(processes, spec, limits.readyMs());
    } catch (AgentException e) {
      if (e.code() == ErrorCode.COMMAND_NOT_FOUND) {
        throw language.notAvailable(path);
      }
      throw e;
    }
  }

  /**
   * Runs {@code code}, reporting its events to {@code listener}, and returns how it ended. An error
   * in the code is an event, not an exception. A timeout or {@link #interrupt()} sends SIGINT;
   * if the run has not ended {@code graceMs} later the interpreter is killed and restarted.
   *
   * @param timeoutMs 0 for none
   * @throws AgentException CONTEXT_NOT_FOUND if the context is deleted meanwhile
   */
  public Outcome run(String code, long timeoutMs, long maxOutputBytes, Listener listener)
      throws InterruptedException {
    runLock.lockInterruptibly();
    try {
      if (closed) {
        throw new AgentException(ErrorCode.CONTEXT_NOT_FOUND, "code context " + id + " was deleted");
      }
      boolean restarted = false;
      if (interpreter == null || !interpreter.isAlive()) {
        Interpreter old = interpreter;
        if (old != null) {
          old.kill();
        }
        interpreter = startInterpreter();
        restarted = true;
      }
      executions++;
      lastUsed = Instant.now();
      interruptAt = 0;
      return drive(interpreter, code, timeoutMs, maxOutputBytes, listener, restarted);
    } finally {
      interruptAt = 0;
      runLock.unlock();
    }
  }

  private Outcome drive(Interpreter in, String code, long timeoutMs, long maxOutputBytes, Listener listener,
      boolean restartedBefore) throws InterruptedException {
    long start = System.nanoTime();
    long deadline = timeoutMs > 0 ? start + TimeUnit.MILLISECONDS.toNanos(timeoutMs) : Long.MAX_VALUE;
    long grace = TimeUnit.MILLISECONDS.toNanos(limits.graceMs());
    boolean timedOut = false;
    boolean clientGone = false;
    long killAt = Long.MAX_VALUE;
    try {
      in.begin(code, maxOutputBytes);
    } catch (IOException e) {
      in.kill();
    }
    try {
      while (true) {
        long now = System.nanoTime();
        long asked = interruptAt;
        if (asked != 0 && killAt == Long.MAX_VALUE) {
          killAt = asked + grace;
        }
        long wait = Math.max(1, Math.min(IDLE_NANOS, Math.min(deadline, killAt) - now));
        ObjectNode event = in.poll(wait);
        if (event != null) {
          String type = event.path("type").asText();
          if (type.equals("done")) {
            boolean interrupted = asked != 0 || timedOut
                || event.path("interrupted").asBoolean(false);
            return outcome(start, interrupted, timedOut, restartedBefore, event.path("truncated").asBoolean());
          }
          if (!clientGone) {
            try {
              listener.event(event);
            } catch (IOException e) {
              clientGone = true; // stop the code: nobody waits for it
              interrupt(in);
            }
          }
          continue;
        }
        now = System.nanoTime();
        if (!in.isAlive() || closed) {
          return lost(in, start, timedOut, listener, clientGone, (closed ? "the context was deleted" : "the "
              + language.executable() + " interpreter exited") + " during the run"
              + (in.failure() != null ? " (" + in.failure() + ")" : "") + "; its state is lost");
        }
        if (now >= deadline && !timedOut) {
          timedOut = true;
          deadline = Long.MAX_VALUE;
          interrupt(in);
          killAt = Math.min(killAt, now + grace);
        } else if (now >= killAt) {
          return lost(in, start, timedOut, listener, clientGone, "the code did not stop within "
              + limits.graceMs() + " ms of the interrupt: the interpreter was killed and restarted, its state is lost");
        } else if (!clientGone) {
          try {
            listener.idle();
          } catch (IOException e) {
            clientGone = true;
            interrupt(in);
          }
        }
      }
    } finally {
      in.end();
    }
  }

  private void interrupt(Interpreter in) {
    if (interruptAt == 0) {
      interruptAt = System.nanoTime();
    }
    in.interrupt();
  }

  /** The interpreter is gone or was killed: report it as the run's error and start a new one. */
  private Outcome lost(Interpreter in, long start, boolean timedOut, Listener listener, boolean clientGone,
      String why) {
    in.kill();
    boolean restarted = false;
    if (!closed) {
      try {
        interpreter = startInterpreter();
        restarted = true;
      } catch (AgentException e) {
        interpreter = null; // the next run tries again
        why += "; restarting failed: " + e.getMessage();
      }
    }
    if (!clientGone) {
      ObjectNode error = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode()
          .put("type", "error").put("ename", timedOut ? "TimeoutError" : "InterpreterRestarted").put("evalue", why);
      error.putArray("traceback");
      try {
        listener.event(error);
      } catch (IOException e) {
        // the client is gone; the outcome is still right
      }
    }
    return outcome(start, true, timedOut, restarted, false);
  }

  private Outcome outcome(long start, boolean interrupted, boolean timedOut, boolean restarted, boolean truncated) {
    lastUsed = Instant.now();
    return new Outcome(executions, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start), interrupted, timedOut,
        restarted, truncated);
  }

  /**
   * Interrupts the run in progress (SIGINT, like Ctrl-C); the context keeps its state unless the
   * code ignores the interrupt past the grace period. Returns whether a run was in progress.
   */
  public boolean interrupt() {
    Interpreter in = interpreter;
    if (!runLock.isLocked() || in == null) {
      return false;
    }
    interrupt(in);
    return true;
  }

  /**
   * Kills the interpreter and starts a fresh one: every variable is gone. A run in progress ends
   * with an error saying so.
   */
  public void restart() throws InterruptedException {
    Interpreter old = interpreter;
    if (old != null) {
      old.kill();
    }
    runLock.lockInterruptibly();
    try {
      if (closed) {
        throw new AgentException(ErrorCode.CONTEXT_NOT_FOUND, "code context " + id + " was deleted");
      }
      Interpreter now = interpreter;
      if (now == null || now == old || !now.isAlive()) {
        interpreter = null;
        interpreter = startInterpreter();
      }
    } finally {
      runLock.unlock();
    }
  }

  /** Kills the interpreter; a run in progress ends with an error. Idempotent. */
  void close() {
    closed = true;
    Interpreter in = interpreter;
    if (in != null) {
      in.kill();
    }
  }
}
