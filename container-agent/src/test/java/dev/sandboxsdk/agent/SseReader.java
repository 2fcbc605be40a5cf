package dev.sandboxsdk.agent;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** Reads server-sent events from a response, one event per call; counts keep-alive comments. */
final class SseReader implements AutoCloseable {
  final HttpResponse<InputStream> response;
  private final BufferedReader reader;
  int comments;

  SseReader(HttpResponse<InputStream> response) {
    this.response = response;
    this.reader = new BufferedReader(new InputStreamReader(response.body(), StandardCharsets.UTF_8), 256 * 1024);
  }

  int status() {
    return response.statusCode();
  }

  /** The next event, or null at the end of the stream. */
  JsonNode next() {
    try {
      String data = null;
      String line;
      while ((line = reader.readLine()) != null) {
        if (line.isEmpty()) {
          if (data != null) {
            return TestAgent.JSON.readTree(data);
          }
        } else if (line.startsWith(":")) {
          comments++;
        } else if (line.startsWith("data: ")) {
          data = data == null ? line.substring(6) : data + "\n" + line.substring(6);
        } else {
          throw new IllegalStateException("unexpected SSE line: " + line);
        }
      }
      return null;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** All remaining events up to the end of the stream. */
  List<JsonNode> rest() {
    List<JsonNode> events = new ArrayList<>();
    for (JsonNode e = next(); e != null; e = next()) {
      events.add(e);
    }
    return events;
  }

  /** Reads the raw error body when the stream was refused with a JSON error. */
  JsonNode errorBody() {
    try {
      return TestAgent.JSON.readTree(response.body().readAllBytes());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() {
    try {
      response.body().close();
    } catch (IOException ignored) {
      // closing is how a test hangs up
    }
  }
}
