package dev.sandboxsdk.agent.http;

import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.fs.PathErrors;
import dev.sandboxsdk.agent.process.ManagedProcess;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * POST /api/port-watch: Cloudflare's port watch, an event stream that ends with {@code ready} once
 * a port in the sandbox accepts connections (tcp) or answers an HTTP GET with a status in range
 * (http), with {@code process_exited} when the watched background process ends first, or with
 * {@code error}.
 *
 * <p>The check runs where the sandbox's servers listen. Without isolation, or with the network on,
 * that is the agent's own network namespace and the agent connects itself. An isolated agent
 * without network keeps its commands in a namespace of their own, which the agent's JVM cannot
 * enter: there every check is a short bash process started the way commands are started (nsenter
 * into that namespace, bubblewrap, the command user), bounded by the agent's timeout, and given
 * the port and path as arguments, never as shell text.
 */
final class PortEndpoints {
  private static final Logger log = LoggerFactory.getLogger(PortEndpoints.class);
  /** Cloudflare's defaults and bounds. */
  static final long DEFAULT_INTERVAL_MS = 500;
  static final long MIN_INTERVAL_MS = 100;
  static final long MAX_INTERVAL_MS = 10_000;
  static final int DEFAULT_STATUS_MIN = 200;
  static final int DEFAULT_STATUS_MAX = 399;
  /** How long one check may take (Cloudflare's 5 s), less when the watch's deadline is nearer. */
  static final long CHECK_TIMEOUT_MS = 5_000;
  /** The longest {@code timeoutMs} accepted: one day. */
  static final long MAX_TIMEOUT_MS = 24L * 60 * 60 * 1000;
  /** Printable ASCII without space: the path goes into a request line, so no CR, LF or blanks. */
  private static final Pattern PATH = Pattern.compile("/[\\x21-\\x7e]{0,2047}");
  private static final Set<String> FIELDS = Set.of("port", "mode", "path", "statusMin", "statusMax", "processId",
      "interval", "timeoutMs", "sessionId");
  /**
   * The in-sandbox check: connect to the port on 127.0.0.1 (else ::1); in http mode send a GET for
   * {@code $2} and print the status code of the answer. Exit 3: no connection; 4: no status line.
   */
  static final String PROBE_SCRIPT = "{ exec 3<>\"/dev/tcp/127.0.0.1/$1\"; } 2>/dev/null"
      + " || { exec 3<>\"/dev/tcp/::1/$1\"; } 2>/dev/null || exit 3\n"
      + "[ -z \"$2\" ] && exit 0\n"
      // The request goes out in one write (coreutils' printf; bash's builtin writes line by line):
      // a server that answers after the first line and closes would otherwise reset the
      // connection under a later write (SIGPIPE, and no status read).
      + "printf -v req 'GET %s HTTP/1.0\\r\\nHost: localhost:%s\\r\\nUser-Agent: sandbox-agent-port-watch\\r\\n"
      + "Connection: close\\r\\n\\r\\n' \"$2\" \"$1\"\n"
      + "env printf '%s' \"$req\" >&3\n"
      + "IFS=' ' read -r version status rest <&3 || exit 4\n"
      + "printf '%s' \"$status\"\n";

  private final ProcessManager processes;
  private final AgentConfig config;

  PortEndpoints(ProcessManager processes) {
    this.processes = processes;
    this.config = processes.config();
  }

  /** A validated watch request. */
  record Watch(int port, boolean http, String path, int statusMin, int statusMax, ManagedProcess process,
      long intervalMs, Long timeoutMs) {
  }

  /** The result of one check. */
  record Check(boolean ready, Integer statusCode, String reason) {
  }

  /** Registers the port watch. */
  void register(Routes routes) {
    routes.on("POST", "/api/port-watch", this::watch);
  }

  void watch(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Watch w = parse(Json.read(exchange, config.maxBodyBytes(), processes.outputBudget()).allowOnly(FIELDS));
    SseWriter sse = SseWriter.open(exchange);
    try {
      run(w, sse);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IOException e) {
      log.debug("port-watch client of port {} went away: {}", w.port(), e.toString());
    } catch (AgentException e) {
      // A check could not be started (e.g. TOO_MANY_PROCESSES on an isolated agent): say why.
      PortMessages.ErrorEvent error = new PortMessages.ErrorEvent(w.port(), e.getMessage(), e.code().name());
      try {
        sse.send(error);
      } catch (IOException ignored) {
        // the client is gone as well
      }
    } catch (RuntimeException e) {
      PortMessages.ErrorEvent error = new PortMessages.ErrorEvent(w.port(),
          "the agent failed while watching: " + e.getClass().getSimpleName(), "INTERNAL_ERROR");
      try {
        sse.send(error);
      } catch (IOException ignored) {
        // the client is gone as well
      }
      throw e;
    } finally {
      sse.close();
    }
  }

