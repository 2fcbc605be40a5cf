package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.LogEvent;
import dev.sandboxsdk.LogRange;
import dev.sandboxsdk.ProcessInfo;
import dev.sandboxsdk.ProcessLogs;
import dev.sandboxsdk.ProcessNotFoundException;
import dev.sandboxsdk.ProcessOptions;
import dev.sandboxsdk.ProcessStatus;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxConnectionException;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxProcess;
import dev.sandboxsdk.Signal;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Flow;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.ConnectionPool;
import okhttp3.Dispatcher;
import okhttp3.HttpUrl;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Protocol;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okhttp3.ResponseBody;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link Sandbox} that talks protocol v1 to an agent over HTTP. Thread-safe: all mutable
 * state is in concurrent collections, atomics and volatile fields.
 */
public final class RealSandbox implements Sandbox {
  private static final Logger log = LoggerFactory.getLogger(RealSandbox.class);
  private static final MediaType JSON = MediaType.get("application/json; charset=utf-8");
  private static final long MAX_EVENT_LINE_BYTES = 8L << 20;
  private static final long MAX_ERROR_BODY_BYTES = 64 << 10;
  /** The most a JSON answer may be that carries no command output (a process list, a kill, the version). */
  private static final long MAX_ANSWER_BYTES = 64L << 20;
  /** JSON text of one output byte at worst: a control character becomes six (backslash, u, four hex digits). */
  private static final long JSON_BYTES_PER_OUTPUT_BYTE = 6;
  /** The agent's documented defaults, for when its published limits were not fetched. */
  private static final long AGENT_DEFAULT_MAX_OUTPUT_BYTES = 16L << 20;
  private static final long AGENT_DEFAULT_LOG_WINDOW_BYTES = 1L << 20;
  private static final int LOG_STREAM_RETRIES = 5;
  private static final AtomicInteger CLIENT_IDS = new AtomicInteger();
  /** The agent's id of its current run, on every answer (our extension of protocol v1). */
  static final String BOOT_ID_HEADER = "Sandbox-Boot-Id";
  /** The longest keep-alive interval protocol v1 allows an agent (docs/protocol/events.md). */
  private static final long MAX_KEEP_ALIVE_MS = 15_000;
  /** The agent's keep-alive interval in ms, on every answer of agents that have the extension. */
  static final String KEEP_ALIVE_HEADER = "Sandbox-Keep-Alive-Ms";

  private final HttpUrl base;
  private final HttpUrl executeUrl;
  private final HttpUrl executeStreamUrl;
  private final String authorization;
  final OkHttpClient client;
  /** Clients derived from {@link #client} with another read timeout; they share its pool and dispatcher. */
  private final ConcurrentHashMap<Duration, OkHttpClient> byReadTimeout = new ConcurrentHashMap<>();
  private final boolean ownsPool;
  private final ExecutorService executor;
  private final Duration readTimeout;
  private final Duration execTimeout;
  private final Duration configuredStreamIdle;
  private volatile Duration streamIdle;
  private volatile JsonNode limits;
  final Activity activity;
  final Set<Call> calls = ConcurrentHashMap.newKeySet();
  private final Set<EventCursor<?>> cursors = ConcurrentHashMap.newKeySet();
  private volatile String closedReason;
  /** The boot id in the first answer that carried one; never replaced. */
  private volatile String firstBootId;
  private final RealFiles files = new RealFiles(this);
  private final RealGit git = new RealGit(this);
  private final RealCheckpoints checkpoints = new RealCheckpoints(this);
  private final RealPorts ports = new RealPorts(this);
  private final RealTerminals terminals = new RealTerminals(this);

