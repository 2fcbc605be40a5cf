package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * What a tool produced: structured content (matching the tool's outputSchema) or only a message,
 * and whether it is an error result the model should act on.
 *
 * @param structured the structuredContent, or null for a plain error message
 * @param message text shown before the JSON, or alone when there is no structured content; may be null
 * @param isError whether the result is a tool error ({@code isError: true})
 * @param images images after the text content (a chart of runCode), base64
 */
public record ToolOutcome(ObjectNode structured, String message, boolean isError, List<Image> images) {

  /** An image the model should see, sent as MCP image content after the text. */
  public record Image(String mimeType, String base64) {
  }

  public ToolOutcome {
    images = List.copyOf(images);
  }

  public ToolOutcome(ObjectNode structured, String message, boolean isError) {
    this(structured, message, isError, List.of());
  }

  public static ToolOutcome ok(ObjectNode structured) {
    return new ToolOutcome(structured, null, false);
  }

  public static ToolOutcome error(String message) {
    return new ToolOutcome(null, message, true);
  }

  /** An error that still carries the tool's structured result (a failed command's output). */
  public static ToolOutcome error(ObjectNode structured) {
    return new ToolOutcome(structured, null, true);
  }
}
