package dev.sandboxsdk.agent.ports;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;
import java.util.Map;

/**
 * The client's side of one proxied request, as {@link ProxyForwarder} needs it: the request to
 * forward, and the answer to write back. {@link ProxyRoutes} adapts the JDK server's exchange to it,
 * so the forwarder knows HTTP/1.1 but not the server that the agent runs.
 */
interface ProxyClient {
  String method();

  /** The request's headers, each name with its values in the order received; lookups ignore case. */
  Map<String, List<String>> headers();

  /** The first value of the request header {@code name} (any case), or null. */
  String header(String name);

  /** The client's IP address. */
  String peerAddress();

  /** The request's body, as the client sends it. */
  InputStream body();

  /** Adds a header to the answer (before {@link #respond}). */
  void addResponseHeader(String name, String value);

  /**
   * Sends the answer's status and headers; {@code length} is the body's length, 0 for one sent
   * chunked, -1 for none.
   *
   * @return the answer's body, closed by the caller
   */
  OutputStream respond(int status, long length) throws IOException;
}
