/**
 * Ports: waiting for a port in the sandbox ({@code POST /api/port-watch}), exposing ports, and
 * the preview proxy ({@code /proxy/{port}/...}). The domain classes know no HTTP server: {@code
 * PortChecks} checks a port where the sandbox's servers listen, {@code ExposedPorts} keeps the
 * exposures and their preview tokens, and {@code ProxyForwarder} speaks HTTP/1.1 to a server in the
 * sandbox ({@code Upstreams}, {@code UpstreamResponses}, {@code ProxyTimeouts}) for a client it sees
 * as a {@code ProxyClient}. {@code PortWatchRoutes} and {@code ProxyRoutes} are thin: they parse the
 * request, check its auth, call the domain and write the answer.
 *
 * <p><b>Internal</b> to the agent; what the routes accept and answer is the wire protocol
 * (docs/protocol/README.md).
 */
package dev.sandboxsdk.agent.ports;
