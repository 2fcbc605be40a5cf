package dev.sandboxsdk.mcp;

import dev.sandboxsdk.container.ContainerProvider;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.UnixDomainSocketAddress;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Runs a test class only where a container engine answers and has the agent image
 * ({@code -Dsandbox.image}, default {@code sandbox-agent}). Elsewhere the class is skipped with
 * one line on stderr, so {@code ./mvnw verify} passes on a machine without an engine; under
 * {@code CI=true} a missing engine or image fails the run instead.
 *
 * <p>A small copy of the container module's own condition (modules share no test classes). It
 * asks the engine about the image with one plain Engine API request, {@code GET /images/NAME/json},
 * since this module's code may not use docker-java itself.
 */
final class ContainerEngine implements ExecutionCondition {
  /** The agent image the tests run. */
  static final String IMAGE = System.getProperty("sandbox.image", "sandbox-agent");

  private static String unavailable;
  private static boolean checked;
  private static boolean announced;

  @Override
  public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
    String why = unavailableReason();
    if (why == null) {
      return ConditionEvaluationResult.enabled("container engine with image " + IMAGE);
    }
    if ("true".equals(System.getenv("CI"))) {
      throw new IllegalStateException("CI=true and the container tests cannot run: " + why);
    }
    synchronized (ContainerEngine.class) {
      if (!announced) {
        announced = true;
        System.err.println("[container tests skipped] " + why + " (CI=true makes this a failure)");
      }
    }
    return ConditionEvaluationResult.disabled(why);
  }

  /** Why the container tests cannot run here, or null if they can. */
  static synchronized String unavailableReason() {
    if (!checked) {
      checked = true;
      try (ContainerProvider p = ContainerProvider.fromEnvironment()) {
        p.ping();
        int status = imageStatus(p.engineHost(), IMAGE);
        if (status == 404) {
          unavailable = "no image '" + IMAGE + "' on the container engine at " + p.engineHost()
              + " (build it: see the README's \"Container image\")";
        } else if (status != 200) {
          unavailable = "the container engine at " + p.engineHost() + " answered HTTP " + status
              + " when asked about image '" + IMAGE + "'";
        }
      } catch (Exception e) {
        unavailable = String.valueOf(e.getMessage()).lines().findFirst().orElse("no container engine");
      }
    }
    return unavailable;
  }

  /** The HTTP status of the Engine API's image inspection, over a unix socket or TCP. */
  private static int imageStatus(URI engine, String image) throws IOException, InterruptedException {
    String path = "/images/" + URLEncoder.encode(image, StandardCharsets.UTF_8) + "/json";
    if ("tcp".equals(engine.getScheme())) {
      HttpResponse<Void> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
          URI.create("http://" + engine.getHost() + ":" + engine.getPort() + path))
          .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.discarding());
      return r.statusCode();
    }
    try (SocketChannel ch = SocketChannel.open(UnixDomainSocketAddress.of(engine.getPath()))) {
      ch.write(ByteBuffer.wrap(("GET " + path + " HTTP/1.0\r\nHost: engine\r\n\r\n").getBytes(StandardCharsets.US_ASCII)));
      InputStream in = Channels.newInputStream(ch);
      String statusLine = new String(in.readNBytes(12), StandardCharsets.US_ASCII); // "HTTP/1.1 200"
      return Integer.parseInt(statusLine.substring(9, 12));
    }
  }
}
