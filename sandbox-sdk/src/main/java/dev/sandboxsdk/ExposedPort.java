package dev.sandboxsdk;

import java.net.URI;
import java.time.Instant;
import java.util.Objects;

/**
 * A port of the sandbox that is reachable from outside through the agent's proxy
 * ({@link SandboxPorts#expose(int)}).
 *
 * <p>{@link #url()} is the preview URL: a browser on the machine that reaches the agent opens it
 * as it is. It carries the exposure's token, a capability for this one port, which the agent
 * trades on first use for a cookie and a redirect to the same address without the token; the
 * token stops working when the port is unexposed. Treat the URL like a password: whoever has it
 * can use the server behind it. {@code toString()} leaves the token out.
 *
 * @param port the port in the sandbox, 1 to 65535
 * @param url the preview URL, e.g. {@code http://127.0.0.1:41234/proxy/8080/?sandbox-preview-token=...}
 * @param name the label given to {@link SandboxPorts#expose(int, String)}, or null
 * @param exposedAt when the port was exposed, or null if the agent did not say
 */
public record ExposedPort(int port, URI url, String name, Instant exposedAt) {

  /** Validates. */
  public ExposedPort {
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("port must be 1..65535: " + port);
    }
    Objects.requireNonNull(url, "url == null");
  }

  /** The preview URL without its token: where the server appears once the browser holds the cookie. */
  public URI baseUrl() {
    String s = url.toString();
    int q = s.indexOf('?');
    return URI.create(q < 0 ? s : s.substring(0, q));
  }

  @Override
  public String toString() {
    return "ExposedPort[port=" + port + ", url=" + baseUrl() + (name == null ? "" : ", name=" + name)
        + (exposedAt == null ? "" : ", exposedAt=" + exposedAt) + "]";
  }
}
