package dev.sandboxsdk;

import java.util.List;

/**
 * The ports of a sandbox ({@link Sandbox#ports()}): wait until a server in the sandbox is ready,
 * and expose it through the agent's proxy with a preview URL.
 *
 * <pre>{@code
 * SandboxProcess web = sandbox.startProcess("python3 -m http.server 8000");
 * sandbox.ports().waitFor(8000);                       // answers GET /
 * URI url = sandbox.ports().expose(8000).url();       // open it in a browser
 * sandbox.ports().unexpose(8000);
 * }</pre>
 *
 * <p><b>Errors.</b> Every method throws unchecked exceptions: {@link IllegalArgumentException} for
 * a port outside 1 to 65535, the exceptions each method names, plus the connection, timeout and
 * auth exceptions of every {@link Sandbox} call.
 *
 * <p><b>Threading.</b> Thread-safe: any number of threads may use the view at once. Each call
 * blocks the calling thread until the agent answered. The view costs nothing to get. After the
 * sandbox is closed every method throws {@link IllegalStateException}.
 */
public interface SandboxPorts {

  /** Waits until an HTTP server in the sandbox answers {@code GET /}; see {@link #waitFor(int, PortWaitOptions)}. */
  default void waitFor(int port) {
    waitFor(port, PortWaitOptions.defaults());
  }

  /**
   * Blocks until a port on the sandbox's loopback is ready: in {@link PortWaitOptions.Mode#HTTP}
   * mode (the default) until a {@code GET} of the path answers with a status in range, in
   * {@link PortWaitOptions.Mode#TCP} mode until a connection is accepted. The agent checks from
   * inside the sandbox's network (an isolated sandbox's servers are not reachable from the host),
   * every {@code interval}. To fail fast when the server's process dies, use
   * {@link SandboxProcess#waitForPort(int, PortWaitOptions)} instead.
   *
   * <pre>{@code
   * SandboxProcess web = sandbox.startProcess("python3 -m http.server 8000");
   * web.waitForPort(8000, PortWaitOptions.defaults().toBuilder().timeout(Duration.ofSeconds(20)).build());
   * }</pre>
   *
   * <p>An interrupt of the calling thread ends the wait at once (the connection is cancelled,
   * the interrupt flag stays set).
   *
   * @param port 1–65535
   * @throws SandboxTimeoutException if {@code options.timeout()} passed first; the message names
   *     the last check's outcome (e.g. connection refused, or the status that was out of range)
   * @throws IllegalArgumentException if {@code port} is out of range
   */
  void waitFor(int port, PortWaitOptions options);

  /**
   * Exposes a server of the sandbox: makes {@code port} reachable through the agent's proxy at
   * {@code /proxy/{port}/} and returns its preview URL, which a browser on a machine that reaches
   * the agent can open without the agent's token. HTTP and server-sent events are forwarded
   * (WebSocket is not). Same as {@code expose(port, null)}.
   *
   * <pre>{@code
   * SandboxProcess web = sandbox.startProcess("python3 -m http.server 8000");
   * web.waitForLog(Pattern.compile("Serving HTTP"), Duration.ofSeconds(10));
   * URI url = sandbox.ports().expose(8000).url();     // open it in a browser
   * }</pre>
   *
   * @throws IllegalArgumentException if {@code port} is not 1 to 65535
   * @throws SandboxInvalidRequestException if the port is exposed already (code
   *     {@code PORT_ALREADY_EXPOSED}) or is the agent's own port ({@code INVALID_PORT_NUMBER})
   * @throws SandboxServerException if 256 ports are exposed already ({@code TOO_MANY_EXPOSED_PORTS})
   * @throws SandboxException if the agent cannot be reached or fails
   */
  default ExposedPort expose(int port) {
    return expose(port, null);
  }

  /**
   * Exposes {@code port} as {@link #expose(int)} does, labelled {@code name} (may be null; at most
   * 128 characters), which {@link #exposed()} reports.
   *
   * @throws IllegalArgumentException if {@code port} is not 1 to 65535 or {@code name} is not a valid label
   * @throws SandboxInvalidRequestException if the port is exposed already or is the agent's own port
   * @throws SandboxException if the agent cannot be reached or fails
   */
  ExposedPort expose(int port, String name);

  /**
   * Stops exposing {@code port}: its proxy route answers 404 and its preview URL and cookies stop
   * working at once. The server itself keeps running. Idempotent: a port that is not exposed is
   * no error.
   *
   * @throws IllegalArgumentException if {@code port} is not 1 to 65535
   * @throws SandboxException if the agent cannot be reached or fails
   */
  void unexpose(int port);

  /**
   * The exposed ports, by port number, each with its preview URL.
   *
   * @throws SandboxException if the agent cannot be reached or fails
   */
  List<ExposedPort> exposed();
}
