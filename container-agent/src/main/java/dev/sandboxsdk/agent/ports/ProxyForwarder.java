package dev.sandboxsdk.agent.ports;

import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.ports.UpstreamResponses.ChunkedReader;
import dev.sandboxsdk.agent.ports.UpstreamResponses.Head;
import dev.sandboxsdk.agent.ports.UpstreamResponses.UpstreamReader;
import java.io.BufferedOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The proxy's side towards the sandbox's servers: one connection per request ({@code Connection:
 * close}), the request head and body re-framed for the server, the answer streamed back to the
 * client as it arrives, and a silent server cut off by {@link ProxyTimeouts}. The client's side is
 * a {@link ProxyClient}; auth and the routes of exposures are {@link ProxyRoutes}'.
 */
final class ProxyForwarder {
  private static final Logger log = LoggerFactory.getLogger(ProxyForwarder.class);
  private static final int BUFFER = 16 * 1024;
  /** The proxy's paths: {@code /proxy/{port}/{rest}}. */
  static final String PREFIX = "/proxy/";
  /** Every preview cookie's name starts so; such cookies never reach a server, whichever agent set them. */
  static final String COOKIE_PREFIX = "sandbox-preview-";
  /** What a Host header may be to be passed on or put in a preview URL. */
  static final Pattern HOST = Pattern.compile("[A-Za-z0-9.:\\[\\]-]{1,262}");
  /** How long a server may stay silent towards a preview (non-bearer) client, at most. */
  static final long PREVIEW_SILENCE_MS = 30_000;
  /** RFC 9110 hop-by-hop headers, plus the old Proxy-Connection; never forwarded either way. */
  private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-authenticate",
      "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade");

  private final AgentConfig config;
  private final Upstreams upstreams;
  private final ProxyTimeouts timeouts;

  ProxyForwarder(AgentConfig config, Upstreams upstreams) {
    this.config = config;
    this.upstreams = upstreams;
    this.timeouts = new ProxyTimeouts(config.proxyTimeoutMs());
  }

  /** Stops the timeout thread and cuts every server connection still open (the agent is stopping). */
  void close() {
    timeouts.close();
  }

  /**
   * Forwards the request to the server and streams its answer back.
   *
   * @throws AgentException SERVICE_NOT_RESPONDING, UPSTREAM_INVALID_RESPONSE or UPSTREAM_TIMEOUT
   *     while no answer has started
   * @throws IOException if the client went away, or the server failed after the answer started
   */
  void forward(ProxyClient client, ProxyTarget target) throws IOException {
    Upstreams.Connection up;
    try {
      up = upstreams.open(target.port());
    } catch (ConnectException e) {
      throw notListening(target.port());
    } catch (SocketTimeoutException e) {
      throw new AgentException(ErrorCode.UPSTREAM_TIMEOUT, "connecting to port " + target.port()
          + " in the sandbox timed out", Map.of("port", target.port()));
    } catch (IOException e) {
      log.warn("cannot reach port {} in the sandbox: {}", target.port(), e.getMessage());
      throw new AgentException(ErrorCode.SERVICE_NOT_RESPONDING, "cannot reach port " + target.port()
          + " in the sandbox: " + e.getMessage(), Map.of("port", target.port()));
    }
    // A preview client's exchange waits on a silent server for less long: it holds one of the few
    // connections preview clients get, and the agent cannot see its client hang up meanwhile.
    ProxyTimeouts.Watch watch = timeouts.watch(up, target.bearer() ? config.proxyTimeoutMs()
        : Math.min(config.proxyTimeoutMs(), PREVIEW_SILENCE_MS));
    try {
      pass(client, target, up, watch);
    } finally {
      timeouts.release(watch);
      up.close();
    }
  }

  private static AgentException notListening(int port) {
    return new AgentException(ErrorCode.SERVICE_NOT_RESPONDING, "nothing listens on port " + port
        + " in the sandbox (is the server running, and bound to 127.0.0.1 or 0.0.0.0?)", Map.of("port", port));
  }

  private void pass(ProxyClient client, ProxyTarget target, Upstreams.Connection up, ProxyTimeouts.Watch watch)
      throws IOException {
    sendRequest(client, target, up, watch);
    UpstreamReader fromServer = new UpstreamReader(up.in(), watch);
    Head head = readFinalHead(target, fromServer, watch);
    copyHeaders(client, target, head);
    String te = head.first("transfer-encoding");
    String cl = head.first("content-length");
    boolean noBody = client.method().equals("HEAD") || head.status() == 204 || head.status() == 304;
    if (noBody) {
      client.respond(head.status(), -1).close();
      return;
    }
    InputStream body;
    long fixed = -1;
    if (te != null) {
      if (!te.toLowerCase(Locale.ROOT).strip().endsWith("chunked")) {
        throw upstreamFailed(target, watch, "the server's answer has an unsupported Transfer-Encoding: " + te);
      }
      body = new ChunkedReader(fromServer);
    } else if (cl != null) {
      try {
        fixed = Long.parseLong(cl.strip());
      } catch (NumberFormatException e) {
        fixed = -2;
      }
      if (fixed < 0) {
        throw upstreamFailed(target, watch, "the server's answer has an invalid Content-Length");
      }
      body = fromServer;
    } else {
      body = fromServer; // until the server closes
    }
    // From here on the answer has started: failures cut the connection, the client sees a short body.
    OutputStream toClient = client.respond(head.status(), fixed == 0 ? -1 : fixed > 0 ? fixed : 0);
    copyBody(body, toClient, fixed);
  }

  /** Sends the request's head and body to the server. */
  private void sendRequest(ProxyClient client, ProxyTarget target, Upstreams.Connection up, ProxyTimeouts.Watch watch)
      throws IOException {
    boolean chunkedBody = client.headers().containsKey("Transfer-encoding");
    String length = chunkedBody ? null : client.header("Content-length");
    OutputStream toServer = new BufferedOutputStream(up.out(), BUFFER);
    try {
      toServer.write(head(client, target, chunkedBody, length).getBytes(StandardCharsets.ISO_8859_1));
      if (chunkedBody || (length != null && !length.equals("0"))) {
        sendBody(client.body(), toServer, chunkedBody, watch);
      }
      toServer.flush();
    } catch (ClientGone e) {
      throw e.getCause();
    } catch (IOException e) {
      throw upstreamFailed(target, watch, "the server closed the connection while receiving the request");
    }
  }

  /** The server's final answer head: informational ones (100, 103) are skipped, 101 refused. */
  private Head readFinalHead(ProxyTarget target, UpstreamReader fromServer, ProxyTimeouts.Watch watch) throws IOException {
    Head head;
    try {
      head = UpstreamResponses.readHead(fromServer);
      while (head.status() >= 100 && head.status() < 200) {
        if (head.status() == 101) {
          throw new AgentException(ErrorCode.UPSTREAM_INVALID_RESPONSE, "the server switched protocols (101),"
              + " which the proxy does not forward (no WebSocket)", Map.of("port", target.port()));
        }
        head = UpstreamResponses.readHead(fromServer); // 100 Continue, 103 Early Hints: the final answer follows
      }
    } catch (IOException e) {
      throw upstreamFailed(target, watch, e instanceof EOFException
          ? "the server closed the connection without an answer" : "reading the server's answer failed: " + e.getMessage());
    }
    return head;
  }

  /** The server's headers for the client, less the hop-by-hop ones and Content-Length. */
  private static void copyHeaders(ProxyClient client, ProxyTarget target, Head head) {
    Set<String> listed = connectionListed(head.headers());
    // Behind a front proxy that names its own prefix the browser's paths are the front's: leave them.
    boolean ownPrefix = !client.headers().containsKey("X-forwarded-prefix");
    for (String[] h : head.headers()) {
      String name = h[0].toLowerCase(Locale.ROOT);
      if (!HOP_BY_HOP.contains(name) && !listed.contains(name) && !name.equals("content-length")) {
        client.addResponseHeader(h[0], ownPrefix && name.equals("location") ? underPrefix(h[1], target.port()) : h[1]);
      }
    }
  }

  /** The answer's body to the client: {@code fixed} bytes, or (below 0) until the server closes. */
  private static void copyBody(InputStream body, OutputStream toClient, long fixed) throws IOException {
    byte[] buf = new byte[BUFFER];
    long left = fixed;
    while (fixed < 0 || left > 0) {
      int n = body.read(buf, 0, fixed < 0 ? buf.length : (int) Math.min(buf.length, left));
      if (n < 0) {
        if (fixed > 0) {
          throw new EOFException("the server closed the connection " + left + " bytes before the end of its answer");
        }
        break;
      }
      toClient.write(buf, 0, n);
      toClient.flush(); // server-sent events: each read goes out as it came
      left -= n;
    }
    toClient.close();
  }

  /** The request head for the server. */
  private String head(ProxyClient client, ProxyTarget target, boolean chunked, String length) {
    StringBuilder h = new StringBuilder(client.method()).append(' ').append(target.pathAndQuery())
        .append(" HTTP/1.1\r\nHost: localhost:").append(target.port()).append("\r\n");
    List<String[]> pairs = new ArrayList<>();
    for (Map.Entry<String, List<String>> e : client.headers().entrySet()) {
      for (String v : e.getValue()) {
        pairs.add(new String[] {e.getKey(), v});
      }
    }
    Set<String> listed = connectionListed(pairs);
    String forwardedFor = null;
    boolean proto = false;
    boolean host = false;
    boolean prefix = false;
    for (String[] p : pairs) {
      String name = p[0].toLowerCase(Locale.ROOT);
      String value = p[1];
      if (HOP_BY_HOP.contains(name) || listed.contains(name) || value.indexOf('\r') >= 0 || value.indexOf('\n') >= 0) {
        continue;
      }
      switch (name) {
        case "host":
        case "content-length":
        case "expect":
          continue;
        case "authorization":
          if (target.bearer()) {
            continue; // the agent's token is for the agent only
          }
          break;
        case "cookie":
          value = withoutPreviewCookies(value);
          if (value.isEmpty()) {
            continue;
          }
          break;
        case "x-forwarded-for":
          forwardedFor = forwardedFor == null ? value : forwardedFor + ", " + value;
          continue;
        case "x-forwarded-proto":
          proto = true;
          break;
        case "x-forwarded-host":
          host = true;
          break;
        case "x-forwarded-prefix":
          prefix = true;
          break;
        default:
          break;
      }
      h.append(p[0]).append(": ").append(value).append("\r\n");
    }
    String peer = client.peerAddress();
    h.append("X-Forwarded-For: ").append(forwardedFor == null ? peer : forwardedFor + ", " + peer).append("\r\n");
    // A front proxy (Caddy, nginx) knows the public scheme, host and prefix: what it says stands.
    if (!proto) {
      h.append("X-Forwarded-Proto: http\r\n");
    }
    String clientHost = client.header("Host");
    if (!host && clientHost != null && HOST.matcher(clientHost).matches()) {
      h.append("X-Forwarded-Host: ").append(clientHost).append("\r\n");
    }
    if (!prefix) {
      h.append("X-Forwarded-Prefix: ").append(PREFIX).append(target.port()).append("\r\n");
    }
    if (chunked) {
      h.append("Transfer-Encoding: chunked\r\n");
    } else if (length != null) {
      h.append("Content-Length: ").append(length.strip()).append("\r\n");
    }
    h.append("Connection: close\r\n\r\n");
    return h.toString();
  }

  /**
   * A redirect target of the server as the browser must see it: an absolute path, or an absolute
   * URL of the server's own loopback address, goes below {@code /proxy/{port}}; anything else
   * (a relative reference, another host) stays as it is.
   */
  static String underPrefix(String location, int port) {
    String prefix = PREFIX + port;
    for (String own : new String[] {"http://localhost:" + port, "http://127.0.0.1:" + port, "http://[::1]:" + port}) {
      if (location.regionMatches(true, 0, own, 0, own.length())) {
        String rest = location.substring(own.length());
        if (rest.isEmpty() || rest.startsWith("/") || rest.startsWith("?")) {
          return prefix + (rest.startsWith("/") ? rest : "/" + rest);
        }
      }
    }
    if (location.startsWith("/") && !location.startsWith("//") && !location.startsWith(prefix + "/")) {
      return prefix + location;
    }
    return location;
  }

  /** The cookie header without any agent's preview cookies. */
  static String withoutPreviewCookies(String header) {
    List<String> kept = new ArrayList<>();
    for (String pair : header.split(";")) {
      String p = pair.strip();
      if (!p.isEmpty() && !p.startsWith(COOKIE_PREFIX)) {
        kept.add(p);
      }
    }
    return String.join("; ", kept);
  }

  /** Names listed in Connection headers: hop-by-hop for this connection only. */
  private static Set<String> connectionListed(List<String[]> headers) {
    Set<String> names = new HashSet<>();
    for (String[] h : headers) {
      if (h[0].equalsIgnoreCase("connection")) {
        for (String n : h[1].split(",")) {
          names.add(n.strip().toLowerCase(Locale.ROOT));
        }
      }
    }
    return names;
  }

  /** An IOException of the client's side while the request body is copied. */
  private static final class ClientGone extends IOException {
    private static final long serialVersionUID = 1L;

    ClientGone(IOException cause) {
      super(cause);
    }

    @Override
    public synchronized IOException getCause() {
      return (IOException) super.getCause();
    }
  }

  /** Copies the request body to the server, chunked or as it is. */
  private static void sendBody(InputStream from, OutputStream to, boolean chunked, ProxyTimeouts.Watch watch)
      throws IOException {
    byte[] buf = new byte[BUFFER];
    while (true) {
      int n;
      try {
        n = from.read(buf);
      } catch (IOException e) {
        throw new ClientGone(e);
      }
      if (n < 0) {
        break;
      }
      if (n == 0) {
        continue;
      }
      if (chunked) {
        to.write((Integer.toHexString(n) + "\r\n").getBytes(StandardCharsets.US_ASCII));
      }
      to.write(buf, 0, n);
      if (chunked) {
        to.write('\r');
        to.write('\n');
      }
      watch.touch();
    }
    if (chunked) {
      to.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    }
  }

  private AgentException upstreamFailed(ProxyTarget target, ProxyTimeouts.Watch watch, String message) {
    if (watch.timedOut()) {
      return new AgentException(ErrorCode.UPSTREAM_TIMEOUT, "the server on port " + target.port() + " did not answer within "
          + watch.limitMs() + " ms", Map.of("port", target.port(), "timeoutMs", watch.limitMs()));
    }
    return new AgentException(ErrorCode.UPSTREAM_INVALID_RESPONSE, "port " + target.port() + ": " + message,
        Map.of("port", target.port()));
  }
}
