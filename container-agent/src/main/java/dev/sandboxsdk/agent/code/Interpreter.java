package dev.sandboxsdk.agent.code;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.process.ExecSpec;
import dev.sandboxsdk.agent.process.ManagedProcess;
import dev.sandboxsdk.agent.process.ProcessManager;
import dev.sandboxsdk.agent.process.Signal;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One running interpreter of a context: its process, and the events its runner writes, parsed
 * from JSON lines into a small bounded queue. A full queue blocks the pump, which blocks the
 * runner's writes: a slow reader paces the code instead of growing memory. Events outside a run
 * (a JavaScript timer firing later) are dropped. Thread-safe; one run at a time is the caller's
 * rule ({@link CodeContext}).
 */
final class Interpreter {
  /** The longest line the runner may write (a large PNG fits); a longer one ends the interpreter. */
  static final int MAX_LINE_BYTES = 32 << 20;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final ProcessManager processes;
  private final ManagedProcess process;
  private final BlockingQueue<ObjectNode> events = new ArrayBlockingQueue<>(256);
  private final ByteArrayOutputStream line = new ByteArrayOutputStream();
  private final CharsetDecoder stderrDecoder = StandardCharsets.UTF_8.newDecoder()
      .onMalformedInput(CodingErrorAction.REPLACE).onUnmappableCharacter(CodingErrorAction.REPLACE);
  private volatile boolean inRun;
  private volatile boolean ready;
  private volatile boolean closed;
  private volatile String failure;
  private final StringBuilder early = new StringBuilder();

  private Interpreter(ProcessManager processes, ExecSpec spec) {
    this.processes = processes;
    this.process = processes.spawnForeground(spec, ManagedProcess.Kind.STREAM);
    process.startPumps(this::stdout, this::stderr);
  }

  /**
   * Starts the runner and waits until it says it is ready.
   *
   * @throws AgentException INTERPRETER_FAILED if it exits or stays silent for {@code readyMs}
   */
  static Interpreter start(ProcessManager processes, ExecSpec spec, long readyMs) {
    Interpreter in = new Interpreter(processes, spec);
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(readyMs);
    synchronized (in) {
      while (!in.ready && !in.process.isFinished() && System.nanoTime() < deadline) {
        try {
          in.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
    }
    if (!in.ready) {
      in.kill();
      String said;
      synchronized (in.early) {
        said = in.early.toString().strip();
      }
      throw new AgentException(ErrorCode.INTERPRETER_FAILED, spec.argv().get(0) + " did not start its runner"
          + (said.isEmpty() ? " within " + readyMs + " ms" : ": " + said), Map.of("executable", spec.argv().get(0)));
    }
    return in;
  }

  long pid() {
    return process.pid();
  }

  boolean isAlive() {
    return !process.isFinished() && failure == null;
  }

  /** Why the interpreter is unusable (a protocol fault), or null. */
  String failure() {
    return failure;
  }

  /** Marks a run as started and sends its request line. */
  void begin(String code, long maxOutputBytes) throws IOException {
    events.clear();
    inRun = true;
    ObjectNode request = JSON.createObjectNode().put("code", code).put("maxOutputBytes", maxOutputBytes);
    byte[] bytes = (JSON.writeValueAsString(request) + "\n").getBytes(StandardCharsets.UTF_8);
    process.writeStdin(bytes, false);
  }

  /** The next event of the run, or null after {@code nanos}. */
  ObjectNode poll(long nanos) throws InterruptedException {
    return events.poll(nanos, TimeUnit.NANOSECONDS);
  }

  void end() {
    inRun = false;
    events.clear();
  }

  /** SIGINT to the interpreter: KeyboardInterrupt in Python, an interrupted script in node. */
  void interrupt() {
    processes.signal(process, Signal.SIGINT);
  }

  /** SIGKILL to the interpreter's group; returns at once. */
  void kill() {
    closed = true;
    events.clear();
    if (!process.isFinished()) {
      processes.kill(process, Signal.SIGKILL, 0);
    }
  }

  private void stdout(byte[] bytes, int off, int len) throws IOException {
    int start = off;
    for (int i = off; i < off + len; i++) {
      if (bytes[i] == '\n') {
        line.write(bytes, start, i - start);
        start = i + 1;
        deliver(line.toByteArray());
        line.reset();
      }
    }
    line.write(bytes, start, off + len - start);
    if (line.size() > MAX_LINE_BYTES) {
      failure = "the runner wrote a line over " + MAX_LINE_BYTES + " bytes";
      line.reset();
      kill();
    }
  }

  private void deliver(byte[] bytes) {
    JsonNode node;
    try {
      node = JSON.readTree(bytes);
    } catch (IOException e) {
      return; // not the runner's: ignore
    }
    if (!(node instanceof ObjectNode event)) {
      return;
    }
    if ("ready".equals(event.path("type").asText())) {
      synchronized (this) {
        ready = true;
        notifyAll();
      }
      return;
    }
    offer(event);
  }

  private void stderr(byte[] bytes, int off, int len) {
    CharBuffer chars = CharBuffer.allocate(len + 4);
    synchronized (stderrDecoder) {
      stderrDecoder.decode(ByteBuffer.wrap(bytes, off, len), chars, false);
    }
    chars.flip();
    if (chars.length() == 0) {
      return;
    }
    if (!ready) {
      synchronized (early) {
        if (early.length() < 4096) {
          early.append(chars, 0, Math.min(chars.length(), 4096 - early.length()));
        }
      }
      return;
    }
    offer(JSON.createObjectNode().put("type", "stderr").put("text", chars.toString()));
  }

  /** Queues an event of the current run, waiting while the reader is behind. */
  private void offer(ObjectNode event) {
    try {
      while (inRun && !closed && !events.offer(event, 100, TimeUnit.MILLISECONDS)) {
        // the reader is behind: wait for it (or for the run or the interpreter to end)
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
