package dev.sandboxsdk.agent.ports;

import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.fs.PathErrors;
import dev.sandboxsdk.agent.http.Json;
import dev.sandboxsdk.agent.http.Query;
import dev.sandboxsdk.agent.http.Routes;
import dev.sandboxsdk.agent.http.SseWriter;
import dev.sandboxsdk.agent.ports.PortChecks.Check;
import dev.sandboxsdk.agent.ports.PortChecks.Watch;
import dev.sandboxsdk.agent.process.ManagedProcess;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.IOException;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * POST /api/port-watch: Cloudflare's port watch, an event stream that ends with {@code ready} once
 * a port in the sandbox accepts connections (tcp) or answers an HTTP GET with a status in range
 * (http), with {@code process_exited} when the watched background process ends first, or with
 * {@code error}. Each round's check is {@link PortChecks}'; this class parses the request and
 * writes the events.
 */
public final class PortWatchRoutes {
  private static final Logger log = LoggerFactory.getLogger(PortWatchRoutes.class);
  /** Cloudflare's defaults and bounds. */
  static final long DEFAULT_INTERVAL_MS = 500;
  static final long MIN_INTERVAL_MS = 100;
  static final long MAX_INTERVAL_MS = 10_000;
  static final int DEFAULT_STATUS_MIN = 200;
  static final int DEFAULT_STATUS_MAX = 399;
  /** The longest {@code timeoutMs} accepted: one day. */
  static final long MAX_TIMEOUT_MS = 24L * 60 * 60 * 1000;
  /** Printable ASCII without space: the path goes into a request line, so no CR, LF or blanks. */
  private static final Pattern PATH = Pattern.compile("/[\\x21-\\x7e]{0,2047}");
  private static final Set<String> FIELDS = Set.of("port", "mode", "path", "statusMin", "statusMax", "processId",
      "interval", "timeoutMs", "sessionId");

  private final ProcessManager processes;
  private final AgentConfig config;
  private final PortChecks checks;

  public PortWatchRoutes(ProcessManager processes) {
    this.processes = processes;
    this.config = processes.config();
    this.checks = new PortChecks(processes);
  }

  /** Registers the port watch. */
  public void register(Routes routes) {
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
      sse.sendQuietly(new PortMessages.ErrorEvent(w.port(), e.getMessage(), e.code().name()));
    } catch (RuntimeException e) {
      sse.sendQuietly(new PortMessages.ErrorEvent(w.port(),
          "the agent failed while watching: " + e.getClass().getSimpleName(), "INTERNAL_ERROR"));
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
      long checkMs = Math.max(100, Math.min(PortChecks.CHECK_TIMEOUT_MS, leftMs));
      long checkStart = System.nanoTime();
      Check c = checks.check(w, checkMs);
      if (c.ready()) {
        sse.send(new PortMessages.ReadyEvent(w.port(), c.statusCode()));
        return;
      }
      // A check the watch's own deadline cut short says nothing new about the port: the timeout
      // then reports the last check that finished (e.g. the status that was out of range).
      boolean cutShort = checkMs < PortChecks.CHECK_TIMEOUT_MS
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
      PortChecks.pause(w, waitMs);
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
}