  Watch parse(Json body) {
    Long port = body.integer("port", 1, 65535);
    if (port == null) {
      throw AgentException.invalid("port", "'port' is required (1 to 65535)");
    }
    String mode = body.string("mode");
    boolean http;
    if (mode == null || mode.equals("http")) {
      http = true;
    } else if (mode.equals("tcp")) {
      http = false;
    } else {
      throw AgentException.invalid("mode", "'mode' must be 'http' or 'tcp', got '" + PathErrors.shorten(mode) + "'");
    }
    // In tcp mode 'path' (like the status range) is checked and then not used: Cloudflare's waitForPort
    // sends path "/" and the range with every mode, and its container ignores them for tcp.
    String path = body.string("path");
    if (path == null || path.isEmpty()) {
      path = "/";
    } else if (!path.startsWith("/")) {
      path = "/" + path; // as Cloudflare does
    }
    if (!PATH.matcher(path).matches()) {
      throw AgentException.invalid("path", "'path' must be at most 2048 printable ASCII characters without spaces"
          + " (percent-encode the rest)");
    }
    Long min = body.integer("statusMin", 100, 599);
    Long max = body.integer("statusMax", 100, 599);
    int statusMin = min == null ? DEFAULT_STATUS_MIN : min.intValue();
    int statusMax = max == null ? Math.max(DEFAULT_STATUS_MAX, statusMin) : max.intValue();
    if (statusMin > statusMax) {
      throw AgentException.invalid("statusMin", "'statusMin' (" + statusMin + ") is above 'statusMax' (" + statusMax + ")");
    }
    Long interval = body.integer("interval", 0, Long.MAX_VALUE);
    long intervalMs = interval == null ? DEFAULT_INTERVAL_MS : Math.max(MIN_INTERVAL_MS, Math.min(interval, MAX_INTERVAL_MS));
    Long timeoutMs = body.integer("timeoutMs", 1, MAX_TIMEOUT_MS);
    body.string("sessionId"); // accepted for Cloudflare's clients; there are no sessions here
    String processId = body.string("processId");
    ManagedProcess p = processId == null ? null : processes.require(processId);
    return new Watch(port.intValue(), http, path, statusMin, statusMax, p, intervalMs, timeoutMs);
  }

