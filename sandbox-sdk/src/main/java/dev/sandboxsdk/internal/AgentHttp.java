package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.SandboxConnectionException;
import dev.sandboxsdk.SandboxException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import okhttp3.Call;
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
import okio.BufferedSource;

/**
 * The HTTP side of a {@link RealSandbox}: owns the OkHttp client and its threads, builds requests
 * to the agent (URL and token), sends them and maps every failure to an exception, bounds what it
 * reads of an answer, and picks read timeouts (the first wait for an answer, the stream liveness
 * window learned from the agent). It also holds what closing must stop: the calls and streams in
 * flight, and the reason the sandbox was closed. Thread-safe: all mutable state is in concurrent
 * collections, atomics and volatile fields.
 */
final class AgentHttp {
  private static final MediaType JSON = MediaType.get("application/json; charset=utf-8");
  private static final long MAX_ERROR_BODY_BYTES = 64 << 10;
  /** The most a JSON answer may be that carries no command output (a process list, a kill, the version). */
  private static final long MAX_ANSWER_BYTES = 64L << 20;
  /** JSON text of one output byte at worst: a control character becomes six (backslash, u, four hex digits). */
  private static final long JSON_BYTES_PER_OUTPUT_BYTE = 6;
  private static final AtomicInteger CLIENT_IDS = new AtomicInteger();
  /** The agent's id of its current run, on every answer (our extension of protocol v1). */
  static final String BOOT_ID_HEADER = "Sandbox-Boot-Id";
  /** The longest keep-alive interval protocol v1 allows an agent (docs/protocol/events.md). */
  private static final long MAX_KEEP_ALIVE_MS = 15_000;
  /** The agent's keep-alive interval in ms, on every answer of agents that have the extension. */
  static final String KEEP_ALIVE_HEADER = "Sandbox-Keep-Alive-Ms";

  private final HttpUrl base;
  private final String authorization;
  final OkHttpClient client;
  /** Clients derived from {@link #client} with another read timeout; they share its pool and dispatcher. */
  private final ConcurrentHashMap<Duration, OkHttpClient> byReadTimeout = new ConcurrentHashMap<>();
  private final boolean ownsPool;
  private final ExecutorService executor;
  private final Duration readTimeout;
  private final Duration configuredStreamIdle;
  private volatile Duration streamIdle;
  private volatile JsonNode limits;
  final Activity activity;
  final Set<Call> calls = ConcurrentHashMap.newKeySet();
  private final Set<EventCursor<?>> cursors = ConcurrentHashMap.newKeySet();
  private volatile String closedReason;
  /** The boot id in the first answer that carried one; never replaced. */
  private volatile String firstBootId;

