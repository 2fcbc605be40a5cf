package dev.sandboxsdk.agent.http;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.process.OutputBudget;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads request bodies strictly: a JSON object of known fields with the right types. Every
 * problem becomes a 400 (or 413) that names the field, never a 500.
 */
public final class Json {
  static final ObjectMapper MAPPER = JsonMapper.builder()
      .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
      // A body is one JSON object: without this, '{"command":"x"} junk' ran the command (HostileInputIT).
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .build();

  /** The deepest nesting of arrays and objects a request body may have. */
  static final int MAX_DEPTH = 64;

  static {
    MAPPER.getFactory().setStreamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH).build());
  }

  private final ObjectNode node;

  private Json(ObjectNode node) {
    this.node = node;
  }

  static ObjectNode object() {
    return MAPPER.createObjectNode();
  }

  /** Bodies up to this size are not charged to the budget: a busy budget must not refuse small requests. */
  static final int UNCHARGED_BODY_BYTES = 16 * 1024;

  /**
   * Reads at most {@code maxBytes} of body and parses it as a JSON object. A body larger than
   * {@value #UNCHARGED_BODY_BYTES} bytes is charged to {@code budget} while it is read and parsed
   * (twice its size: the bytes and the parsed tree), so many large bodies at once cannot exhaust
   * the heap; if the budget has no room the request is refused with 503.
   */
  public static Json read(HttpExchange exchange, int maxBytes, OutputBudget budget) throws IOException {
    long declaredLength = -1;
    String declared = exchange.getRequestHeaders().getFirst("Content-Length");
    if (declared != null) {
      try {
        declaredLength = Long.parseLong(declared.trim());
        if (declaredLength > maxBytes) {
          throw tooLarge(maxBytes);
        }
      } catch (NumberFormatException e) {
        throw new AgentException(ErrorCode.VALIDATION_FAILED, "invalid Content-Length header");
      }
    }
    long charge = declaredLength >= 0 && declaredLength <= UNCHARGED_BODY_BYTES ? 0
        : 2 * (declaredLength >= 0 ? declaredLength : maxBytes);
    if (charge > 0 && !budget.tryReserve(charge)) {
      // Read the body to its end without keeping it (it costs no memory, and the request deadline
      // bounds the time): a client still sending when the answer comes would otherwise get a
      // reset instead of the 503.
      discard(exchange.getRequestBody());
      throw new AgentException(ErrorCode.OUTPUT_BUDGET_EXHAUSTED, "the agent cannot take a request body of up to "
          + charge / 2 + " bytes now: its budget for buffered data (" + budget.limit() + " bytes, --output-budget-bytes)"
          + " is in use by output and other requests; retry later or send less",
          Map.of("budget", budget.limit(), "used", budget.used()));
    }
    try {
      return parse(exchange, maxBytes);
    } finally {
      budget.release(charge);
    }
  }

  private static Json parse(HttpExchange exchange, int maxBytes) throws IOException {
    return parse(readAtMost(exchange.getRequestBody(), maxBytes));
  }

  /**
   * Parses a whole request body as a JSON object. Every input either parses or throws an {@link
   * AgentException} that maps to 400 (the fuzz tests hold it to that).
   */
  public static Json parse(byte[] body) {
    if (body.length == 0) {
      throw new AgentException(ErrorCode.VALIDATION_FAILED, "request body is empty: send a JSON object");
    }
    JsonNode parsed;
    try {
      parsed = MAPPER.readTree(body);
    } catch (StreamConstraintsException e) {
      throw new AgentException(ErrorCode.VALIDATION_FAILED,
          "malformed JSON: arrays and objects nested deeper than " + MAX_DEPTH + " levels");
    } catch (JsonProcessingException e) {
      String detail = e.getOriginalMessage();
      if (detail.startsWith("Duplicate field")) {
        int end = detail.indexOf(" for ");
        detail = "duplicate field" + detail.substring("Duplicate field".length(), end > 0 ? end : detail.length());
      }
      JsonLocation at = e.getLocation();
      throw new AgentException(ErrorCode.VALIDATION_FAILED, "malformed JSON: " + detail
          + (at == null ? "" : " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")"));
    } catch (IOException e) {
      // Jackson detects UTF-16 and UTF-32 from the first bytes and throws CharConversionException
      // (an IOException, not a JsonProcessingException) for a code unit it cannot decode; found by
      // RequestDecodingFuzzTest. Such a body is malformed JSON like any other, not a broken connection.
      throw new AgentException(ErrorCode.VALIDATION_FAILED, "malformed JSON: " + e.getMessage());
    }
    if (parsed == null || !parsed.isObject()) {
      throw new AgentException(ErrorCode.VALIDATION_FAILED,
          "request body must be a JSON object, not " + (parsed == null ? "nothing" : parsed.getNodeType().name().toLowerCase()));
    }
    return new Json((ObjectNode) parsed);
  }

  private static void discard(InputStream in) throws IOException {
    byte[] sink = new byte[8192];
    while (in.read(sink) >= 0) {
      // the declared length was checked against --max-body-bytes; the request deadline bounds the time
    }
  }

  private static byte[] readAtMost(InputStream in, int maxBytes) throws IOException {
    byte[] data = in.readNBytes(maxBytes + 1);
    if (data.length > maxBytes) {
      throw tooLarge(maxBytes);
    }
    return data;
  }

  private static AgentException tooLarge(int maxBytes) {
    return new AgentException(ErrorCode.PAYLOAD_TOO_LARGE,
        "request body is larger than the agent's limit of " + maxBytes + " bytes (--max-body-bytes)",
        Map.of("limit", maxBytes));
  }

  /**
   * Rejects fields this endpoint does not know, so a typo never silently does nothing.
   *
   * @return this
   * @throws AgentException VALIDATION_FAILED naming the first unknown field
   */
  public Json allowOnly(Set<String> allowed) {
    Iterator<String> names = node.fieldNames();
    while (names.hasNext()) {
      String name = names.next();
      if (!allowed.contains(name)) {
        throw AgentException.invalid(name, "unknown field '" + name + "'; allowed: " + new java.util.TreeSet<>(allowed));
      }
    }
    return this;
  }

  /** Whether the body has the field {@code name} (with any value, null included). */
  public boolean has(String name) {
    return node.has(name);
  }

  /**
   * The string field {@code name}, or null when absent or null.
   *
   * @throws AgentException VALIDATION_FAILED if it is another type
   */
  public String string(String name) {
    JsonNode v = node.get(name);
    if (v == null || v.isNull()) {
      return null;
    }
    if (!v.isTextual()) {
      throw wrongType(name, "a string", v);
    }
    return v.textValue();
  }

  /**
   * The boolean field {@code name}, or null when absent or null.
   *
   * @throws AgentException VALIDATION_FAILED if it is another type
   */
  public Boolean bool(String name) {
    JsonNode v = node.get(name);
    if (v == null || v.isNull()) {
      return null;
    }
    if (!v.isBoolean()) {
      throw wrongType(name, "true or false", v);
    }
    return v.booleanValue();
  }

  /**
   * The integer field {@code name}, or null when absent or null.
   *
   * @throws AgentException VALIDATION_FAILED if it is not an integer from {@code min} to {@code max}
   */
  public Long integer(String name, long min, long max) {
    return integer(name, min, max, name);
  }

  /** As {@link #integer(String, long, long)}, naming the field {@code shown} in the error (a nested field's path). */
  public Long integer(String name, long min, long max, String shown) {
    JsonNode v = node.get(name);
    if (v == null || v.isNull()) {
      return null;
    }
    if (!v.isIntegralNumber() || !v.canConvertToLong() || v.longValue() < min || v.longValue() > max) {
      throw AgentException.invalid(shown, "'" + shown + "' must be an integer from " + min + " to " + max
          + ", got " + describe(v));
    }
    return v.longValue();
  }

  /**
   * A nested JSON object, read with the same strictness, or null when absent.
   *
   * @throws AgentException VALIDATION_FAILED if it is another type
   */
  public Json object(String name) {
    JsonNode v = node.get(name);
    if (v == null || v.isNull()) {
      return null;
    }
    if (!v.isObject()) {
      throw wrongType(name, "an object", v);
    }
    return new Json((ObjectNode) v);
  }

  /**
   * The array-of-strings field {@code name}, or null when absent or null.
   *
   * @throws AgentException VALIDATION_FAILED if it is another type or holds a non-string
   */
  public List<String> stringList(String name) {
    JsonNode v = node.get(name);
    if (v == null || v.isNull()) {
      return null;
    }
    if (!v.isArray()) {
      throw wrongType(name, "an array of strings", v);
    }
    List<String> out = new ArrayList<>(v.size());
    for (JsonNode item : v) {
      if (!item.isTextual()) {
        throw wrongType(name, "an array of strings", v);
      }
      out.add(item.textValue());
    }
    return out;
  }

  /**
   * A JSON object of string values, empty when absent; a null value is kept (it means "unset").
   *
   * @throws AgentException VALIDATION_FAILED if it is another type or holds a value that is neither
   */
  public Map<String, String> stringMap(String name) {
    JsonNode v = node.get(name);
    if (v == null || v.isNull()) {
      return Map.of();
    }
    if (!v.isObject()) {
      throw wrongType(name, "an object of string values", v);
    }
    Map<String, String> out = new LinkedHashMap<>();
    Iterator<Map.Entry<String, JsonNode>> fields = v.fields();
    while (fields.hasNext()) {
      Map.Entry<String, JsonNode> e = fields.next();
      JsonNode value = e.getValue();
      if (!value.isTextual() && !value.isNull()) {
        throw AgentException.invalid(name, "'" + name + "." + e.getKey() + "' must be a string or null, got " + describe(value));
      }
      out.put(e.getKey(), value.isNull() ? null : value.textValue());
    }
    return out;
  }

  private static AgentException wrongType(String name, String expected, JsonNode got) {
    return AgentException.invalid(name, "'" + name + "' must be " + expected + ", got " + describe(got));
  }

  private static String describe(JsonNode v) {
    String type = v.getNodeType().name().toLowerCase();
    if (v.isValueNode()) {
      String text = v.toString();
      return type + " " + (text.length() > 40 ? text.substring(0, 40) + "..." : text);
    }
    return type;
  }
}
