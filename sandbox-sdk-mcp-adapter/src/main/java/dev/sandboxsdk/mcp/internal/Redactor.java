package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Replaces the values of passed-through secrets ({@code --pass-env}) with {@code [REDACTED:NAME]}
 * in everything the adapter hands to a client. Values shorter than {@link #MIN_LENGTH} are not
 * redacted (they would match ordinary text); the adapter warns about them at start.
 * Immutable and thread-safe.
 */
public final class Redactor {
  public static final int MIN_LENGTH = 4;

  private record Secret(String name, String value) {
  }

  private final List<Secret> secrets; // longest first, so a value containing another wins
  private final int maxLength;

  public Redactor(Map<String, String> vars) {
    List<Secret> s = new ArrayList<>();
    vars.forEach((name, value) -> {
      if (value.length() >= MIN_LENGTH) {
        s.add(new Secret(name, value));
      }
    });
    s.sort(Comparator.comparingInt((Secret x) -> x.value.length()).reversed());
    this.secrets = List.copyOf(s);
    this.maxLength = s.isEmpty() ? 0 : s.get(0).value.length();
  }

  public boolean isEmpty() {
    return secrets.isEmpty();
  }

  /** The length of the longest secret: how much text past a cut can hide the rest of one. */
  public int maxLength() {
    return maxLength;
  }

  public String redact(String text) {
    if (secrets.isEmpty() || text == null || text.isEmpty()) {
      return text;
    }
    String out = text;
    for (Secret s : secrets) {
      if (out.contains(s.value)) {
        out = out.replace(s.value, "[REDACTED:" + s.name + "]");
      }
    }
    return out;
  }

  /** A copy of {@code node} with every string value redacted. */
  public JsonNode redact(JsonNode node) {
    if (secrets.isEmpty()) {
      return node;
    }
    if (node.isTextual()) {
      String r = redact(node.asText());
      return r.equals(node.asText()) ? node : TextNode.valueOf(r);
    }
    if (node.isObject()) {
      ObjectNode copy = Json.object();
      for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> f = it.next();
        copy.set(redact(f.getKey()), redact(f.getValue()));
      }
      return copy;
    }
    if (node.isArray()) {
      ArrayNode copy = Json.array();
      node.forEach(e -> copy.add(redact(e)));
      return copy;
    }
    return node;
  }

  /**
   * Moves {@code cut} back so that no secret in {@code text} straddles it, so the kept part never
   * ends in the start of a secret. With {@code mayContinue}, text after {@code text.length()} may
   * still arrive, so a cut at the very end also keeps back a tail that could begin a secret.
   */
  public int safeCut(String text, int cut, boolean mayContinue) {
    int safe = cut;
    for (Secret s : secrets) {
      int len = s.value.length();
      for (int i = Math.max(0, cut - len + 1); i < cut; i++) {
        int visible = Math.min(len, text.length() - i);
        if ((visible == len || mayContinue) && text.regionMatches(i, s.value, 0, visible)) {
          safe = Math.min(safe, i);
          break;
        }
      }
    }
    return safe;
  }

  /** Redacts a text that arrives in chunks, holding back what may be the start of a secret. */
  public Stream stream() {
    return new Stream();
  }

  /** Per-stream state of {@link #stream()}; confined to one thread at a time. */
  public final class Stream {
    private String carry = "";

    /** Redacted text that is safe to hand out now; may be empty. */
    public String push(String chunk) {
      if (secrets.isEmpty()) {
        return chunk;
      }
      String pending = carry + chunk;
      int cut = safeCut(pending, pending.length(), true);
      carry = pending.substring(cut);
      return redact(pending.substring(0, cut));
    }

    /** The held-back rest, redacted. */
    public String flush() {
      String rest = carry;
      carry = "";
      return redact(rest);
    }
  }
}
