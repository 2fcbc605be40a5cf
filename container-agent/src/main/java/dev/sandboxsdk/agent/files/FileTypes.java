package dev.sandboxsdk.agent.files;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/** Whether a file is text or binary, and its MIME type: by its name's extension, else by its first bytes. */
final class FileTypes {
  /** How much of a file decides whether it is text. */
  static final int SNIFF_BYTES = 8 * 1024;

  private FileTypes() {}

  private static final Map<String, String> MIME_BY_EXTENSION = Map.ofEntries(
      Map.entry("txt", "text/plain"), Map.entry("md", "text/markdown"), Map.entry("csv", "text/csv"),
      Map.entry("html", "text/html"), Map.entry("htm", "text/html"), Map.entry("css", "text/css"),
      Map.entry("js", "text/javascript"), Map.entry("mjs", "text/javascript"), Map.entry("ts", "text/typescript"),
      Map.entry("json", "application/json"), Map.entry("xml", "application/xml"), Map.entry("svg", "image/svg+xml"),
      Map.entry("yaml", "application/yaml"), Map.entry("yml", "application/yaml"), Map.entry("toml", "application/toml"),
      Map.entry("py", "text/x-python"), Map.entry("java", "text/x-java"), Map.entry("sh", "application/x-sh"),
      Map.entry("sql", "application/sql"), Map.entry("png", "image/png"), Map.entry("jpg", "image/jpeg"),
      Map.entry("jpeg", "image/jpeg"), Map.entry("gif", "image/gif"), Map.entry("webp", "image/webp"),
      Map.entry("pdf", "application/pdf"), Map.entry("zip", "application/zip"), Map.entry("gz", "application/gzip"),
      Map.entry("tar", "application/x-tar"), Map.entry("wasm", "application/wasm"), Map.entry("jar", "application/java-archive"));

  private static final Set<String> TEXT_APPLICATION_TYPES = Set.of("application/json", "application/xml",
      "application/yaml", "application/toml", "application/x-sh", "application/sql", "application/javascript");

  /** By extension; otherwise text/plain when the first bytes are UTF-8 without NUL, else application/octet-stream. */
  static String mimeType(String name, byte[] head, int length) {
    int dot = name.lastIndexOf('.');
    if (dot > 0) {
      String known = MIME_BY_EXTENSION.get(name.substring(dot + 1).toLowerCase(Locale.ROOT));
      if (known != null) {
        return known;
      }
    }
    int n = Math.min(length, SNIFF_BYTES);
    for (int i = 0; i < n; i++) {
      if (head[i] == 0) {
        return "application/octet-stream";
      }
    }
    return validUtf8Prefix(head, n, n == length) ? "text/plain" : "application/octet-stream";
  }

  static boolean isTextMime(String mime) {
    String subtype = mime.substring(mime.indexOf('/') + 1);
    return mime.startsWith("text/") || TEXT_APPLICATION_TYPES.contains(mime) || subtype.endsWith("+json")
        || subtype.endsWith("+xml");
  }

  static boolean validUtf8(byte[] bytes) {
    return validUtf8Prefix(bytes, bytes.length, true);
  }

  /** Whether {@code bytes[0, n)} is UTF-8; unless it is the whole file, a code point cut at the end is fine. */
  static boolean validUtf8Prefix(byte[] bytes, int n, boolean whole) {
    int end = n;
    if (!whole) {
      // Step back over a code point the sample may have cut (at most 3 bytes).
      int back = 0;
      while (back < 3 && end - back - 1 >= 0 && (bytes[end - back - 1] & 0xC0) == 0x80) {
        back++;
      }
      if (end - back - 1 >= 0 && (bytes[end - back - 1] & 0xC0) == 0xC0) {
        end = end - back - 1;
      }
    }
    try {
      StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes, 0, end));
      return true;
    } catch (CharacterCodingException e) {
      return false;
    }
  }
}
