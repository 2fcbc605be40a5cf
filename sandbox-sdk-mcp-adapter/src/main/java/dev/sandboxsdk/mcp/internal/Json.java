package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;

/** The adapter's one Jackson mapper and small tree helpers. */
public final class Json {
  /** Deepest nesting accepted; deeper input is a parse error (no MCP message needs more). */
  public static final int MAX_DEPTH = 64;
  public static final ObjectMapper MAPPER = new ObjectMapper(JsonFactory.builder()
      .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH).build())
      // {"id":1,"id":2} is a parse error rather than "the last wins": which request would the answer be to?
      .enable(com.fasterxml.jackson.core.StreamReadFeature.STRICT_DUPLICATE_DETECTION)
      .build())
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);

  private Json() {
  }

  public static ObjectNode object() {
    return JsonNodeFactory.instance.objectNode();
  }

  public static ArrayNode array() {
    return JsonNodeFactory.instance.arrayNode();
  }

  /** Parses one JSON text; a syntax error is an {@link IllegalArgumentException} with Jackson's message. */
  public static JsonNode parse(String text) {
    try {
      JsonNode node = MAPPER.readTree(text);
      if (node == null || node.isMissingNode()) {
        throw new IllegalArgumentException("no JSON value (the text is empty)");
      }
      return node;
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(e.getOriginalMessage(), e);
    }
  }

  /** Compact JSON on one line: control characters, including newlines, are always escaped. */
  public static String write(JsonNode node) {
    try {
      return MAPPER.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * A copy of {@code node} (sharing its values) that serialises as {@code json}, which must be
   * {@link #write}'s text of it: a tool result's {@code structuredContent} is also sent as its JSON
   * text, so that text, made once, is written for the object too instead of walking it again. Only
   * for character output, as {@link #write} makes: a generator writing UTF-8 bytes would refuse a
   * lone surrogate in raw text, which it writes as an escape in a string.
   */
  public static ObjectNode serialized(ObjectNode node, String json) {
    Map<String, JsonNode> fields = new LinkedHashMap<>();
    node.properties().forEach(e -> fields.put(e.getKey(), e.getValue()));
    return new Serialized(fields, json);
  }

  /** See {@link #serialized}. Its fields must not be changed: the JSON would no longer match them. */
  private static final class Serialized extends ObjectNode {
    private static final long serialVersionUID = 1L;
    private final String json;

    Serialized(Map<String, JsonNode> fields, String json) {
      super(JsonNodeFactory.instance, fields);
      this.json = json;
    }

    @Override
    public void serialize(JsonGenerator g, SerializerProvider provider) throws IOException {
      g.writeRawValue(json);
    }
  }
}
