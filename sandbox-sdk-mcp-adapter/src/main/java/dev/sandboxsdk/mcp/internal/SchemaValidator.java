package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Checks a JSON value against the subset of JSON Schema our tool schemas use: {@code type}
 * (one or a list), {@code properties}, {@code required}, {@code additionalProperties},
 * {@code enum}, {@code minimum}, {@code maximum}, {@code exclusiveMinimum}, {@code minLength},
 * {@code pattern}, {@code items} and {@code minItems}. Any other keyword is ignored, so a schema
 * must not rely on one; {@code ToolCatalogTest} keeps our schemas inside the subset.
 */
public final class SchemaValidator {
  /** The keywords {@link #validate} understands; annotations such as description are allowed too. */
  public static final List<String> KEYWORDS = List.of("type", "properties", "required", "additionalProperties",
      "enum", "minimum", "maximum", "exclusiveMinimum", "minLength", "pattern", "items", "minItems");

  private static final Map<String, Pattern> PATTERNS = new java.util.concurrent.ConcurrentHashMap<>();

  private SchemaValidator() {
  }

  /** Every violation, each as "path: what is wrong"; empty when {@code value} matches. */
  public static List<String> validate(JsonNode schema, JsonNode value) {
    List<String> problems = new ArrayList<>();
    check(schema, value, ROOT, problems);
    return problems;
  }

  private static final Where ROOT = new Where(null, "arguments", -1);

  /**
   * Where a value is, spelled out only for a problem: a valid call (nearly every call) builds no
   * path strings. {@code key} for a property, {@code index} (with a null key) for an array item.
   */
  private record Where(Where parent, String key, int index) {
    Where property(String name) {
      return new Where(this, name, -1);
    }

    Where item(int i) {
      return new Where(this, null, i);
    }

    @Override
    public String toString() {
      if (parent == null) {
        return key;
      }
      return key != null ? parent + "." + shown(key) : parent + "[" + index + "]";
    }
  }

  private static void check(JsonNode schema, JsonNode v, Where path, List<String> out) {
    JsonNode type = schema.get("type");
    if (type != null && !typeMatches(type, v)) {
      out.add(path + ": expected " + (type.isArray() ? join(type) : type.asText()) + ", got " + describe(v));
      return;
    }
    JsonNode en = schema.get("enum");
    if (en != null && !contains(en, v)) {
      out.add(path + ": must be one of " + join(en) + ", got " + describe(v));
    }
    if (v.isNumber()) {
      if (schema.has("minimum") && v.decimalValue().compareTo(schema.get("minimum").decimalValue()) < 0) {
        out.add(path + ": must be at least " + schema.get("minimum") + ", got " + shown(v.toString()));
      }
      if (schema.has("exclusiveMinimum")
          && v.decimalValue().compareTo(schema.get("exclusiveMinimum").decimalValue()) <= 0) {
        out.add(path + ": must be greater than " + schema.get("exclusiveMinimum") + ", got " + shown(v.toString()));
      }
      if (schema.has("maximum") && v.decimalValue().compareTo(schema.get("maximum").decimalValue()) > 0) {
        out.add(path + ": must be at most " + schema.get("maximum") + ", got " + shown(v.toString()));
      }
    }
    if (v.isTextual()) {
      if (schema.has("minLength") && v.asText().codePointCount(0, v.asText().length()) < schema.get("minLength").asInt()) {
        out.add(path + ": must not be empty");
      }
      if (schema.has("pattern") && !pattern(schema.get("pattern").asText()).matcher(v.asText()).find()) {
        out.add(path + ": '" + shown(v.asText()) + "' does not match " + schema.get("pattern").asText());
      }
    }
    if (v.isArray()) {
      if (schema.has("minItems") && v.size() < schema.get("minItems").asInt()) {
        out.add(path + ": needs at least " + schema.get("minItems").asInt() + " item(s)");
      }
      JsonNode items = schema.get("items");
      if (items != null) {
        for (int i = 0; i < v.size(); i++) {
          check(items, v.get(i), path.item(i), out);
        }
      }
    }
    if (v.isObject()) {
      JsonNode required = schema.get("required");
      if (required != null) {
        for (JsonNode r : required) {
          if (!v.has(r.asText())) {
            out.add(path + ": missing required property '" + r.asText() + "'");
          }
        }
      }
      JsonNode props = schema.get("properties");
      JsonNode additional = schema.get("additionalProperties");
      for (Iterator<Map.Entry<String, JsonNode>> it = v.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> f = it.next();
        JsonNode sub = props != null ? props.get(f.getKey()) : null;
        if (sub != null) {
          check(sub, f.getValue(), path.property(f.getKey()), out);
        } else if (additional != null && additional.isBoolean() && !additional.asBoolean()) {
          out.add(path + ": unknown property '" + shown(f.getKey()) + "'"
              + (props != null ? " (allowed: " + String.join(", ", fieldNames(props)) + ")" : ""));
        } else if (additional != null && additional.isObject()) {
          check(additional, f.getValue(), path.property(f.getKey()), out);
        }
      }
    }
  }

  /**
   * JSON Schema patterns are ECMA-262 regexes, where {@code $} matches only at the very end; in
   * Java it also matches before a final newline, so a trailing {@code $} becomes {@code \z}.
   */
  private static Pattern pattern(String regex) {
    return PATTERNS.computeIfAbsent(regex, r -> Pattern.compile(
        r.endsWith("$") && !r.endsWith("\\$") ? r.substring(0, r.length() - 1) + "\\z" : r));
  }

  private static boolean typeMatches(JsonNode type, JsonNode v) {
    if (type.isArray()) {
      for (JsonNode t : type) {
        if (isType(t.asText(), v)) {
          return true;
        }
      }
      return false;
    }
    return isType(type.asText(), v);
  }

  private static boolean isType(String type, JsonNode v) {
    return switch (type) {
      case "object" -> v.isObject();
      case "array" -> v.isArray();
      case "string" -> v.isTextual();
      case "boolean" -> v.isBoolean();
      case "null" -> v.isNull();
      case "number" -> v.isNumber();
      case "integer" -> v.isIntegralNumber()
          || v.isNumber() && v.decimalValue().stripTrailingZeros().scale() <= 0;
      default -> throw new IllegalArgumentException("schema uses unsupported type " + type);
    };
  }

  private static boolean contains(JsonNode values, JsonNode v) {
    for (JsonNode e : values) {
      if (e.equals(v)) {
        return true;
      }
    }
    return false;
  }

  private static List<String> fieldNames(JsonNode o) {
    List<String> names = new ArrayList<>();
    o.fieldNames().forEachRemaining(names::add);
    return names;
  }

  private static String join(JsonNode values) {
    List<String> s = new ArrayList<>();
    values.forEach(e -> s.add(e.isTextual() ? e.asText() : e.toString()));
    return String.join(", ", s);
  }

  /**
   * A value as an error message shows it: at most 64 characters and a count, so that an argument
   * of a megabyte does not come back whole in the error the model reads.
   */
  static String shown(String s) {
    if (s.length() <= 64) {
      return s;
    }
    int cut = Character.isHighSurrogate(s.charAt(63)) ? 63 : 64;
    return s.substring(0, cut) + "... (" + s.length() + " characters)";
  }

  private static String describe(JsonNode v) {
    if (v.isNull()) {
      return "null";
    }
    if (v.isTextual()) {
      return "a string";
    }
    if (v.isNumber()) {
      return "the number " + shown(v.toString());
    }
    return v.isObject() ? "an object" : v.isArray() ? "an array" : v.isBoolean() ? "a boolean" : v.getNodeType().toString();
  }
}
