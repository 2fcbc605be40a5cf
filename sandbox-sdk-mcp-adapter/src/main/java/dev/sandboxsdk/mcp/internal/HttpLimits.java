package dev.sandboxsdk.mcp.internal;

import java.io.IOException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedTransferQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How many connections the HTTP transport accepts and the handler threads that serve them:
 * sized from the open-file limit, so that accepting never fails and sandboxes keep their share.
 */
final class HttpLimits {
  /** Logs as {@link HttpTransport}, as before the split: operators filter the log by its name. */
  private static final Logger log = LoggerFactory.getLogger(HttpTransport.class);

  private HttpLimits() {
  }

  /**
   * The connection cap, {@code jdk.httpserver.maxConnections}: the JDK server closes connections
   * accepted beyond it at once. Set on purpose, below the process's open-file limit, so that
   * accepting never fails with EMFILE (the JDK's accept loop then spins at full CPU, answering
   * nobody) and sandboxes keep the other half of the descriptors. The JDK reads the property once,
   * when its first server starts: a value set before that (-D or an earlier call) wins.
   */
  static int maxConnections(AdapterConfig config) {
    String set = System.getProperty("jdk.httpserver.maxConnections");
    if (set == null) {
      int cap = config.maxConnections() > 0 ? config.maxConnections() : defaultMaxConnections(openFileLimit());
      System.setProperty("jdk.httpserver.maxConnections", String.valueOf(cap));
      return cap;
    }
    try {
      return Integer.parseInt(set.strip());
    } catch (NumberFormatException e) {
      return defaultMaxConnections(openFileLimit());
    }
  }

  /** Half the open-file limit, between 32 and 1,000 (the other half is for sandboxes and the JVM). */
  static int defaultMaxConnections(long openFileLimit) {
    return (int) Math.max(32, Math.min(1_000, openFileLimit / 2));
  }

  /** The soft limit on open files from /proc/self/limits; 1,024 (a common default) if unknown. */
  static long openFileLimit() {
    try {
      for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/limits"))) {
        if (line.startsWith("Max open files")) {
          String soft = line.substring("Max open files".length()).strip().split("\\s+")[0];
          return soft.equals("unlimited") ? Long.MAX_VALUE : Long.parseLong(soft);
        }
      }
    } catch (IOException | RuntimeException e) {
      log.debug("cannot read the open-file limit: {}", e.toString());
    }
    return 1_024;
  }

  /**
   * Reuses idle threads and makes new ones up to one per connection the server accepts: the JDK
   * server reads a request's line, headers and body on the handler thread, and an SSE response
   * holds its thread until it ends (see {@link HttpExchanges#handle}), so every open connection may hold one
   * thread. With fewer, slow senders (held up to the request deadline) would make normal clients
   * wait in line. Beyond that (which cannot happen while the connection cap holds) requests
   * queue: the JDK's dispatcher must never see a rejection. Threads idle for 5 s end: starting
   * one costs far less than a burst of hundreds kept for good.
   */
  static ExecutorService handlerPool(AtomicInteger names, int maxConnections) {
    final class HandOff extends LinkedTransferQueue<Runnable> {
      private static final long serialVersionUID = 1L;

      @Override
      public boolean offer(Runnable r) { // only to a thread waiting for work; else the pool adds one
        return tryTransfer(r);
      }

      void enqueue(Runnable r) {
        super.offer(r); // unbounded: always accepted
      }
    }
    HandOff queue = new HandOff();
    ThreadPoolExecutor pool = new ThreadPoolExecutor(0, maxConnections + 8, 5, TimeUnit.SECONDS, queue, r -> {
      Thread t = new Thread(r, "mcp-http-" + names.incrementAndGet());
      t.setDaemon(true);
      return t;
    }, (r, full) -> queue.enqueue(r)); // at the maximum: wait in line
    return pool;
  }
}
