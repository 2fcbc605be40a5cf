package dev.sandboxsdk.samples.webterm;

import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.Sandbox;
import java.net.InetAddress;
import java.net.URI;
import java.time.Duration;
import java.util.Locale;
import java.util.Set;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ResourceHandler;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.resource.ResourceFactory;
import org.eclipse.jetty.websocket.server.WebSocketUpgradeHandler;

/**
 * A terminal in the browser: serves a page with xterm.js and bridges each WebSocket the page opens
 * to a {@link dev.sandboxsdk.Terminal} in a sandbox. Run it with
 * <pre>
 * java -cp samples/target/samples.jar dev.sandboxsdk.samples.webterm.WebTerminal --port 8080
 * </pre>
 * and open the URL it prints. The page keeps its terminal's id in the URL: a reload, or the same
 * URL in a second tab, attaches to the same terminal and replays its output; a lost connection
 * is retried and resumes at the last byte the page saw. Closing the page detaches and leaves the
 * terminal running; the page's "End terminal" button kills it.
 *
 * <p>The WebSocket at {@code /ws} speaks a small protocol: binary frames are terminal bytes in
 * both directions; text frames are JSON control messages, from the page {@code resize},
 * {@code kill} and {@code ping}, to the page {@code attached}, {@code offset} (where the next
 * byte of output sits), {@code exit} and {@code error}. See {@link TerminalSocket}.
 *
 * <p>Whoever reaches the port has a shell in the sandbox, so the server listens on the loopback
 * interface only and refuses requests that name another host or come from another site's page
 * (DNS rebinding, cross-site WebSocket hijacking). Exposing it further needs authentication.
 */
public final class WebTerminal implements AutoCloseable {
  /** Largest input message the page may send (it splits a big paste into pieces of 32 KiB). */
  static final int MAX_INPUT_BYTES = 64 * 1024;
  /** Largest control message; a resize message is about 40 characters. */
  static final int MAX_CONTROL_CHARS = 4 * 1024;
  /** A socket with no message for this long is closed; the page pings every 20 seconds. */
  static final Duration IDLE_TIMEOUT = Duration.ofSeconds(60);

  private static final String WEB_ROOT = "dev/sandboxsdk/samples/webterm/web/";

  private final Server server;
  private final URI uri;

  private WebTerminal(Server server, URI uri) {
    this.server = server;
    this.uri = uri;
  }

  public static void main(String[] args) throws Exception {
    int port = 8080;
    if (args.length == 2 && "--port".equals(args[0]) && args[1].matches("\\d{1,5}")) {
      port = Integer.parseInt(args[1]);
    } else if (args.length != 0) {
      System.err.println("usage: WebTerminal [--port N]   (0 picks a free port; default 8080)");
      System.exit(2);
    }
    LocalSandbox sandbox = LocalSandbox.start();
    WebTerminal web = start(sandbox, port);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      web.close();
      sandbox.close(); // ends every terminal it still runs
    }, "web-terminal-shutdown"));
    System.out.println("sandbox: " + sandbox);
    System.out.println("web terminal: " + web.uri() + "   (Ctrl-C stops it and the sandbox)");
    web.server.join();
  }

  /** Serves the page and its WebSocket on {@code 127.0.0.1:port} (0: any free port). */
  public static WebTerminal start(Sandbox sandbox, int port) throws Exception {
    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost(InetAddress.getLoopbackAddress().getHostAddress());
    connector.setPort(port);
    server.addConnector(connector);

    ResourceHandler page = new ResourceHandler();
    page.setBaseResource(ResourceFactory.of(server).newClassLoaderResource(WEB_ROOT));
    page.setDirAllowed(false);
    page.setWelcomeFiles("index.html");

    WebSocketUpgradeHandler sockets = WebSocketUpgradeHandler.from(server, container -> {
      container.setMaxBinaryMessageSize(MAX_INPUT_BYTES);
      container.setMaxTextMessageSize(MAX_CONTROL_CHARS);
      container.setIdleTimeout(IDLE_TIMEOUT);
      container.addMapping("/ws", (request, response, callback) ->
          TerminalSocket.forRequest(sandbox, Request.extractQueryParameters(request)));
    });
    sockets.setHandler(page);
    server.setHandler(new SameOriginOnly(sockets));
    server.start();
    URI uri = URI.create("http://127.0.0.1:" + connector.getLocalPort() + "/");
    return new WebTerminal(server, uri);
  }

  /** Where the page is served. */
  public URI uri() {
    return uri;
  }

  /** Stops serving; the terminals keep running in the sandbox. */
  @Override
  public void close() {
    try {
      server.stop();
    } catch (Exception e) {
      throw new IllegalStateException("stopping the web server failed", e);
    }
  }

  /**
   * Lets through requests for a loopback host name only and, when a browser says which page sent
   * them ({@code Origin}), only from this server's own pages.
   */
  static final class SameOriginOnly extends Handler.Wrapper {
    private static final Set<String> LOOPBACK = Set.of("127.0.0.1", "localhost", "[::1]", "::1");

    SameOriginOnly(Handler handler) {
      super(handler);
    }

    @Override
    public boolean handle(Request request, Response response, Callback callback) throws Exception {
      String host = Request.getServerName(request).toLowerCase(Locale.ROOT);
      if (!LOOPBACK.contains(host)) {
        Response.writeError(request, response, callback, HttpStatus.MISDIRECTED_REQUEST_421,
            "this server answers to 127.0.0.1 and localhost only");
        return true;
      }
      String origin = request.getHeaders().get(HttpHeader.ORIGIN);
      String self = request.getHttpURI().getScheme() + "://" + request.getHttpURI().getAuthority();
      if (origin != null && !origin.equalsIgnoreCase(self)) {
        Response.writeError(request, response, callback, HttpStatus.FORBIDDEN_403,
            "requests from another site's page are refused");
        return true;
      }
      return super.handle(request, response, callback);
    }
  }
}