  AgentHttp(URI baseUrl, String token, Duration connectTimeout, Duration readTimeout, Duration streamIdleTimeout,
      OkHttpClient shared, Activity activity) {
    HttpUrl url = HttpUrl.get(baseUrl.toString());
    if (url == null) {
      throw new IllegalArgumentException("baseUrl must be an http or https URL: " + baseUrl);
    }
    if (token.isBlank() || token.chars().anyMatch(c -> c < 0x20 || c > 0x7e)) {
      throw new IllegalArgumentException("token must be non-blank printable ASCII");
    }
    this.base = url;
    this.authorization = "Bearer " + token.strip();
    this.readTimeout = readTimeout;
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

  HttpUrl base() {
    return base;
  }

  Executor executor() {
    return executor;
  }

  /** The read timeout of ordinary calls. */
  Duration readTimeout() {
    return readTimeout;
  }

  // ---- closing

  /**
   * Records the reason and stops everything in flight: streams, calls, the threads. Returns
   * false, doing nothing, if it was closed already.
   */
  boolean close(String reason) {
    synchronized (this) {
      if (closedReason != null) {
        return false;
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
    return true;
  }

  boolean isClosed() {
    return closedReason != null;
  }

  void ensureOpen() {
    String reason = closedReason;
    if (reason != null) {
      throw new IllegalStateException(reason);
    }
  }

  /**
   * Counts a cursor among what {@link #close} closes; if the sandbox is closed already, closes it
   * and throws.
   */
  <C extends EventCursor<?>> C track(C cursor) {
    cursors.add(cursor);
    if (closedReason != null) {
      cursor.close();
      ensureOpen();
    }
    return cursor;
  }

  void untrack(EventCursor<?> cursor) {
    cursors.remove(cursor);
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

  /** An I/O failure of a call: the closed sandbox if it was closed meanwhile, else mapped. */
  SandboxException ioError(IOException e, String what) {
    return closedReason != null ? closedError(e) : ErrorMapper.fromIo(e, what);
  }

  // ---- requests

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
  static void checkId(String processId) {
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

  Request put(HttpUrl url, JsonNode body) {
    return new Request.Builder().url(url).header("Authorization", authorization)
        .put(RequestBody.create(Wire.bytes(body), JSON)).build();
  }

  Request get(HttpUrl url) {
    return new Request.Builder().url(url).header("Authorization", authorization).get().build();
  }

  Request delete(HttpUrl url) {
    return new Request.Builder().url(url).header("Authorization", authorization).delete().build();
  }

  // ---- calls with a JSON answer

  /** A call whose answer may take {@code minimum} to come (the agent works that long before it answers). */
  JsonNode callWaitingAtLeast(Request request, String what, Duration minimum) {
    return call(readingAtLeast(minimum), request, what);
  }

  JsonNode call(Request request, String what) {
    return call(client, request, what);
  }

  JsonNode call(OkHttpClient c, Request request, String what) {
    return call(c, request, what, MAX_ANSWER_BYTES);
  }

  JsonNode call(OkHttpClient c, Request request, String what, long maxAnswerBytes) {
    ensureOpen();
    activity.begin();
    try {
      return execute(c.newCall(request), what, maxAnswerBytes);
    } finally {
      activity.end();
    }
  }

  /**
   * {@link #call(Request, String)} for a call that another thread may cancel: {@code onCall} gets
   * the call before it is sent (a poll that a cancelled subscription must not wait out).
   */
  JsonNode call(Request request, String what, java.util.function.Consumer<Call> onCall) {
    ensureOpen();
    activity.begin();
    try {
      Call call = client.newCall(request);
      onCall.accept(call);
      return execute(call, what, MAX_ANSWER_BYTES);
    } finally {
      activity.end();
    }
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

  /** A limit the agent published in /api/version if this client fetched it already (never fetched here). */
  long publishedLimit(String name, long documentedDefault) {
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
      boolean timeout = e instanceof SocketTimeoutException || "timeout".equals(e.getMessage());
      if (closedReason != null && !timeout) {
        throw closedError(e);
      }
      if (!timeout && Thread.currentThread().isInterrupted()) {
        throw new SandboxException(what + ": interrupted", e); // the flag stays set
      }
      throw ErrorMapper.fromIo(e, what);
    } catch (IOException e) {
      throw ioError(e, what);
    } finally {
      calls.remove(call);
    }
  }

  JsonNode readJson(Call call, Response response, String what, long maxAnswerBytes) throws IOException {
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
  void readExecBodyWithWindow(Response response) {
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
    BufferedSource source = body.source();
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
    BufferedSource source = body.source();
    source.request(MAX_ERROR_BODY_BYTES);
    return source.getBuffer().readByteArray(Math.min(source.getBuffer().size(), MAX_ERROR_BODY_BYTES));
  }

  // ---- read timeouts

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
  OkHttpClient execClient() {
    Duration known = streamIdle != null ? streamIdle : configuredStreamIdle;
    Duration window = known != null ? known : Duration.ofMillis(2 * MAX_KEEP_ALIVE_MS + 1000);
    // Until the headers, readTimeout if longer (a loaded agent may queue the command's start);
    // readExecBodyWithWindow then reads the heartbeats with the window.
    return withReadTimeout(window.compareTo(readTimeout) < 0 ? readTimeout : window);
  }

  /** The client, or one that waits at least {@code minimum} for each read. */
  OkHttpClient readingAtLeast(Duration minimum) {
    return minimum.compareTo(readTimeout) <= 0 ? client : withReadTimeout(minimum);
  }

  /** A client like {@link #client} with this read timeout, made once per distinct timeout. */
  OkHttpClient withReadTimeout(Duration timeout) {
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
   * @throws SandboxException if the window must be fetched and that fails
   */
  Duration streamIdleTimeout() {
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
}
