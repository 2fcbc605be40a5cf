package dev.sandboxsdk.agent;

import com.sun.net.httpserver.HttpServer;
import dev.sandboxsdk.agent.http.ApiHandler;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.IOException;
import java.io.InputStream;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Files;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running agent: an HTTP server speaking protocol v1 over a {@link ProcessManager}.
 *
 * <p>{@link #close()} stops accepting requests, terminates every process group the agent started
 * (SIGTERM, then SIGKILL after the grace period) and waits for them. Thread-safe.
 */
public final class AgentServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(AgentServer.class);

  static {
    // Without this every small response waits for the client's delayed ACK (~40 ms). The JDK
    // server reads it once, when its first instance is created.
    if (System.getProperty("sun.net.httpserver.nodelay") == null) {
      System.setProperty("sun.net.httpserver.nodelay", "true");
    }
  }

  private final AgentConfig config;
  private final HttpServer server;
  private final ProcessManager processes;
  private final ApiHandler handler;
  private final ExecutorService requestThreads;
  private final URI uri;
  private volatile boolean closed;

  private AgentServer(AgentConfig config) throws IOException {
    this.config = config;
    Files.createDirectories(config.workspace());
    InetAddress address = InetAddress.getByName(config.bind());
    // Bind first: a busy port must not leave the process manager's FIFO directory and timers behind.
    this.server = HttpServer.create(new InetSocketAddress(address, config.port()), 1024);
    try {
      this.processes = new ProcessManager(config);
    } catch (RuntimeException e) {
      server.stop(0);
      throw e;
    }
    AtomicInteger n = new AtomicInteger();
    // Streams hold a thread each for their lifetime, so the pool grows with demand.
    this.requestThreads = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(null, r, "agent-http-" + n.incrementAndGet(), 512 * 1024);
      t.setDaemon(true);
      return t;
    });
    server.setExecutor(requestThreads);
    this.handler = new ApiHandler(processes, config.token(), version());
    server.createContext("/", handler);
    server.start();
    int port = server.getAddress().getPort();
    String host = address.isAnyLocalAddress() ? "127.0.0.1" : address.getHostAddress();
    if (address instanceof Inet6Address && !address.isAnyLocalAddress()) {
      host = "[" + host + "]";
    }
    this.uri = URI.create("http://" + host + ":" + port);
  }

  /** Binds and starts serving; returns once the port is open. */
  public static AgentServer start(AgentConfig config) throws IOException {
    AgentServer server = new AgentServer(config);
    log.info("sandbox agent {} listening on {}:{} (workspace {}, auth {})", version(), config.bind(),
        server.port(), config.workspace(), config.token() != null ? "bearer token" : "DISABLED");
    return server;
  }

  /** The URL clients use; a wildcard bind is reported as 127.0.0.1. */
  public URI uri() {
    return uri;
  }

  public int port() {
    return uri.getPort();
  }

  public AgentConfig config() {
    return config;
  }

  private static final String VERSION = readVersion();

  /** The version of this agent build, from the jar's resources. */
  public static String version() {
    return VERSION;
  }

  private static String readVersion() {
    Properties props = new Properties();
    try (InputStream in = AgentServer.class.getResourceAsStream("agent-version.properties")) {
      if (in != null) {
        props.load(in);
      }
    } catch (IOException e) {
      // fall through to "unknown"
    }
    return props.getProperty("version", "unknown");
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    // Refuse new work and stop every process first, so open streams can still report how their
    // processes ended; then give handlers a moment to write that before connections close.
    processes.close();
    long deadline = System.nanoTime() + 2_000_000_000L;
    while (handler.inFlight() > 0 && System.nanoTime() < deadline) {
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    server.stop(0);
    requestThreads.shutdownNow();
    log.info("sandbox agent stopped");
  }
}
