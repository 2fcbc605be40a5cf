package dev.sandboxsdk.kubernetes.internal;

import java.net.URI;

/**
 * How one handle reaches one pod's agent: an address, and the port-forward behind it if there is
 * one (closed with the handle).
 */
public final class AgentLink implements AutoCloseable {
  private final URI baseUrl;
  private final PortForwarder forward;

  private AgentLink(URI baseUrl, PortForwarder forward) {
    this.baseUrl = baseUrl;
    this.forward = forward;
  }

  /** Through a new port-forward of the API server. */
  public static AgentLink forwarded(Cluster cluster, String pod) {
    PortForwarder f = cluster.forward(pod);
    return new AgentLink(URI.create("http://127.0.0.1:" + f.localPort()), f);
  }

  /** Straight to the pod's address. */
  public static AgentLink direct(String podIp) {
    String host = podIp.indexOf(':') >= 0 ? "[" + podIp + "]" : podIp;
    return new AgentLink(URI.create("http://" + host + ":" + PodSpecs.AGENT_PORT), null);
  }

  /** The agent's address as this JVM reaches it. */
  public URI baseUrl() {
    return baseUrl;
  }

  /** Whether a port-forward carries the connections. */
  public boolean forwarded() {
    return forward != null;
  }

  @Override
  public void close() {
    if (forward != null) {
      forward.close();
    }
  }
}
