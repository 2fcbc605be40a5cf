package dev.sandboxsdk.kubernetes;

/** How this JVM reaches the agent in a sandbox's pod. */
public enum KubernetesAccess {
  /**
   * A port-forward through the API server (what {@code kubectl port-forward} does): works from
   * anywhere the API server is reachable, outside the cluster too, and needs the
   * {@code pods/portforward} permission. Each connection is a WebSocket through the API server and
   * the node's kubelet, which costs latency; the default.
   */
  PORT_FORWARD,
  /**
   * The pod's own IP address on the agent's port: for callers inside the cluster (or on a network
   * that routes to pod addresses). Fastest; every request still needs the sandbox's token.
   */
  POD_IP
}
