package dev.sandboxsdk.agent;

import com.sun.net.httpserver.HttpServer;
import dev.sandboxsdk.agent.http.Admission;
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

  /** The limits the JDK server of this JVM was given; it reads them once, for its first instance. */
  private static String jdkLimits;

  /**
   * Hands the connection cap and the request deadline to the JDK server, whose only way in is
   * system properties read once per JVM when its first server is created. A later agent in the
   * same JVM with other values gets the first one's (a warning says so).
   *
   * <ul>
   *   <li>{@code jdk.httpserver.maxConnections}: a connection accepted while this many are open
   *       is closed at once, so the agent never runs out of file descriptors (the JDK then spins
   *       on a failing accept) and never holds more than this many request threads.
   *   <li>{@code sun.net.httpserver.maxReqTime} (seconds): a connection still sending its
   *       request line, headers or body after this long is closed, which frees its thread. A
   *       response, such as an event stream, is not limited ({@code maxRspTime} stays unset).
   *   <li>{@code sun.net.httpserver.clockTick} (ms): how often connections that never sent a
   *       byte are checked against the same deadline (10 s by default).
   * </ul>
   */
  private static synchronized void configureJdkServer(AgentConfig config) {
    String limits = "maxConnections=" + config.effectiveMaxConnections()
        + ", requestTimeoutSeconds=" + config.requestTimeoutSeconds();
    if (jdkLimits == null) {
      System.setProperty("jdk.httpserver.maxConnections", String.valueOf(config.effectiveMaxConnections()));
      System.setProperty("sun.net.httpserver.maxReqTime", String.valueOf(config.requestTimeoutSeconds()));
      System.setProperty("sun.net.httpserver.clockTick", "1000");
      jdkLimits = limits;
    } else if (!jdkLimits.equals(limits)) {
      log.warn("this JVM's HTTP server was configured with {}; {} is ignored (the JDK reads its limits once)",
          jdkLimits, limits);
    }
  }

  /** Request threads made at start and kept: enough for kill-all next to a few streams. */
  static final int RESERVED_REQUEST_THREADS = 4;

  private final AgentConfig config;
  private final HttpServer server;
  private final ProcessManager processes;
  private final ApiHandler handler;
  private final ExecutorService requestThreads;
  private final Admission admission;
  private final URI uri;
  private volatile boolean closed;

  private AgentServer(AgentConfig config) throws IOException {
    this.config = config;
    boolean created = Files.notExists(config.workspace(), java.nio.file.LinkOption.NOFOLLOW_LINKS);
    Files.createDirectories(config.workspace());
    InetAddress address = InetAddress.getByName(config.bind());
    configureJdkServer(config);
    // Bind first: a busy port must not leave the process manager's FIFO directory and timers behind.
    this.server = HttpServer.create(new InetSocketAddress(address, config.port()), 1024);
    try {
      this.processes = new ProcessManager(config, created || config.freshWorkspace());
    } catch (RuntimeException e) {
      server.stop(0);
      throw e;
    }
    // Streams hold a thread each for their lifetime, so the pool grows with demand; the connection
    // cap bounds it (a connection runs one exchange at a time) and idle threads go after 5 s. A few
    // made now stay, for when a fork bomb leaves no room for a new one.
    this.requestThreads = new RequestThreads(RESERVED_REQUEST_THREADS);
    this.admission = new Admission(config.effectiveMaxConnections(), config.requestTimeoutSeconds());
    server.setExecutor(admission.executor(requestThreads));
    this.handler = new ApiHandler(processes, config.token(), version(), server.getAddress().getPort(), admission);
    server.createContext("/", handler);
    try {
      processes.awaitStarted();
    } catch (RuntimeException e) {
      server.stop(0);
      processes.close();
      requestThreads.shutdownNow();
      admission.close();
      throw e;
    }
    server.start();
    int port = server.getAddress().getPort();
    admission.watchSilentConnections(port);
    String host = address.isAnyLocalAddress() ? "127.0.0.1" : address.getHostAddress();
    if (address instanceof Inet6Address && !address.isAnyLocalAddress()) {
      host = "[" + host + "]";
    }
    this.uri = URI.create("http://" + host + ":" + port);
  }

  /** Binds and starts serving; returns once the port is open. */
  public static AgentServer start(AgentConfig config) throws IOException {
    AgentServer server = new AgentServer(config);
    log.info("sandbox agent {} listening on {}:{} (workspace {}, auth {}, at most {} connections, requests within {} s{})",
        version(), config.bind(), server.port(), config.workspace(), config.token() != null ? "bearer token" : "DISABLED",
        config.effectiveMaxConnections(), config.requestTimeoutSeconds(),
        config.idleTimeoutMs() > 0 ? ", stops after " + config.idleTimeoutMs() + " ms without requests" : "");
    // The JDK encodes a child's argv and environment in this charset: without a UTF-8 locale
    // (a container with no LANG) every non-ASCII character of a command would become '?'.
    String jnu = System.getProperty("sun.jnu.encoding", "");
    if (!jnu.equalsIgnoreCase("UTF-8")) {
      log.warn("this JVM passes command lines and environment to commands as {}, not UTF-8: non-ASCII characters"
          + " become '?'. Start the agent with a UTF-8 locale, e.g. LANG=C.UTF-8", jnu);
    }
    return server;
  }

  /** The URL clients use; a wildcard bind is reported as 127.0.0.1. */
  public URI uri() {
    return uri;
  }

  public int port() {
    return uri.getPort();
  }

  /** The isolation in force: {@code none} or {@code bwrap} (never {@code auto}). */
  public String isolation() {
    return processes.isolation();
  }

  /** Why {@code --isolation auto} fell back to none, or null. */
  public String isolationUnavailable() {
    return processes.isolationUnavailable();
  }

  public AgentConfig config() {
    return config;
  }

  /**
   * How long no authenticated request has been in progress, in nanoseconds: 0 while one is (an
   * open event stream included), else the time since the last one started or ended (or since
   * the agent started).
   */
  public long idleNanos() {
    return handler.idleNanos();
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
    handler.close();
    requestThreads.shutdownNow();
    admission.close();
    log.info("sandbox agent stopped");
  }
}
