package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Replaces the values of passed-through secrets ({@code --pass-env}) with {@code [REDACTED:NAME]}
 * in everything the adapter hands to a client. Values shorter than {@link #MIN_LENGTH} are not
 * redacted (they would match ordinary text); the adapter warns about them at start.
 * Immutable and thread-safe.
 */
public final class Redactor {
  public static final int MIN_LENGTH = 4;
  /** Result fields whose values are the server's own vocabulary, never sandbox text. */
  private static final Set<String> VOCABULARY = Set.of("status", "mode", "signal", "type", "encoding");

  private record Secret(String name, String value) {
  }

  /** A secret occurrence that begins before a boundary and ends after it. */
  public record Straddle(int end, String marker) {
  }

  private final List<Secret> secrets; // longest first
  private final int maxLength;
  private final int maxBytes;

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
    this.maxBytes = s.stream().mapToInt(x -> x.value.getBytes(StandardCharsets.UTF_8).length).max().orElse(0);
  }

  public boolean isEmpty() {
    return secrets.isEmpty();
  }

  /** The length of the longest secret: how much text past a cut can hide the rest of one. */
  public int maxLength() {
    return maxLength;
  }

  /** The UTF-8 size of the longest secret: how far before an offset a secret can begin. */
  public int maxBytes() {
    return maxBytes;
  }

  /**
   * Replaces every occurrence of every secret. Overlapping occurrences (of one secret or of two)
   * are covered together by one marker naming each secret involved, so no part of either shows.
   */
  public String redact(String text) {
    if (secrets.isEmpty() || text == null || text.isEmpty()) {
      return text;
    }
    int n = text.length();
    int[] coverEnd = null; // coverEnd[i]: the end of the furthest-reaching occurrence starting at i
    String[] names = null;
    for (Secret s : secrets) {
      for (int i = text.indexOf(s.value); i >= 0; i = text.indexOf(s.value, i + 1)) {
        if (coverEnd == null) {
          coverEnd = new int[n];
          names = new String[n];
        }
        coverEnd[i] = Math.max(coverEnd[i], i + s.value.length());
        names[i] = names[i] == null ? s.name : names[i].contains(s.name) ? names[i] : names[i] + "," + s.name;
      }
    }
    if (coverEnd == null) {
      return text;
    }
    StringBuilder out = new StringBuilder(n);
    int i = 0;
    while (i < n) {
      if (coverEnd[i] == 0) {
        out.append(text.charAt(i++));
        continue;
      }
      Set<String> involved = new LinkedHashSet<>();
      int end = coverEnd[i];
      for (int j = i; j < end; j++) { // extend over occurrences that start inside this one
        if (coverEnd[j] > 0) {
          end = Math.max(end, coverEnd[j]);
          involved.addAll(List.of(names[j].split(",")));
        }
      }
      out.append("[REDACTED:").append(String.join(",", involved)).append(']');
      i = end;
    }
    return out.toString();
  }

  /**
   * A copy of {@code node} with every string value redacted, except the server's own vocabulary
   * (status, mode, signal). Field names are the server's and stay as they are.
   */
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
        copy.set(f.getKey(), VOCABULARY.contains(f.getKey()) ? f.getValue() : redact(f.getValue()));
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
    // Until no occurrence straddles the cut: moving it back can split an occurrence that ended at
    // the old cut ("aaaa" in "aaaabaaaa" cut back to 6 for the "aaa" that may continue), so check
    // again from the new one (RedactorPropertyTest found this).
    for (boolean moved = true; moved; ) {
      moved = false;
      for (Secret s : secrets) {
        int len = s.value.length();
        for (int i = Math.max(0, safe - len + 1); i < safe; i++) {
          int visible = Math.min(len, text.length() - i);
          if ((visible == len || mayContinue) && text.regionMatches(i, s.value, 0, visible)) {
            safe = i;
            moved = true;
            break;
          }
        }
      }
    }
    return safe;
  }

  /**
   * The secret occurrence in {@code text} that begins before {@code boundary} and ends furthest
   * after it, or null. Text shown from {@code boundary} on must skip to its end (a page that
   * starts inside a secret must not show the secret's tail).
   */
  public Straddle straddling(String text, int boundary) {
    Straddle best = null;
    for (Secret s : secrets) {
      int len = s.value.length();
      for (int i = Math.max(0, boundary - len + 1); i < boundary; i++) {
        if (i + len > boundary && text.regionMatches(i, s.value, 0, len)
            && (best == null || i + len > best.end)) {
          best = new Straddle(i + len, "[REDACTED:" + s.name + "]");
        }
      }
    }
    return best;
  }

  /**
   * The name of a secret whose UTF-8 bytes occur in {@code data[0, length)} overlapping
   * {@code data[from, to)}, or null. For bytes handed out as they are (base64), which cannot be
   * redacted without changing their size: the caller refuses them instead.
   */
  public String secretIn(byte[] data, int length, int from, int to) {
    for (Secret s : secrets) {
      byte[] v = s.value.getBytes(StandardCharsets.UTF_8);
      for (int i = Math.max(0, from - v.length + 1); i < to && i + v.length <= length; i++) {
        if (java.util.Arrays.equals(data, i, i + v.length, v, 0, v.length)) {
          return s.name;
        }
      }
    }
    return null;
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

    /**
     * Feeds text that came before what is to be shown, so a secret that starts in it and ends in
     * the shown text is still recognised; the text itself is not handed out.
     */
    public void prime(String context) {
      push(context);
    }

    /** The held-back rest, redacted. */
    public String flush() {
      String rest = carry;
      carry = "";
      return redact(rest);
    }
  }
}
