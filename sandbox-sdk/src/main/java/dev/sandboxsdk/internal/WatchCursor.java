package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.FileEvent;
import dev.sandboxsdk.FileEventType;
import java.time.Instant;
import java.time.format.DateTimeParseException;

/**
 * The events of {@code POST /api/watch} as {@link FileEvent}s. The stream has no natural end:
 * {@code stopped} (the directory went away, the agent stops) ends it cleanly, {@code error} with
 * the error its code names, and a connection that breaks before either is an error, as for every
 * stream. Relative paths are computed against the directory the {@code watching} event names.
 */
final class WatchCursor implements EventCursor<FileEvent> {
  private final SseCursor<JsonNode> events;
  private final String what;
  private String root;
  private boolean finished;

  WatchCursor(SseCursor<JsonNode> events, String what) {
    this.events = events;
    this.what = what;
  }

  static boolean isFinal(JsonNode event) {
    String type = event.path("type").asText();
    return type.equals("stopped") || type.equals("error");
  }

  @Override
  public FileEvent next() throws Exception {
    for (;;) {
      if (finished) {
        return null;
      }
      JsonNode n = events.next();
      if (n == null) {
        finished = true;
        return null;
      }
      switch (n.path("type").asText()) {
        case "watching":
          root = Wire.text(n, "path");
          return new FileEvent(FileEventType.WATCHING, "", root, true, timestamp(n));
        case "overflow":
          return new FileEvent(FileEventType.OVERFLOW, "", n.path("path").asText(root == null ? "" : root), true,
              timestamp(n));
        case "event": {
          FileEventType type = type(n.path("eventType").asText());
          if (type == null) {
            continue; // an event type this SDK does not know: newer agent
          }
          String path = Wire.text(n, "path");
          return new FileEvent(type, relative(path), path, n.path("isDirectory").asBoolean(false), timestamp(n));
        }
        case "stopped":
          finished = true;
          return null;
        case "error":
          finished = true;
          throw ErrorMapper.watchError(n, what);
        default:
          continue;
      }
    }
  }

  private static FileEventType type(String wire) {
    switch (wire) {
      case "create":
        return FileEventType.CREATE;
      case "modify":
        return FileEventType.MODIFY;
      case "delete":
        return FileEventType.DELETE;
      default:
        return null;
    }
  }

  private String relative(String path) {
    if (root != null && path.startsWith(root) && path.length() > root.length()) {
      int start = root.length() + (root.endsWith("/") ? 0 : 1);
      if (root.endsWith("/") || path.charAt(root.length()) == '/') {
        return path.substring(start);
      }
    }
    return path.equals(root) ? "" : path;
  }

  private static Instant timestamp(JsonNode n) {
    try {
      return Instant.parse(n.path("timestamp").asText());
    } catch (DateTimeParseException e) {
      return Instant.now(); // the agent always sends one; a stranger's agent need not
    }
  }

  @Override
  public boolean isFinished() {
    return finished;
  }

  @Override
  public void close() {
    events.close();
  }
}
