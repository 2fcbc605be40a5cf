package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The tool definitions served by {@code tools/list}, loaded once from {@code tools.json} next to
 * the code, with every {@code $ref} inlined so each schema stands alone.
 */
public final class ToolCatalog {
  private static final String RESOURCE = "/dev/sandboxsdk/mcp/tools.json";
  private static final String REF_PREFIX = "#/$defs/";

  private final Map<String, ObjectNode> tools;
  private final ArrayNode listing;

  private ToolCatalog(Map<String, ObjectNode> tools, ArrayNode listing) {
    this.tools = tools;
    this.listing = listing;
  }

  public static ToolCatalog load() {
    JsonNode root;
    try (InputStream in = ToolCatalog.class.getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(RESOURCE + " is missing from the jar");
      }
      root = Json.MAPPER.readTree(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    JsonNode defs = root.get("$defs");
    Map<String, ObjectNode> tools = new LinkedHashMap<>();
    ArrayNode listing = Json.array();
    for (JsonNode t : root.get("tools")) {
      ObjectNode tool = (ObjectNode) inline(t, defs);
      tools.put(tool.get("name").asText(), tool);
      listing.add(tool);
    }
    return new ToolCatalog(Collections.unmodifiableMap(tools), listing);
  }

  /** Tool names in listing order. */
  public Iterable<String> names() {
    return tools.keySet();
  }

  /** The definition of {@code name}, or null. Callers must not modify it. */
  public ObjectNode get(String name) {
    return tools.get(name);
  }

  /** A fresh copy of the {@code tools} array for a {@code tools/list} result. */
  public ArrayNode listing() {
    return listing.deepCopy();
  }

  private static JsonNode inline(JsonNode node, JsonNode defs) {
    if (node.isObject()) {
      JsonNode ref = node.get("$ref");
      if (ref != null && ref.asText().startsWith(REF_PREFIX)) {
        JsonNode target = defs.get(ref.asText().substring(REF_PREFIX.length()));
        if (target == null) {
          throw new IllegalStateException("tools.json: unknown " + ref.asText());
        }
        return inline(target, defs);
      }
      ObjectNode copy = Json.object();
      for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> f = it.next();
        copy.set(f.getKey(), inline(f.getValue(), defs));
      }
      return copy;
    }
    if (node.isArray()) {
      ArrayNode copy = Json.array();
      node.forEach(e -> copy.add(inline(e, defs)));
      return copy;
    }
    return node;
  }
}
