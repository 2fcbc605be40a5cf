package dev.sandboxsdk.testkit;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/**
 * A destination for egress tests: an HTTP server on loopback that answers every request with
 * {@link #BODY}. Started by {@link #start(int)}; the caller stops it ({@code stop(0)}) and may add
 * contexts of its own.
 */
public final class HelloUpstream {
  /** What every request is answered with. */
  public static final String BODY = "hello from upstream";

  private HelloUpstream() {
  }

  /** A started server on a free loopback port, accepting up to {@code backlog} waiting connections. */
  public static HttpServer start(int backlog) throws IOException {
    return start(backlog, null);
  }

  /** As {@link #start(int)}, serving on {@code executor} (null: the server's own thread). */
  public static HttpServer start(int backlog, java.util.concurrent.Executor executor) throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), backlog);
    server.createContext("/", HelloUpstream::answer);
    server.setExecutor(executor); // only before start
    server.start();
    return server;
  }

  /** Answers {@code exchange} with {@link #BODY} (200, text/plain) and closes it. */
  public static void answer(HttpExchange exchange) throws IOException {
    byte[] body = BODY.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
    exchange.sendResponseHeaders(200, body.length);
    exchange.getResponseBody().write(body);
    exchange.close();
  }
}
