package dev.sandboxsdk.spi;

import dev.sandboxsdk.ForwardingSandbox;
import dev.sandboxsdk.Sandbox;
import java.net.URI;
import java.util.Objects;

/**
 * A client of one running agent at a known address, and whatever else reaching it takes (a
 * port-forward, say), released together by {@link #close()}. Closing it never stops the sandbox.
 * Thread-safe.
 */
public final class AgentClient extends ForwardingSandbox {
  private final URI baseUrl;
  private final Sandbox client;
  private final AutoCloseable route;

  private AgentClient(URI baseUrl, String token, AutoCloseable route) {
    this.baseUrl = Objects.requireNonNull(baseUrl, "baseUrl == null");
    this.client = Sandbox.builder().baseUrl(baseUrl).token(token).build();
    this.route = route;
  }

  /** A client of the agent at {@code baseUrl} with its token. */
  public static AgentClient connect(URI baseUrl, String token) {
    return new AgentClient(baseUrl, token, null);
  }

  /** A client of the agent at {@code baseUrl}, reached through {@code route}, which {@link #close()} closes too. */
  public static AgentClient connect(URI baseUrl, String token, AutoCloseable route) {
    return new AgentClient(baseUrl, token, Objects.requireNonNull(route, "route == null"));
  }

  /** The agent's address as this JVM reaches it. */
  public URI baseUrl() {
    return baseUrl;
  }

  @Override
  protected Sandbox delegate() {
    return client;
  }

  /** The same as {@link #close()}: the sandbox is not this client's to remove. */
  @Override
  public void destroy() {
    close();
  }

  /** Releases the client's connections and the route to the agent. Idempotent. */
  @Override
  public void close() {
    try {
      client.close();
    } finally {
      if (route != null) {
        try {
          route.close();
        } catch (Exception e) {
          // a route that fails to close has nothing left to release for us
        }
      }
    }
  }

  @Override
  public String toString() {
    return "AgentClient{" + baseUrl + "}";
  }
}
