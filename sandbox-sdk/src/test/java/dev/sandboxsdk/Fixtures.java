package dev.sandboxsdk;

import static java.nio.charset.StandardCharsets.UTF_8;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Flow;
import java.util.stream.Collectors;
import okhttp3.mockwebserver.MockResponse;
import okhttp3.mockwebserver.MockWebServer;
import okhttp3.mockwebserver.RecordedRequest;

/** The golden wire captures of docs/protocol and small builders of agent answers. */
final class Fixtures {
  static final ObjectMapper MAPPER = new ObjectMapper();

  private Fixtures() {}

  /** A file of docs/protocol, byte for byte. */
  static String read(String name) {
    for (Path dir : new Path[] {Path.of("..", "docs", "protocol"), Path.of("docs", "protocol")}) {
      Path file = dir.resolve(name);
      if (Files.isRegularFile(file)) {
        try {
          return Files.readString(file, UTF_8);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    }
    throw new IllegalStateException("fixture not found: docs/protocol/" + name);
  }

  /** A {@code .jsonl} capture turned back into the event stream the agent sent. */
  static String sseFromJsonl(String name) {
    return read(name).lines().filter(l -> !l.isBlank()).map(l -> "data: " + l + "\n\n").collect(Collectors.joining());
  }

  /** Events framed as the agent frames them. */
  static String sse(String... events) {
    StringBuilder sb = new StringBuilder();
    for (String e : events) {
      sb.append("data: ").append(e).append("\n\n");
    }
    return sb.toString();
  }

  static MockResponse json(int status, String body) {
    return new MockResponse().setResponseCode(status).setHeader("Content-Type", "application/json; charset=utf-8")
        .setBody(body);
  }

  static MockResponse json(String body) {
    return json(200, body);
  }

  static MockResponse eventStream(String body) {
    return new MockResponse().setHeader("Content-Type", "text/event-stream; charset=utf-8")
        .setHeader("Cache-Control", "no-cache").setBody(body);
  }

  /** An error body as the agent sends it (docs/protocol/README.md, section 6). */
  static String error(int status, String code, String message, String context) {
    return "{\"success\":false,\"code\":\"" + code + "\",\"message\":\"" + message + "\",\"context\":" + context
        + ",\"httpStatus\":" + status + ",\"timestamp\":\"2026-11-22T01:10:09.645439231Z\"}";
  }

  static MockResponse errorResponse(int status, String code, String message, String context) {
    return json(status, error(status, code, message, context));
  }

  /** A client for a test server, with a stream idle timeout set so no version call precedes streams. */
  static Sandbox client(MockWebServer server) {
    return client(URI.create(server.url("/").toString()));
  }

  static Sandbox client(URI url) {
    return Sandbox.builder().baseUrl(url).token("t").streamIdleTimeout(Duration.ofSeconds(2)).build();
  }

  static JsonNode body(RecordedRequest request) {
    try {
      return MAPPER.readTree(request.getBody().clone().readUtf8());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static JsonNode parse(String json) {
    try {
      return MAPPER.readTree(json);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * The publisher after one subscriber took it and cancelled without requesting (so nothing
   * reached the agent): a single-use publisher that must now refuse every new subscriber. Any
   * signal that first subscriber still gets is a rule violation; it is added to {@code violations}
   * (it arrives on an SDK thread, where a thrown AssertionError would be lost).
   */
  static <T> Flow.Publisher<T> usedUp(Flow.Publisher<T> publisher, List<String> violations) {
    publisher.subscribe(new Flow.Subscriber<T>() {
      @Override
      public void onSubscribe(Flow.Subscription subscription) {
        subscription.cancel();
      }

      @Override
      public void onNext(T item) {
        violations.add("onNext(" + item + ") without demand");
      }

      @Override
      public void onError(Throwable throwable) {
        violations.add("onError(" + throwable + ") after cancel");
      }

      @Override
      public void onComplete() {
        violations.add("onComplete() after cancel");
      }
    });
    return publisher;
  }
}