  /** Use {@link Sandbox#builder()} or {@code LocalSandbox}. */
  public RealSandbox(URI baseUrl, String token, Duration connectTimeout, Duration readTimeout, Duration execTimeout,
      Duration streamIdleTimeout, OkHttpClient shared, Activity activity) {
    HttpUrl url = HttpUrl.get(baseUrl.toString());
    if (url == null) {
      throw new IllegalArgumentException("baseUrl must be an http or https URL: " + baseUrl);
    }
    if (token.isBlank() || token.chars().anyMatch(c -> c < 0x20 || c > 0x7e)) {
      throw new IllegalArgumentException("token must be non-blank printable ASCII");
    }
    this.base = url;
    this.executeUrl = url("api", "execute");
    this.executeStreamUrl = url("api", "execute", "stream");
    this.authorization = "Bearer " + token.strip();
    this.readTimeout = readTimeout;
    this.execTimeout = execTimeout;
    this.configuredStreamIdle = streamIdleTimeout;
    this.activity = activity != null ? activity : new Activity();
    int id = CLIENT_IDS.incrementAndGet();
    AtomicInteger threads = new AtomicInteger();
    // Threads for OkHttp's async calls and for reading streams; daemon so a forgotten close()
    // never keeps the JVM alive; idle ones die after a minute.
    this.executor = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 60, TimeUnit.SECONDS, new SynchronousQueue<>(), r -> {
      Thread t = new Thread(r, "sandbox-sdk-" + id + "-" + threads.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    Dispatcher dispatcher = new Dispatcher(executor);
    dispatcher.setMaxRequests(4096); // each execAsync holds a request for the command's whole run
    dispatcher.setMaxRequestsPerHost(4096);
    OkHttpClient.Builder b = shared != null ? shared.newBuilder() : new OkHttpClient.Builder()
        .connectionPool(new ConnectionPool(16, 20, TimeUnit.SECONDS)); // below the agent's idle close
    this.ownsPool = shared == null;
    this.client = b.dispatcher(dispatcher)
        .protocols(List.of(Protocol.HTTP_1_1))
        .connectTimeout(connectTimeout)
        .readTimeout(readTimeout)
        .writeTimeout(readTimeout)
        .callTimeout(Duration.ZERO)
        .build();
  }

  @Override
  public String toString() {
    return "Sandbox{" + base + (closedReason != null ? ", closed" : "") + "}"; // never the token
  }

  // ---- exec

  @Override
  public ExecResult exec(Command command, ExecOptions options) {
    Objects.requireNonNull(command, "command == null");
    Objects.requireNonNull(options, "options == null");
    ensureOpen();
    if (options.onOutput() != null) {
      return execCollecting(command, options, null);
    }
    activity.begin();
    try {
      Duration timeout = timeoutOf(options);
      Call call = execCall(command, options, timeout);
      return Wire.execResult(executeExec(call, "exec " + command.display(), execAnswerLimit(options)));
    } finally {
      activity.end();
    }
  }

  @Override
  public CompletableFuture<ExecResult> execAsync(Command command, ExecOptions options) {
    Objects.requireNonNull(command, "command == null");
    Objects.requireNonNull(options, "options == null");
    ensureOpen();
    if (options.onOutput() != null) {
      CancellableFuture<ExecResult> future = new CancellableFuture<>();
      activity.begin();
      try {
        executor.execute(() -> {
          try {
            future.complete(execCollecting(command, options, future));
          } catch (Throwable t) {
            future.completeExceptionally(t);
          } finally {
            activity.end();
          }
        });
      } catch (RuntimeException e) {
        activity.end();
        throw new SandboxException("cannot start execAsync: " + e, e);
      }
      return future;
    }
    Duration timeout = timeoutOf(options);
    Call call = execCall(command, options, timeout);
    String what = "exec " + command.display();
    CancellableFuture<ExecResult> future = new CancellableFuture<>();
    future.onCancel(() -> {
      call.cancel();
      killExecSoon(call.request().header(EXEC_ID_HEADER));
    });
    activity.begin();
    calls.add(call);
    call.enqueue(new Callback() {
      @Override
      public void onFailure(Call c, IOException e) {
        finish(c);
        future.completeExceptionally(closedReason != null ? closedError(e) : ErrorMapper.fromIo(e, what));
      }

      @Override
      public void onResponse(Call c, Response response) {
        try (response) {
          readExecBodyWithWindow(response);
          future.complete(Wire.execResult(readJson(c, response, what, execAnswerLimit(options))));
        } catch (IOException e) {
          future.completeExceptionally(ErrorMapper.fromIo(e, what));
        } catch (Throwable t) {
          future.completeExceptionally(t);
        } finally {
          finish(c);
        }
      }

      private void finish(Call c) {
        calls.remove(c);
        activity.end();
      }
    });
    return future;
  }

  private Call execCall(Command command, ExecOptions options, Duration timeout) {
    Request request = post(executeUrl, Wire.execBody(command, options, timeout, false)).newBuilder()
        .header(EXEC_ID_HEADER, newExecId()).build();
    Call call = execClient().newCall(request);
    if (timeout != null) {
      // The agent enforces the timeout; this deadline only guards against an agent that never answers.
      call.timeout().timeout(timeout.toMillis() + 60_000, TimeUnit.MILLISECONDS);
    }
    return call;
  }

  /** exec with an output listener: runs over the event stream and collects the output. */
  private ExecResult execCollecting(Command command, ExecOptions options, CancellableFuture<?> future) {
    // The agent's documented default for a plain exec; an agent started with another
    // --max-output-bytes publishes it in /api/version, which this path does not fetch (yet).
    int max = options.maxOutputBytes() > 0 ? options.maxOutputBytes() : 16 << 20;
    OutputCollector stdout = new OutputCollector(max);
    OutputCollector stderr = new OutputCollector(max);
    Abort abort = new Abort();
    if (future != null) {
      future.onCancel(abort::abort);
    }
    EventCursor<ExecEvent> opened = openExecStream(command, options, abort);
    // A blocking exec waits for events interruptibly, so that an interrupt kills the command at
    // once rather than at the next keep-alive; execAsync's thread is cancelled through the abort.
    EventCursor<ExecEvent> cursor = future == null ? new InterruptibleCursor<>(opened, executor) : opened;
    abort.onAbort(cursor::close);
    String what = "exec " + command.display();
    try {
      return collect(command, options, cursor, stdout, stderr, what);
    } catch (RuntimeException | Error e) {
      abort.abort(); // a listener that threw, a broken stream, an interrupt: kill the command now
      throw e;
    }
  }

  private ExecResult collect(Command command, ExecOptions options, EventCursor<ExecEvent> cursor,
      OutputCollector stdout, OutputCollector stderr, String what) {
    try (cursor) {
      ExecEvent.Start start = null;
      for (;;) {
        ExecEvent e;
        try {
          e = cursor.next();
        } catch (RuntimeException ex) {
          throw ex;
        } catch (InterruptedException ex) {
          Thread.currentThread().interrupt();
          throw new SandboxException(what + ": interrupted", ex); // the caller aborts: the command is killed
        } catch (Exception ex) {
          Throwable mapped = streamError(ex, what);
          throw mapped instanceof RuntimeException ? (RuntimeException) mapped : new SandboxException(what, ex);
        }
        if (e instanceof ExecEvent.Start) {
          start = (ExecEvent.Start) e;
        } else if (e instanceof ExecEvent.Stdout) {
          ExecEvent.Stdout out = (ExecEvent.Stdout) e;
          stdout.add(out.text(), out.bytes());
          notify(options, dev.sandboxsdk.StdStream.STDOUT, out.text(), cursor);
        } else if (e instanceof ExecEvent.Stderr) {
          ExecEvent.Stderr err = (ExecEvent.Stderr) e;
          stderr.add(err.text(), err.bytes());
          notify(options, dev.sandboxsdk.StdStream.STDERR, err.text(), cursor);
        } else if (e instanceof ExecEvent.Complete) {
          ExecEvent.Complete done = (ExecEvent.Complete) e;
          return new ExecResult(done.exitCode(), stdout.text(), stderr.text(),
              start != null ? start.command() : command.display(), done.duration(), done.timedOut(),
              stdout.truncated() || stderr.truncated(), done.signal(), start != null ? start.pid() : 0,
              stdout.written(), stderr.written());
        }
      }
    }
  }

  private static void notify(ExecOptions options, dev.sandboxsdk.StdStream stream, String text,
      EventCursor<ExecEvent> cursor) {
    try {
      options.onOutput().onOutput(stream, text);
    } catch (RuntimeException | Error e) {
      cursor.close(); // hangs up: the agent kills the command
      throw new SandboxException("the onOutput listener threw " + e + "; the command was stopped", e);
    }
  }

  @Override
  public Flow.Publisher<ExecEvent> execStream(Command command, ExecOptions options) {
    Objects.requireNonNull(command, "command == null");
    Objects.requireNonNull(options, "options == null");
    String what = "execStream " + command.display();
    return new EventPublisher<>(abort -> openExecStream(command, options, abort), executor,
        t -> streamError(t, what));
  }

  private EventCursor<ExecEvent> openExecStream(Command command, ExecOptions options, Abort abort) {
    ensureOpen();
    String execId = newExecId();
    Request request = post(executeStreamUrl, Wire.execBody(command, options, timeoutOf(options), true)).newBuilder()
        .header(EXEC_ID_HEADER, execId).build();
    java.util.concurrent.atomic.AtomicReference<EventCursor<ExecEvent>> opened =
        new java.util.concurrent.atomic.AtomicReference<>();
    abort.onAbort(() -> {
      EventCursor<ExecEvent> c = opened.get();
      if (c == null || !c.isFinished()) { // after the complete event there is nothing left to kill
        killExecSoon(execId);
      }
    });
    EventCursor<ExecEvent> cursor = openEventStream(request, "execStream " + command.display(),
        Wire.execEventReader(), e -> e instanceof ExecEvent.Complete, abort, true);
    opened.set(cursor);
    return cursor;
  }

  // ---- killing an exec at once

  /**
   * The request header naming an exec, so that a cancel can kill it by {@code DELETE
   * /api/execute/{id}} at once instead of waiting for the agent to notice the closed connection
   * (docs/protocol/exec.md, "DELETE /api/execute/{id}").
   */
  static final String EXEC_ID_HEADER = "X-Sandbox-Exec-Id";

  /** How long a kill request may take; it is best effort, the hang-up is the fallback. */
  private static final long KILL_TIMEOUT_MS = 5_000;

  /**
   * A fresh exec id: 128 random bits in hex, so that ids of different clients do not collide.
   * Not {@code UUID.randomUUID()}: its SecureRandom is seeded on first use, which can cost
   * hundreds of milliseconds on a loaded machine, and the id needs no secrecy (the kill route
   * requires the token like every other).
   */
  static String newExecId() {
    java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
    return String.format("%016x%016x", random.nextLong(), random.nextLong());
  }

  /**
   * Asks the agent to kill the exec {@code execId} now, without waiting for the answer. Best
   * effort: the exec may have finished (404), the agent may predate the route (404) or be
   * unreachable; then the closed connection still ends the command once the agent notices it.
   */
  void killExecSoon(String execId) {
    if (execId == null) {
      return;
    }
    try {
      Call kill = client.newCall(delete(url("api", "execute", execId)));
      kill.timeout().timeout(KILL_TIMEOUT_MS, TimeUnit.MILLISECONDS);
      kill.enqueue(new Callback() {
        @Override
        public void onFailure(Call c, IOException e) {
          log.debug("kill of exec {} failed: {}", execId, e.toString());
        }

        @Override
        public void onResponse(Call c, Response response) {
          response.close();
          log.debug("kill of exec {}: HTTP {}", execId, response.code());
        }
      });
    } catch (RuntimeException e) {
      log.debug("kill of exec {} not sent: {}", execId, e.toString());
    }
  }

  /**
   * Runs an exec call and waits for its answer interruptibly: a blocking socket read does not
   * notice an interrupt, so the call runs on the dispatcher and this thread waits on a future. An
   * interrupt cancels the call, kills the exec at once and restores the flag.
   */
  private JsonNode executeExec(Call call, String what, long maxAnswerBytes) {
    CompletableFuture<JsonNode> answer = new CompletableFuture<>();
    calls.add(call);
    try {
      call.enqueue(new Callback() {
        @Override
        public void onFailure(Call c, IOException e) {
          answer.completeExceptionally(closedReason != null ? closedError(e) : ErrorMapper.fromIo(e, what));
        }

        @Override
        public void onResponse(Call c, Response response) {
          try (response) {
            readExecBodyWithWindow(response);
            answer.complete(readJson(c, response, what, maxAnswerBytes));
          } catch (IOException e) {
            answer.completeExceptionally(ErrorMapper.fromIo(e, what));
          } catch (Throwable t) {
            answer.completeExceptionally(t);
          }
        }
      });
      return answer.get();
    } catch (InterruptedException e) {
      call.cancel();
      killExecSoon(call.request().header(EXEC_ID_HEADER));
      Thread.currentThread().interrupt();
      throw new SandboxException(what + ": interrupted", e);
    } catch (java.util.concurrent.ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      if (cause instanceof Error) {
        throw (Error) cause;
      }
      throw new SandboxException(what + ": " + cause, cause);
    } finally {
      calls.remove(call);
    }
  }

  // ---- background processes

  @Override
  public SandboxProcess startProcess(Command command, ProcessOptions options) {
    Objects.requireNonNull(command, "command == null");
    Objects.requireNonNull(options, "options == null");
    JsonNode n = call(post(url("api", "process", "start"), Wire.startBody(command, options)),
        "startProcess " + command.display());
    return new RealSandboxProcess(this, Wire.text(n, "processId"), n.path("pid").asLong(0), Wire.text(n, "command"));
  }

  @Override
  public List<ProcessInfo> listProcesses() {
    return list(url("api", "process", "list"));
  }

  @Override
  public List<ProcessInfo> listProcesses(ProcessStatus status) {
    Objects.requireNonNull(status, "status == null");
    return list(url("api", "process", "list").newBuilder().addQueryParameter("status", status.wireName()).build());
  }

  private List<ProcessInfo> list(HttpUrl url) {
    JsonNode n = call(get(url), "listProcesses");
    List<ProcessInfo> out = new ArrayList<>();
    for (JsonNode p : n.path("processes")) {
      out.add(Wire.processInfo(p));
    }
    return List.copyOf(out);
  }

  @Override
  public Optional<ProcessInfo> getProcess(String processId) {
    try {
      return Optional.of(processInfo(processId));
    } catch (ProcessNotFoundException e) {
      return Optional.empty();
    }
  }

  ProcessInfo processInfo(String processId) {
    JsonNode n = call(get(processUrl(processId)), "getProcess " + processId);
    return Wire.processInfo(n.path("process"));
  }

  @Override
  public SandboxProcess attachProcess(String processId) {
    ProcessInfo info = processInfo(processId);
    return new RealSandboxProcess(this, info.id(), info.pid(), info.command());
  }

  @Override
  public void killProcess(String processId, Signal signal) {
    Objects.requireNonNull(signal, "signal == null");
    HttpUrl url = processUrl(processId).newBuilder().addQueryParameter("signal", signal.name()).build();
    call(delete(url), "killProcess " + processId);
  }

  @Override
  public int killAllProcesses() {
    // The agent answers only once everything is gone: up to its grace period plus 7 s.
    JsonNode n = call(readingAtLeast(Duration.ofMinutes(2)), delete(url("api", "process", "kill-all")),
        "killAllProcesses");
    return n.path("cleanedCount").asInt(0);
  }

  @Override
  public ProcessLogs getProcessLogs(String processId, LogRange range) {
    Objects.requireNonNull(range, "range == null");
    HttpUrl.Builder url = processUrl(processId).newBuilder().addPathSegment("logs")
        .addQueryParameter("stdoutSince", Long.toString(range.stdoutFrom()))
        .addQueryParameter("stderrSince", Long.toString(range.stderrFrom()));
    if (range.maxBytes() > 0) {
      url.addQueryParameter("maxBytes", Integer.toString(range.maxBytes()));
    }
    long perStream = range.maxBytes() > 0 ? range.maxBytes()
        : publishedLimit("logWindowBytes", AGENT_DEFAULT_LOG_WINDOW_BYTES);
    return Wire.processLogs(call(client, get(url.build()), "getProcessLogs " + processId, answerLimit(perStream)));
  }

  @Override
  public Flow.Publisher<LogEvent> streamProcessLogs(String processId, long fromOffset) {
    if (fromOffset < 0) {
      throw new IllegalArgumentException("fromOffset < 0: " + fromOffset);
    }
    return logPublisher(processId, new LogCursor.Start(fromOffset, -1, -1));
  }

  @Override
  public Flow.Publisher<LogEvent> streamProcessLogs(String processId, LogRange from) {
    Objects.requireNonNull(from, "from == null");
    return logPublisher(processId, new LogCursor.Start(0, from.stdoutFrom(), from.stderrFrom()));
  }

  private Flow.Publisher<LogEvent> logPublisher(String processId, LogCursor.Start start) {
    checkId(processId);
    String what = "streamProcessLogs " + processId;
    return new EventPublisher<>(abort -> openLogStream(processId, start, abort), executor, t -> streamError(t, what));
  }

  /** {@link dev.sandboxsdk.SandboxFiles#watch(String, dev.sandboxsdk.WatchOptions)}: POST /api/watch. */
  Flow.Publisher<dev.sandboxsdk.FileEvent> watch(String path, dev.sandboxsdk.WatchOptions options) {
    Objects.requireNonNull(path, "path == null");
    Objects.requireNonNull(options, "options == null");
    String what = "watch " + path;
    return new EventPublisher<>(abort -> new WatchCursor(openStream(post(url("api", "watch"), Wire.watchBody(path, options)),
        what, n -> n, WatchCursor::isFinal, abort), what), executor, t -> streamError(t, what));
  }

  EventCursor<LogEvent> openLogStream(String processId, long fromOffset, Abort abort) {
    return openLogStream(processId, new LogCursor.Start(fromOffset, -1, -1), abort);
  }

  private EventCursor<LogEvent> openLogStream(String processId, LogCursor.Start start, Abort abort) {
    return openLogStream(processId, start, false, abort);
  }

  /**
   * A resuming cursor over a process's events; also used by waits of {@link RealSandboxProcess}.
   * With {@code base64}, the text of every output event is the base64 of its raw bytes.
   */
  EventCursor<LogEvent> openLogStream(String processId, LogCursor.Start start, boolean base64, Abort abort) {
    ensureOpen();
    LogCursor[] self = new LogCursor[1];
    self[0] = new LogCursor((since, stdoutSince, stderrSince) -> {
      HttpUrl.Builder url = processUrl(processId).newBuilder().addPathSegment("stream")
          .addQueryParameter("since", Long.toString(since));
      if (stdoutSince >= 0) {
        url.addQueryParameter("stdoutSince", Long.toString(stdoutSince));
      }
      if (stderrSince >= 0) {
        url.addQueryParameter("stderrSince", Long.toString(stderrSince));
      }
      if (base64) {
        url.addQueryParameter("encoding", "base64");
      }
      return openEventStream(get(url.build()), "streamProcessLogs " + processId, Wire.logEventReader(),
          e -> e instanceof LogEvent.Exit, abort);
    }, start, LOG_STREAM_RETRIES, 100, () -> cursors.remove(self[0]));
    abort.onAbort(self[0]::close);
    cursors.add(self[0]);
    if (closedReason != null) {
      self[0].close();
      ensureOpen();
    }
    return self[0];
  }

  @Override
  public int cleanupCompletedProcesses() {
    JsonNode n = call(post(url("api", "process", "cleanup"), Wire.MAPPER.createObjectNode()),
        "cleanupCompletedProcesses");
    return n.path("cleanedCount").asInt(0);
  }

  void writeStdin(String processId, String data, boolean eof) {
    ObjectNode body = Wire.MAPPER.createObjectNode().put("data", data);
    if (eof) {
      body.put("eof", true);
    }
    postStdin(processId, body, "writeStdin " + processId);
  }

  /** Raw bytes to a process's stdin (a terminal's input), base64 on the wire. */
  void writeStdin(String processId, byte[] bytes, String what) {
    postStdin(processId, Wire.MAPPER.createObjectNode().put("data", Base64.getEncoder().encodeToString(bytes))
        .put("encoding", "base64"), what);
  }

  private void postStdin(String processId, ObjectNode body, String what) {
    call(post(processUrl(processId).newBuilder().addPathSegment("stdin").build(), body), what);
  }

  /** The agent's published limits ({@code /api/version}), fetched once and only when needed. */
  private JsonNode limits() {
    JsonNode l = limits;
    if (l == null) {
      l = call(get(url("api", "version")), "version").path("limits");
      limits = l;
    }
    return l;
  }

  @Override
  public dev.sandboxsdk.SandboxFiles files() {
    return files;
  }

  @Override
  public dev.sandboxsdk.SandboxPorts ports() {
    return ports;
  }

  /** {@link RealSandboxProcess#waitForPort}: fails as soon as the process ends. */
  void waitForPort(int port, dev.sandboxsdk.PortWaitOptions options, String processId) {
    ports.await(port, options, processId);
  }

  @Override
  public dev.sandboxsdk.SandboxGit git() {
    return git;
  }

  @Override
  public dev.sandboxsdk.SandboxCheckpoints checkpoints() {
    return checkpoints;
  }

  @Override
  public dev.sandboxsdk.SandboxTerminals terminals() {
    return terminals;
  }

  // ---- lifecycle

  @Override
  public void destroy() {
    if (closedReason != null) {
      return;
    }
    try {
      killAllProcesses();
      cleanupCompletedProcesses();
    } finally {
      close();
    }
  }

  @Override
  public void close() {
    closeWith("the sandbox was closed");
  }

  /** Closes with a reason that later calls report. */
  public void closeWith(String reason) {
    synchronized (this) {
      if (closedReason != null) {
        return;
      }
      closedReason = reason;
    }
    for (EventCursor<?> c : cursors) {
      c.close();
    }
    for (Call c : calls) {
      c.cancel();
    }
    executor.shutdown(); // running stream readers end as their connections are cancelled
    if (ownsPool) {
      client.connectionPool().evictAll();
    }
    log.debug("closed sandbox client for {}", base);
  }

  public boolean isClosed() {
    return closedReason != null;
  }

  java.util.concurrent.Executor executor() {
    return executor;
  }

  // ---- plumbing

  void ensureOpen() {
    String reason = closedReason;
    if (reason != null) {
      throw new IllegalStateException(reason);
    }
  }

  private Duration timeoutOf(ExecOptions options) {
    return options.timeout() != null ? options.timeout() : execTimeout;
  }

  HttpUrl url(String... segments) {
    HttpUrl.Builder b = base.newBuilder();
    for (String s : segments) {
      b.addPathSegment(s);
    }
    return b.build();
  }

  HttpUrl processUrl(String processId) {
    checkId(processId);
    return url("api", "process").newBuilder().addPathSegment(processId).build();
  }

  /** Rejects ids the agent cannot have given out, which could address another endpoint ({@code ..}, {@code list}). */
  private static void checkId(String processId) {
    Objects.requireNonNull(processId, "processId == null");
    if (!Checks.isProcessId(processId)) {
      throw new IllegalArgumentException("not a valid process id: '" + processId + "' (ids match "
          + Checks.PROCESS_ID_RULE + ")");
    }
  }

  Request post(HttpUrl url, JsonNode body) {
    return new Request.Builder().url(url).header("Authorization", authorization)
        .post(RequestBody.create(Wire.bytes(body), JSON)).build();
  }

  Request get(HttpUrl url) {
    return new Request.Builder().url(url).header("Authorization", authorization).get().build();
  }

  Request delete(HttpUrl url) {
    return new Request.Builder().url(url).header("Authorization", authorization).delete().build();
  }

  /** A call whose answer may take {@code minimum} to come (the agent works that long before it answers). */
  JsonNode callWaitingAtLeast(Request request, String what, Duration minimum) {
    return call(readingAtLeast(minimum), request, what);
  }

  JsonNode call(Request request, String what) {
    return call(client, request, what);
  }

  private JsonNode call(OkHttpClient c, Request request, String what) {
    return call(c, request, what, MAX_ANSWER_BYTES);
  }

  private JsonNode call(OkHttpClient c, Request request, String what, long maxAnswerBytes) {
    ensureOpen();
    activity.begin();
    try {
      return execute(c.newCall(request), what, maxAnswerBytes);
    } finally {
      activity.end();
    }
  }

  /**
   * The most an exec answer can be: both streams at the output limit, every byte a control
   * character. The limit is the call's {@code maxOutputBytes}, else the agent's published default
   * if it was fetched, else its documented default.
   */
  private long execAnswerLimit(ExecOptions options) {
    return answerLimit(options.maxOutputBytes() > 0 ? options.maxOutputBytes()
        : publishedLimit("defaultMaxOutputBytes", AGENT_DEFAULT_MAX_OUTPUT_BYTES));
  }

  /** A limit the agent published in /api/version if this client fetched it already (never fetched here). */
  private long publishedLimit(String name, long documentedDefault) {
    JsonNode l = limits;
    long v = l == null ? 0 : l.path(name).asLong(0);
    return v > 0 ? v : documentedDefault;
  }

  /** The most a JSON answer with up to {@code perStreamBytes} of each output stream can be. */
  static long answerLimit(long perStreamBytes) {
    long output = 2 * JSON_BYTES_PER_OUTPUT_BYTE * perStreamBytes;
    return Math.min(Integer.MAX_VALUE - 16, Math.max(MAX_ANSWER_BYTES, output + (1 << 20)));
  }

  /** Runs a call on this thread and returns its JSON body, mapping every failure. */
  private JsonNode execute(Call call, String what, long maxAnswerBytes) {
    calls.add(call);
    try (Response response = call.execute()) {
      return readJson(call, response, what, maxAnswerBytes);
    } catch (InterruptedIOException e) {
      boolean timeout = e instanceof java.net.SocketTimeoutException || "timeout".equals(e.getMessage());
      if (closedReason != null && !timeout) {
        throw closedError(e);
      }
      if (!timeout && Thread.currentThread().isInterrupted()) {
        throw new SandboxException(what + ": interrupted", e); // the flag stays set
      }
      throw ErrorMapper.fromIo(e, what);
    } catch (IOException e) {
      throw closedReason != null ? closedError(e) : ErrorMapper.fromIo(e, what);
    } finally {
      calls.remove(call);
    }
  }

  private JsonNode readJson(Call call, Response response, String what, long maxAnswerBytes) throws IOException {
    ResponseBody body = response.body();
    String restarted = restartNote(response);
    if (!response.isSuccessful()) {
      throw ErrorMapper.fromResponse(response.code(), boundedBytes(body), restarted);
    }
    return Wire.parse(bodyAtMost(call, body, maxAnswerBytes, what), "answer to " + what);
  }

  /**
   * Learns the stream liveness window from an answer's keep-alive header, unless it is configured
   * or known already: then an {@code exec} reads with it from the start, not with the 31 s a client
   * that never asked {@code /api/version} would otherwise use.
   */
  private void learnKeepAlive(Response response) {
    if (streamIdle != null || configuredStreamIdle != null) {
      return;
    }
    String header = response.header(KEEP_ALIVE_HEADER);
    if (header == null) {
      return;
    }
    try {
      long keepAlive = Long.parseLong(header.strip());
      if (keepAlive >= 1 && keepAlive <= MAX_KEEP_ALIVE_MS) {
        streamIdle = Duration.ofMillis(2 * keepAlive + 1000);
      }
    } catch (NumberFormatException ignored) {
      // not ours to judge: /api/version still tells
    }
  }

  /**
   * An {@code exec} answer's body is heartbeats and the result: once its headers name the window,
   * read the rest with it, even if the call was started with the 31 s of a client that did not
   * know it yet (its first call). Only ever shortens: the socket's own timeout stays the bound.
   */
  private void readExecBodyWithWindow(Response response) {
    learnKeepAlive(response);
    Duration window = streamIdle;
    ResponseBody body = response.body();
    if (window != null && body != null) {
      body.source().timeout().timeout(window.toMillis(), TimeUnit.MILLISECONDS);
    }
  }

  /**
   * Remembers the agent's boot id from the first answer that carries one; for a later answer
   * with another id, a note that the agent was restarted since, which error messages carry: an
   * unknown process or a rejected token after a restart is then not a mystery. Null when the
   * id is absent (an agent without the extension) or unchanged.
   */
  String restartNote(Response response) {
    learnKeepAlive(response);
    String id = response.header(BOOT_ID_HEADER);
    if (id == null) {
      return null;
    }
    String first = firstBootId;
    if (first == null) {
      synchronized (this) {
        if (firstBootId == null) {
          firstBootId = id;
        }
        first = firstBootId;
      }
    }
    if (first.equals(id)) {
      return null;
    }
    return "the agent at " + base + " was restarted since this client first reached it (boot id " + first
        + ", now " + id + "): processes, their handles and log streams from before the restart are gone";
  }

  /**
   * The whole body, unless it is longer than {@code max}: then it stops reading (what is read
   * stays below {@code max} plus one buffer) and throws, instead of holding whatever a broken or
   * hostile agent sends.
   */
  private static byte[] bodyAtMost(Call call, ResponseBody body, long max, String what) throws IOException {
    long declared = body.contentLength();
    okio.BufferedSource source = body.source();
    if (declared > max || source.request(max + 1)) {
      // Cancel, so that closing the response drops the connection instead of OkHttp reading on
      // for up to 100 ms to reuse it (at loopback speed another 100+ MB of the agent's answer).
      call.cancel();
      throw new SandboxException("the answer to " + what + " is longer than " + max + " bytes, more than the"
          + " output limits allow; stopped reading it to keep memory bounded", null);
    }
    return source.getBuffer().readByteArray();
  }

  static byte[] boundedBytes(ResponseBody body) throws IOException {
    okio.BufferedSource source = body.source();
    source.request(MAX_ERROR_BODY_BYTES);
    return source.getBuffer().readByteArray(Math.min(source.getBuffer().size(), MAX_ERROR_BODY_BYTES));
  }

  <T> SseCursor<T> openStream(Request request, String what, java.util.function.Function<JsonNode, T> mapper,
      java.util.function.Predicate<T> isFinal, Abort abort) {
    return openEventStream(request, what, (json, from, to) -> mapper.apply(Wire.parse(json, from, to, "event")), isFinal,
        abort);
  }

  /** Like {@link #openStream}, for a mapper that reads each event's JSON bytes itself. */
  <T> SseCursor<T> openEventStream(Request request, String what, SseCursor.Mapper<T> mapper,
      java.util.function.Predicate<T> isFinal, Abort abort) {
    return openEventStream(request, what, mapper, isFinal, abort, false);
  }

  /**
   * @param startsCommand whether the agent answers only once it has started a command, which a
   *     loaded agent may queue: the wait for the answer then gets {@code readTimeout} if longer
   *     than the window (a log stream's answer comes at once, and keeps the window)
   */
  private <T> SseCursor<T> openEventStream(Request request, String what, SseCursor.Mapper<T> mapper,
      java.util.function.Predicate<T> isFinal, Abort abort, boolean startsCommand) {
    ensureOpen();
    request = request.newBuilder().header("Accept", "text/event-stream").build();
    Duration idle = streamIdleTimeout();
    // Streams wait exactly the liveness window, shorter or longer than readTimeout; the IdleWatch
    // keeps it instead of okio's per-read timeout (see there why).
    Call call = withReadTimeout(Duration.ZERO).newCall(request);
    IdleWatch watch = new IdleWatch(idle.toNanos(), startsCommand ? readTimeout.toNanos() : idle.toNanos(), call::cancel);
    activity.begin();
    calls.add(call);
    abort.onAbort(call::cancel);
    Response response = null;
    watch.beforeRead();
    try {
      response = call.execute();
      String restarted = restartNote(response);
      if (!response.isSuccessful()) {
        throw ErrorMapper.fromResponse(response.code(), boundedBytes(response.body()), restarted);
      }
      String type = response.header("Content-Type", "");
      if (!type.startsWith("text/event-stream")) {
        throw Wire.malformed("answer to " + what, "expected text/event-stream, got '" + type + "'");
      }
      SseCursor<T>[] self = new SseCursor[1];
      Response r = response;
      watch.afterRead();
      self[0] = new SseCursor<>(call, r, MAX_EVENT_LINE_BYTES, mapper, isFinal, what, idle, watch, () -> {
        calls.remove(call);
        cursors.remove(self[0]);
        activity.end();
      });
      cursors.add(self[0]);
      if (closedReason != null) {
        self[0].close();
        ensureOpen();
      }
      return self[0];
    } catch (IOException | RuntimeException e) {
      watch.close();
      calls.remove(call);
      activity.end();
      if (response != null) {
        response.close();
      }
      if (e instanceof IOException && watch.expired() && closedReason == null) {
        throw new dev.sandboxsdk.SandboxTimeoutException(what + ": the agent did not answer within "
            + idle.toMillis() + " ms (the stream's liveness window)", e);
      }
      if (e instanceof IOException) {
        throw closedReason != null ? closedError(e) : ErrorMapper.fromIo((IOException) e, what);
      }
      throw (RuntimeException) e;
    }
  }

  /**
   * The client for {@code POST /api/execute}: a long command sends nothing but heartbeat bytes
   * (one per keep-alive interval), so each read of the body waits exactly the stream liveness
   * window, whatever {@code readTimeout} the caller chose for ordinary calls: shorter would fail a
   * quiet command, longer would leave a stopped agent unnoticed for longer than a stream does. The
   * wait for the headers gets {@code readTimeout} if that is longer. When the
   * window is not known yet (not configured, and {@code /api/version} not fetched) this uses the
   * largest the protocol allows (keep-alive at most 15 s: 31 s) rather than asking
   * {@code /api/version} on the caller's thread.
   */
  private OkHttpClient execClient() {
    Duration known = streamIdle != null ? streamIdle : configuredStreamIdle;
    Duration window = known != null ? known : Duration.ofMillis(2 * MAX_KEEP_ALIVE_MS + 1000);
    // Until the headers, readTimeout if longer (a loaded agent may queue the command's start);
    // readExecBodyWithWindow then reads the heartbeats with the window.
    return withReadTimeout(window.compareTo(readTimeout) < 0 ? readTimeout : window);
  }

  /** The client, or one that waits at least {@code minimum} for each read. */
  private OkHttpClient readingAtLeast(Duration minimum) {
    return minimum.compareTo(readTimeout) <= 0 ? client : withReadTimeout(minimum);
  }

  /** A client like {@link #client} with this read timeout, made once per distinct timeout. */
  private OkHttpClient withReadTimeout(Duration timeout) {
    if (timeout.equals(readTimeout)) {
      return client;
    }
    return byReadTimeout.computeIfAbsent(timeout, t -> client.newBuilder().readTimeout(t).build());
  }

  /**
   * How long a stream (or an {@code exec} between heartbeats) may be silent: configured, or
   * derived from the agent's keep-alive interval, which the first call fetches from
   * {@code /api/version} on the calling thread.
   *
   * @throws dev.sandboxsdk.SandboxException if the window must be fetched and that fails
   */
  public Duration streamIdleTimeout() {
    Duration d = streamIdle;
    if (d == null) {
      if (configuredStreamIdle != null) {
        d = configuredStreamIdle;
      } else {
        long keepAlive = limits().path("keepAliveMs").asLong(15_000);
        d = Duration.ofMillis(2 * keepAlive + 1000);
      }
      streamIdle = d;
    }
    return d;
  }

  Throwable streamError(Throwable t, String what) {
    if (closedReason != null && !(t instanceof IllegalStateException)) {
      return closedError(t);
    }
    return EventPublisher.defaultError(t, what);
  }

  SandboxException closedError(Throwable cause) {
    return new SandboxConnectionException(closedReason + " while the call was in flight", cause);
  }

  /** Collects output up to a byte limit; counts the agent's raw byte numbers. */
  private static final class OutputCollector {
    private final StringBuilder text = new StringBuilder();
    private final long max;
    private long bytes;
    private long written; // everything the command wrote, by the agent's count
    private boolean truncated;

    OutputCollector(long max) {
      this.max = max;
    }

    void add(String chunk, long agentBytes) {
      written += Math.max(agentBytes, 0);
      if (truncated) {
        return;
      }
      // Honest text never has more chars than the raw bytes it came from; an agent that says
      // otherwise is held to the text it really sent.
      long chunkBytes = Math.max(agentBytes, chunk.length());
      if (bytes + chunkBytes <= max) {
        text.append(chunk);
        bytes += chunkBytes;
        return;
      }
      // Keep the code points that fit, then stop collecting.
      long room = max - bytes;
      int i = 0;
      while (i < chunk.length()) {
        int cp = chunk.codePointAt(i);
        int len = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        if (len > room) {
          break;
        }
        room -= len;
        i += Character.charCount(cp);
      }
      text.append(chunk, 0, i);
      truncated = true;
    }

    String text() {
      return text.toString();
    }

    long written() {
      return written;
    }

    boolean truncated() {
      return truncated;
    }
  }

  /** A future whose cancel also aborts the work behind it (the HTTP call or stream). */
  static final class CancellableFuture<T> extends CompletableFuture<T> {
    private final List<Runnable> onCancel = new java.util.concurrent.CopyOnWriteArrayList<>();

    void onCancel(Runnable action) {
      onCancel.add(action);
      if (isCancelled()) {
        action.run();
      }
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      boolean cancelled = super.cancel(mayInterruptIfRunning);
      if (cancelled) {
        onCancel.forEach(Runnable::run);
      }
      return cancelled;
    }
  }
}
