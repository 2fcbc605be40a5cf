package dev.sandboxsdk.agent.egress;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The secrets file of {@code --egress-secrets FILE}: a JSON list of {@code {"name", "value",
 * "hosts": [...], "header"?}}, read once at start and checked strictly. Every error names the
 * entry and the field ({@code secrets[1].hosts[0]}) and never shows a value.
 */
public final class SecretsFile {
  /** The most secrets an agent holds. */
  public static final int MAX_SECRETS = 64;
  /** The most hosts one secret is bound to. */
  public static final int MAX_HOSTS = 32;
  /** The longest value: it must fit in a request head of 16 KiB with room to spare. */
  public static final int MAX_VALUE_CHARS = 4096;
  /** The largest file read. */
  public static final int MAX_FILE_BYTES = 1024 * 1024;
  private static final int MAX_NAME_CHARS = 128;
  private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");
  private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");
  private static final Set<String> FIELDS = Set.of("name", "value", "hosts", "header");
  /** Variables the agent sets itself, which a secret's name may not take. */
  private static final Set<String> RESERVED = Set.of("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
      "PATH", "HOME", "LANG", "TERM", "TMPDIR");
  /** Headers the proxy sets or drops itself, which a secret may not be bound to. */
  private static final Set<String> RESERVED_HEADERS = Set.of("host", "connection", "keep-alive", "proxy-authenticate",
      "proxy-authorization", "proxy-connection", "te", "trailer", "upgrade", "transfer-encoding", "content-length");
  private static final ObjectMapper JSON = new ObjectMapper()
      .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  private SecretsFile() {}

  /**
   * The secrets the JSON lists, each with a fresh placeholder.
   *
   * @throws IllegalArgumentException naming the entry and field at fault
   */
  public static EgressSecrets parse(byte[] json) {
    if (json.length > MAX_FILE_BYTES) {
      throw new IllegalArgumentException("larger than " + MAX_FILE_BYTES + " bytes");
    }
    JsonNode root;
    try {
      root = JSON.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("not valid JSON (line " + e.getLocation().getLineNr() + ")");
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("not valid JSON");
    }
    if (root == null || !root.isArray()) {
      throw new IllegalArgumentException("expected a JSON list of {\"name\", \"value\", \"hosts\", \"header\"?}");
    }
    if (root.size() > MAX_SECRETS) {
      throw new IllegalArgumentException("at most " + MAX_SECRETS + " secrets, got " + root.size());
    }
    List<EgressSecret> out = new ArrayList<>();
    Set<String> names = new HashSet<>();
    Set<String> values = new HashSet<>();
    for (int i = 0; i < root.size(); i++) {
      EgressSecret s = secret(root.get(i), "secrets[" + i + "]");
      if (!names.add(s.name())) {
        throw new IllegalArgumentException("secrets[" + i + "].name: duplicate name " + s.name());
      }
      if (!values.add(s.value())) {
        throw new IllegalArgumentException("secrets[" + i + "].value: the same value as an earlier secret");
      }
      out.add(s);
    }
    return EgressSecrets.of(out);
  }

  private static EgressSecret secret(JsonNode node, String at) {
    if (!node.isObject()) {
      throw new IllegalArgumentException(at + ": expected an object");
    }
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!FIELDS.contains(f)) {
        throw new IllegalArgumentException(at + "." + f + ": unknown field (name, value, hosts, header)");
      }
    }
    String name = name(text(node, "name", at), at + ".name");
    String value = value(text(node, "value", at), at + ".value");
    JsonNode hostsNode = node.get("hosts");
    if (hostsNode == null || !hostsNode.isArray() || hostsNode.isEmpty()) {
      throw new IllegalArgumentException(at + ".hosts: required, a non-empty list of host names");
    }
    if (hostsNode.size() > MAX_HOSTS) {
      throw new IllegalArgumentException(at + ".hosts: at most " + MAX_HOSTS + " hosts, got " + hostsNode.size());
    }
    List<EgressSecret.Host> hosts = new ArrayList<>();
    for (int j = 0; j < hostsNode.size(); j++) {
      JsonNode h = hostsNode.get(j);
      if (!h.isTextual()) {
        throw new IllegalArgumentException(at + ".hosts[" + j + "]: expected a string");
      }
      try {
        hosts.add(EgressSecret.Host.parse(h.asText()));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(at + ".hosts[" + j + "]: " + e.getMessage(), e);
      }
    }
    String header = null;
    if (node.has("header") && !node.get("header").isNull()) {
      header = header(text(node, "header", at), at + ".header");
    }
    return new EgressSecret(name, value, EgressSecrets.newPlaceholder(), hosts, header);
  }

  private static String text(JsonNode node, String field, String at) {
    JsonNode v = node.get(field);
    if (v == null || v.isNull()) {
      throw new IllegalArgumentException(at + "." + field + ": required");
    }
    if (!v.isTextual()) {
      throw new IllegalArgumentException(at + "." + field + ": expected a string");
    }
    return v.asText();
  }

  private static String name(String name, String at) {
    if (name.isEmpty() || name.length() > MAX_NAME_CHARS || !NAME.matcher(name).matches()) {
      throw new IllegalArgumentException(at + ": '" + clip(name) + "' is not a variable name ([A-Za-z_][A-Za-z0-9_]*,"
          + " at most " + MAX_NAME_CHARS + " characters)");
    }
    String upper = name.toUpperCase(Locale.ROOT);
    if (upper.startsWith("SANDBOX_") || RESERVED.contains(upper) || upper.endsWith("_CA_BUNDLE")
        || upper.endsWith("_CA_CERTS") || upper.equals("SSL_CERT_FILE") || upper.equals("GIT_SSL_CAINFO")) {
      throw new IllegalArgumentException(at + ": '" + name + "' is a variable the agent sets itself");
    }
    return name;
  }

  private static String value(String value, String at) {
    if (value.isEmpty()) {
      throw new IllegalArgumentException(at + ": empty");
    }
    if (value.length() > MAX_VALUE_CHARS) {
      throw new IllegalArgumentException(at + ": longer than " + MAX_VALUE_CHARS + " characters");
    }
    if (value.indexOf('\r') >= 0 || value.indexOf('\n') >= 0) {
      throw new IllegalArgumentException(at + ": contains CR or LF (it would split a header)");
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < 0x20 || c > 0x7e) {
        throw new IllegalArgumentException(at + ": contains a character outside printable ASCII (at index " + i + ")");
      }
    }
    if (value.startsWith(" ") || value.endsWith(" ")) {
      throw new IllegalArgumentException(at + ": starts or ends with a space (a header value would lose it)");
    }
    if (value.contains(EgressSecret.PLACEHOLDER_PREFIX)) {
      throw new IllegalArgumentException(at + ": contains '" + EgressSecret.PLACEHOLDER_PREFIX + "'");
    }
    return value;
  }

  private static String header(String header, String at) {
    if (!TOKEN.matcher(header).matches() || header.length() > MAX_NAME_CHARS) {
      throw new IllegalArgumentException(at + ": '" + clip(header) + "' is not a header name");
    }
    if (RESERVED_HEADERS.contains(header.toLowerCase(Locale.ROOT))) {
      throw new IllegalArgumentException(at + ": the proxy sets or drops " + header + " itself");
    }
    return header;
  }

  private static String clip(String s) {
    return s.length() > 64 ? s.substring(0, 64) + "..." : s;
  }
}