  private void run(Watch w, SseWriter sse) throws IOException, InterruptedException {
    sse.send(new PortMessages.WatchingEvent(w.port()));
    long start = System.nanoTime();
    long keepAliveNanos = TimeUnit.MILLISECONDS.toNanos(config.keepAliveMs());
    String lastReason = null;
    while (true) {
      if (w.process() != null && w.process().isFinished()) {
        sse.send(exited(w));
        return;
      }
      long leftMs = w.timeoutMs() == null ? Long.MAX_VALUE
          : w.timeoutMs() - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      if (leftMs <= 0) {
        sse.send(timedOut(w, lastReason));
        return;
      }
      long checkMs = Math.max(100, Math.min(CHECK_TIMEOUT_MS, leftMs));
      long checkStart = System.nanoTime();
      Check c = check(w, checkMs);
      if (c.ready()) {
        sse.send(new PortMessages.ReadyEvent(w.port(), c.statusCode()));
        return;
      }
      // A check the watch's own deadline cut short says nothing new about the port: the timeout
      // then reports the last check that finished (e.g. the status that was out of range).
      boolean cutShort = checkMs < CHECK_TIMEOUT_MS
          && TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - checkStart) >= checkMs;
      if (lastReason == null || !cutShort) {
        lastReason = c.reason();
      }
      if (!sse.keepAliveIfIdle(keepAliveNanos)) {
        return; // the client went away
      }
      long waitMs = w.intervalMs();
      if (w.timeoutMs() != null) {
        long left = w.timeoutMs() - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        waitMs = Math.max(0, Math.min(waitMs, left));
      }
      pause(w, waitMs);
    }
  }

  /** Waits for the next round; a watched process that ends cuts the wait short. */
  private static void pause(Watch w, long ms) throws InterruptedException {
    if (ms <= 0) {
      return;
    }
    if (w.process() == null) {
      Thread.sleep(ms);
      return;
    }
    try {
      w.process().finished().get(ms, TimeUnit.MILLISECONDS);
    } catch (TimeoutException | ExecutionException e) {
      // the interval passed first: check again
    }
  }

  private static PortMessages.ExitedEvent exited(Watch w) {
    ManagedProcess.Snapshot s = w.process().snapshot();
    return new PortMessages.ExitedEvent(w.port(), s.exitCode(), s.id(), s.status().wireName(),
        s.signal() == null ? null : s.signal().name());
  }

  private static PortMessages.ErrorEvent timedOut(Watch w, String lastReason) {
    return new PortMessages.ErrorEvent(w.port(), "port " + w.port() + " was not ready within " + w.timeoutMs() + " ms"
        + (lastReason == null ? "" : " (last check: " + lastReason + ")"), "TIMEOUT");
  }

  /** One check, where the sandbox's servers are. */
  Check check(Watch w, long timeoutMs) throws InterruptedException {
    Integer status;
    if (processes.network()) {
      status = checkHere(w, timeoutMs);
    } else {
      status = checkInSandbox(w, timeoutMs);
    }
    if (status == null) {
      return new Check(false, null, "connection refused or timed out");
    }
    if (!w.http()) {
      return new Check(true, null, null);
    }
    if (status < 0) {
      return new Check(false, null, "no HTTP status line in the answer");
    }
    boolean ready = status >= w.statusMin() && status <= w.statusMax();
    return new Check(ready, status, ready ? null
        : "HTTP status " + status + " not in expected range " + w.statusMin() + "-" + w.statusMax());
  }

  /**
   * From the agent's JVM: null if nothing accepts a connection, else 0 in tcp mode, and in http
   * mode the status code of the answer, or -1 if it is not HTTP.
   */
  private static Integer checkHere(Watch w, long timeoutMs) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    for (InetAddress host : List.of(InetAddress.getLoopbackAddress(), loopback6())) {
      if (host == null) {
        continue;
      }
      long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (left <= 0) {
        return null;
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(host, w.port()), (int) Math.max(1, left));
        if (!w.http()) {
          return 0;
        }
        s.setSoTimeout((int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
        OutputStream out = s.getOutputStream();
        out.write(("GET " + w.path() + " HTTP/1.0\r\nHost: localhost:" + w.port()
            + "\r\nUser-Agent: sandbox-agent-port-watch\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.flush();
        return statusOf(readLine(s.getInputStream()));
      } catch (IOException e) {
        // refused, reset or timed out: try the next address, else not ready
      }
    }
    return null;
  }

  private static InetAddress loopback6() {
    try {
      return InetAddress.getByName("::1");
    } catch (IOException e) {
      return null;
    }
  }

  /** The first line of an answer, up to 1 KiB. */
  private static String readLine(InputStream in) throws IOException {
    StringBuilder line = new StringBuilder();
    int c;
    while (line.length() < 1024 && (c = in.read()) != -1 && c != '\n') {
      line.append((char) c);
    }
    return line.toString();
  }

  /** The status code of an HTTP status line, or -1. */
  static int statusOf(String line) {
    String[] parts = line.trim().split(" ", 3);
    if (parts.length < 2 || !parts[0].toUpperCase(Locale.ROOT).startsWith("HTTP/") || !parts[1].matches("[1-5][0-9][0-9]")) {
      return -1;
    }
    return Integer.parseInt(parts[1]);
  }

  /** The same, from a short process inside the sandbox's network namespace. */
  private Integer checkInSandbox(Watch w, long timeoutMs) throws InterruptedException {
    List<String> argv = w.http()
        ? List.of("bash", "-c", PROBE_SCRIPT, "port-watch", Integer.toString(w.port()), w.path())
        : List.of("bash", "-c", PROBE_SCRIPT, "port-watch", Integer.toString(w.port()));
    InternalCommand.Outcome o = InternalCommand.run(processes, argv, Map.of(), null, timeoutMs, 1024);
    if (o.timedOut() || o.exitCode() == 3 || o.exitCode() > 128) {
      return null; // refused, or the probe was killed before it had an answer
    }
    if (o.exitCode() != 0) {
      return w.http() ? -1 : null;
    }
    return w.http() ? statusOf("HTTP/1.0 " + o.stdout().trim()) : 0;
  }
}
