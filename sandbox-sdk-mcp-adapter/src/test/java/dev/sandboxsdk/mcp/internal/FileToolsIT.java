package dev.sandboxsdk.mcp.internal;

import static dev.sandboxsdk.mcp.internal.McpTestClient.args;
import static dev.sandboxsdk.mcp.internal.McpTestClient.isError;
import static dev.sandboxsdk.mcp.internal.McpTestClient.sc;
import static dev.sandboxsdk.mcp.internal.McpTestClient.text;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** The file tools against a real local sandbox: a real agent and its real workspace. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FileToolsIT {
  private McpTestClient mcp;

  @BeforeAll
  void start() {
    mcp = McpTestClient.initialized(AdapterConfig.defaults());
  }

  @AfterAll
  void stop() {
    mcp.call("destroy", args("force", true));
    mcp.close();
  }

  @Test
  void textWrittenIsReadBackAsTextAndCommandsSeeIt() {
    String content = "line one\nzwei: ä ö ü\nemoji: \uD83D\uDE00\n";
    JsonNode w = mcp.call("writeFile", args("path", "text/notes.txt", "content", content));
    assertThat(isError(w)).as("%s", w).isFalse();
    assertThat(sc(w).get("bytesWritten").asInt()).isEqualTo(content.getBytes(StandardCharsets.UTF_8).length);

    JsonNode r = mcp.call("readFile", args("path", "text/notes.txt"));
    assertThat(sc(r).get("encoding").asText()).isEqualTo("utf-8");
    assertThat(sc(r).get("content").asText()).isEqualTo(content);
    assertThat(sc(r).get("more").asBoolean()).isFalse();
    assertThat(sc(r).get("size").asLong()).isEqualTo(content.getBytes(StandardCharsets.UTF_8).length);
    assertThat(sc(r).has("note")).isFalse();
    assertThat(sc(mcp.call("exec", args("command", "wc -l < text/notes.txt"))).get("stdout").asText()).isEqualTo("3\n");
  }

  @Test
  void binaryRoundTripsByteExactThroughBase64() {
    byte[] bytes = new byte[3000];
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] = (byte) (i * 31 + 7);
    }
    String b64 = Base64.getEncoder().encodeToString(bytes);
    // wrapped in lines, as models write long base64
    String wrapped = b64.replaceAll("(.{76})", "$1\n");
    JsonNode w = mcp.call("writeFile", args("path", "bin/data.bin", "content", wrapped, "encoding", "base64"));
    assertThat(sc(w).get("bytesWritten").asInt()).isEqualTo(3000);

    JsonNode r = mcp.call("readFile", args("path", "bin/data.bin"));
    assertThat(sc(r).get("encoding").asText()).isEqualTo("base64");
    assertThat(Base64.getDecoder().decode(sc(r).get("content").asText())).isEqualTo(bytes);
    assertThat(sc(r).get("note").asText()).contains("not UTF-8 text");
    assertThat(sc(mcp.call("exec", args("command", "cksum < bin/data.bin"))).get("stdout").asText())
        .isEqualTo(sc(mcp.call("exec", args("command", "printf '%s' '" + b64 + "' | base64 -d | cksum")))
            .get("stdout").asText());

    JsonNode forced = mcp.call("readFile", args("path", "bin/data.bin",
        "encoding", "utf-8", "length", 10));
    assertThat(sc(forced).get("encoding").asText()).isEqualTo("utf-8");
    JsonNode asBase64 = mcp.call("readFile", args("path", "bin/data.bin", "encoding", "base64", "offset", 2990));
    assertThat(Base64.getDecoder().decode(sc(asBase64).get("content").asText()))
        .isEqualTo(java.util.Arrays.copyOfRange(bytes, 2990, 3000));
  }

  @Test
  void aLargeFileIsReadInCappedPagesWithANoteSayingWhereToGoOn() {
    // 5 MiB of numbered lines, made in the sandbox
    mcp.call("exec", args("command", "mkdir -p big && seq -f '%07g' 0 655359 > big/lines.txt"));
    long size = 655_360L * 8;
    JsonNode first = mcp.call("readFile", args("path", "big/lines.txt"));
    assertThat(sc(first).get("size").asLong()).isEqualTo(size);
    assertThat(sc(first).get("offset").asLong()).isZero();
    assertThat(sc(first).get("nextOffset").asLong()).isEqualTo(16384); // the server's default limit
    assertThat(sc(first).get("content").asText()).hasSize(16384).startsWith("0000000\n0000001\n");
    assertThat(sc(first).get("more").asBoolean()).isTrue();
    assertThat(sc(first).get("note").asText()).contains("bytes 0 to 16384 of " + size)
        .contains("readFile offset 16384");

    long from = 3L * 1024 * 1024 + 4; // inside a line
    long t0 = System.nanoTime();
    JsonNode mid = mcp.call("readFile", args("path", "big/lines.txt", "offset", from, "length", 20));
    System.err.printf("[it] readFile of 20 bytes at offset %d of a %d-byte file took %d ms%n", from, size,
        (System.nanoTime() - t0) / 1_000_000);
    assertThat(sc(mid).get("offset").asLong()).isEqualTo(from);
    assertThat(sc(mid).get("nextOffset").asLong()).isEqualTo(from + 20);
    long line = from / 8;
    String expected = String.format("%07d\n%07d\n%07d\n%07d\n", line, line + 1, line + 2, line + 3).substring(4, 24);
    assertThat(sc(mid).get("content").asText()).isEqualTo(expected);

    JsonNode last = mcp.call("readFile", args("path", "big/lines.txt", "offset", size - 8));
    assertThat(sc(last).get("content").asText()).isEqualTo("0655359\n");
    assertThat(sc(last).get("more").asBoolean()).isFalse();
    assertThat(sc(last).has("note")).isFalse();

    JsonNode past = mcp.call("readFile", args("path", "big/lines.txt", "offset", size + 100));
    assertThat(isError(past)).isFalse();
    assertThat(sc(past).get("content").asText()).isEmpty();
    assertThat(sc(past).get("note").asText()).contains("past the end");
  }

  @Test
  void pagingThroughMultiByteTextNeverSplitsACharacterAndLosesNothing() {
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < 400; i++) {
      s.append("ä€\uD83D\uDE00x");
    }
    mcp.call("writeFile", args("path", "utf8/mixed.txt", "content", s.toString()));
    StringBuilder read = new StringBuilder();
    long offset = 0;
    int pages = 0;
    boolean more = true;
    while (more) {
      JsonNode r = sc(mcp.call("readFile", args("path", "utf8/mixed.txt", "offset", offset, "length", 97)));
      assertThat(r.get("encoding").asText()).isEqualTo("utf-8");
      long bytes = r.get("nextOffset").asLong() - offset;
      if (r.get("more").asBoolean()) { // a page ends before the character the cap would cut
        assertThat(bytes).isBetween(94L, 97L);
      }
      assertThat(r.get("content").asText()).doesNotContain("\uFFFD");
      read.append(r.get("content").asText());
      offset = r.get("nextOffset").asLong();
      more = r.get("more").asBoolean();
      pages++;
    }
    assertThat(read.toString()).isEqualTo(s.toString());
    assertThat(pages).isGreaterThanOrEqualTo(42); // 4000 bytes in pages of at most 97

    JsonNode inside = sc(mcp.call("readFile", args("path", "utf8/mixed.txt", "offset", 1, "length", 8)));
    assertThat(inside.get("offset").asLong()).isEqualTo(2);
    assertThat(inside.get("content").asText()).startsWith("€");
    assertThat(inside.get("note").asText()).contains("inside a UTF-8 character");
  }

  @Test
  void aListingOfLongPathsIsCutAtItsCharacterBudgetWhateverMaxEntriesSays() {
    // 14 nested directories of 200 characters, then 400 files of 200 characters: each entry's path
    // is about 3,000 characters, so 10,000 entries would be a result of tens of megabytes.
    String seg = "d".repeat(200);
    mcp.call("exec", args("command", "p=long; for i in $(seq 1 14); do p=$p/" + seg + "; done; mkdir -p $p && cd $p"
        + " && for i in $(seq 1 400); do : > $(printf 'f%03d' $i)" + "x".repeat(196) + "; done"));
    JsonNode r = sc(mcp.call("listFiles", args("path", "long", "recursive", true, "maxEntries", 10000)));
    assertThat(r.get("count").asInt()).isEqualTo(414);
    assertThat(r.get("truncated").asBoolean()).isTrue();
    long chars = 0;
    for (JsonNode e : r.get("entries")) {
      chars += e.get("name").asText().length() + e.get("path").asText().length();
    }
    assertThat(chars).isLessThanOrEqualTo(FileTools.MAX_LISTING_CHARS).isGreaterThan(FileTools.MAX_LISTING_CHARS / 2);
    assertThat(r.get("note").asText()).contains("of 414 entries").contains("characters of names and paths")
        .doesNotContain("larger maxEntries");
  }

  @Test
  void listFilesIsRecursiveOnRequestHidesDotFilesAndCapsItsEntries() {
    mcp.call("writeFile", args("path", "tree/a.txt", "content", "a"));
    mcp.call("writeFile", args("path", "tree/sub/b.txt", "content", "bb"));
    mcp.call("writeFile", args("path", "tree/.hidden", "content", "h"));
    mcp.call("mkdir", args("path", "tree/empty/deeper"));

    JsonNode flat = sc(mcp.call("listFiles", args("path", "tree")));
    assertThat(names(flat)).containsExactly("a.txt", "empty", "sub");
    assertThat(flat.get("count").asInt()).isEqualTo(3);
    assertThat(flat.get("truncated").asBoolean()).isFalse();
    JsonNode a = flat.get("entries").get(0);
    assertThat(a.get("type").asText()).isEqualTo("file");
    assertThat(a.get("size").asLong()).isEqualTo(1);
    assertThat(a.get("mode").asText()).isEqualTo("0644");

    JsonNode all = sc(mcp.call("listFiles", args("path", "tree", "recursive", true, "includeHidden", true)));
    List<String> paths = new ArrayList<>();
    all.get("entries").forEach(e -> paths.add(e.get("path").asText()));
    assertThat(paths).containsExactly(".hidden", "a.txt", "empty", "empty/deeper", "sub", "sub/b.txt");

    JsonNode capped = sc(mcp.call("listFiles", args("path", "tree", "recursive", true, "maxEntries", 2)));
    assertThat(capped.get("entries")).hasSize(2);
    assertThat(capped.get("count").asInt()).isEqualTo(5);
    assertThat(capped.get("truncated").asBoolean()).isTrue();
    assertThat(capped.get("note").asText()).contains("first 2 of 5").contains("maxEntries");

    assertThat(names(sc(mcp.call("listFiles", args())))).as("default: the workspace").contains("tree");

    JsonNode notDir = mcp.call("listFiles", args("path", "tree/a.txt"));
    assertThat(isError(notDir)).isTrue();
    assertThat(text(notDir)).contains("is a file, not a directory").contains("readFile");
  }

  private static List<String> names(JsonNode listing) {
    List<String> names = new ArrayList<>();
    listing.get("entries").forEach(e -> names.add(e.get("name").asText()));
    return names;
  }

  @Test
  void missingFilesAndDirectoriesGiveErrorsThatSayWhatToDo() {
    JsonNode missing = mcp.call("readFile", args("path", "nope/missing.txt"));
    assertThat(isError(missing)).isTrue();
    assertThat(sc(missing)).isNull();
    assertThat(text(missing)).contains("Not found: 'nope/missing.txt' in sandbox 'default'").contains("listFiles");

    mcp.call("mkdir", args("path", "dir/inner"));
    JsonNode dir = mcp.call("readFile", args("path", "dir"));
    assertThat(isError(dir)).isTrue();
    assertThat(text(dir)).contains("'dir' is a directory").contains("listFiles");
    JsonNode del = mcp.call("deleteFile", args("path", "dir"));
    assertThat(isError(del)).isTrue();
    assertThat(text(del)).contains("recursive: true");
    JsonNode write = mcp.call("writeFile", args("path", "dir", "content", "x"));
    assertThat(isError(write)).isTrue();
    assertThat(text(write)).contains("'dir' is a directory");
  }

  @Test
  void pathsOutsideTheWorkspaceAreRefused() {
    for (String path : List.of("../../etc/passwd", "/etc/passwd")) {
      JsonNode r = mcp.call("readFile", args("path", path));
      assertThat(isError(r)).as(path).isTrue();
      assertThat(text(r)).contains("Not allowed").contains("workspace").doesNotContain("root:");
    }
    mcp.call("exec", args("command", "ln -sfn /etc escape-link"));
    JsonNode viaLink = mcp.call("readFile", args("path", "escape-link/passwd"));
    assertThat(isError(viaLink)).isTrue();
    assertThat(text(viaLink)).contains("Not allowed").doesNotContain("root:");
    assertThat(isError(mcp.call("writeFile", args("path", "../outside.txt", "content", "x")))).isTrue();
    assertThat(isError(mcp.call("deleteFile", args("path", "../", "recursive", true)))).isTrue();
    assertThat(isError(mcp.call("fileExists", args("path", "../../etc/passwd")))).isTrue();
  }

  @Test
  void mkdirMoveRenameDeleteExistsAndStatDoWhatTheySay() {
    assertThat(isError(mcp.call("mkdir", args("path", "ops/a/b")))).isFalse();
    assertThat(isError(mcp.call("mkdir", args("path", "ops/a/b")))).as("again: no error").isFalse();
    mcp.call("writeFile", args("path", "ops/a/b/f.txt", "content", "data"));
    JsonNode moved = mcp.call("moveFile", args("from", "ops/a/b/f.txt", "to", "ops/g.txt"));
    assertThat(isError(moved)).as("%s", moved).isFalse();
    assertThat(sc(mcp.call("fileExists", args("path", "ops/a/b/f.txt"))).get("exists").asBoolean()).isFalse();
    assertThat(sc(mcp.call("fileExists", args("path", "ops/g.txt"))).get("exists").asBoolean()).isTrue();
    assertThat(isError(mcp.call("renameFile", args("from", "ops/g.txt", "to", "ops/h.txt")))).isFalse();
    assertThat(sc(mcp.call("readFile", args("path", "ops/h.txt"))).get("content").asText()).isEqualTo("data");

    JsonNode st = sc(mcp.call("statFile", args("path", "ops/h.txt")));
    assertThat(st.get("type").asText()).isEqualTo("file");
    assertThat(st.get("size").asLong()).isEqualTo(4);
    assertThat(st.get("mode").asText()).isEqualTo("0644");
    assertThat(st.get("permissions").asText()).isEqualTo("rw-r--r--");
    assertThat(st.get("absolutePath").asText()).endsWith("/ops/h.txt");
    assertThat(st.get("symlinkTarget").isNull()).isTrue();
    mcp.call("exec", args("command", "ln -sfn h.txt ops/link"));
    assertThat(sc(mcp.call("statFile", args("path", "ops/link"))).get("symlinkTarget").asText()).isEqualTo("h.txt");
    JsonNode viaLink = sc(mcp.call("readFile", args("path", "ops/link")));
    assertThat(viaLink.get("content").asText()).isEqualTo("data");
    assertThat(viaLink.get("size").isNull()).isTrue();

    JsonNode missingStat = mcp.call("statFile", args("path", "ops/none"));
    assertThat(isError(missingStat)).isTrue();
    assertThat(text(missingStat)).contains("Not found");
    assertThat(isError(mcp.call("deleteFile", args("path", "ops", "recursive", true)))).isFalse();
    assertThat(sc(mcp.call("fileExists", args("path", "ops"))).get("exists").asBoolean()).isFalse();
    JsonNode again = mcp.call("deleteFile", args("path", "ops"));
    assertThat(isError(again)).isTrue();
    assertThat(text(again)).contains("Not found");
  }

  @Test
  void writeFileRefusesContentOverItsCapAndBadBase64WithClearErrors() {
    String big = "x".repeat(FileTools.MAX_WRITE_BYTES + 1);
    JsonNode r = mcp.call("writeFile", args("path", "too-big.txt", "content", big));
    assertThat(isError(r)).isTrue();
    assertThat(text(r)).contains("2097153 bytes").contains("at most 2097152").contains("cat part1 part2");
    assertThat(sc(mcp.call("fileExists", args("path", "too-big.txt"))).get("exists").asBoolean()).isFalse();

    JsonNode bad = mcp.call("writeFile", args("path", "bad.bin", "content", "not*base64", "encoding", "base64"));
    assertThat(isError(bad)).isTrue();
    assertThat(text(bad)).contains("not valid base64");

    JsonNode atCap = mcp.call("writeFile", args("path", "at-cap.txt", "content", big.substring(1)));
    assertThat(sc(atCap).get("bytesWritten").asInt()).isEqualTo(FileTools.MAX_WRITE_BYTES);
    mcp.call("deleteFile", args("path", "at-cap.txt"));

    // The same cap for bytes sent as base64, whose padding must not count: 2 MiB is 3n + 2 bytes.
    byte[] bytes = new byte[FileTools.MAX_WRITE_BYTES + 1];
    java.util.Arrays.fill(bytes, (byte) 0xFE);
    JsonNode overB64 = mcp.call("writeFile", args("path", "too-big.bin", "content",
        Base64.getEncoder().encodeToString(bytes), "encoding", "base64"));
    assertThat(text(overB64)).contains("2097153 bytes").contains("at most 2097152");
    JsonNode atCapB64 = mcp.call("writeFile", args("path", "at-cap.bin", "content",
        Base64.getEncoder().encodeToString(java.util.Arrays.copyOf(bytes, FileTools.MAX_WRITE_BYTES)),
        "encoding", "base64"));
    assertThat(isError(atCapB64)).as("%s", atCapB64).isFalse();
    assertThat(sc(atCapB64).get("bytesWritten").asInt()).isEqualTo(FileTools.MAX_WRITE_BYTES);
    mcp.call("deleteFile", args("path", "at-cap.bin"));
  }

  @Test
  void argumentsOutsideTheSchemaAreRejectedByTheValidator() {
    JsonNode noPath = mcp.call("readFile", args());
    assertThat(isError(noPath)).isTrue();
    assertThat(text(noPath)).contains("missing required property 'path'");
    JsonNode negative = mcp.call("readFile", args("path", "a", "offset", -1));
    assertThat(text(negative)).contains("arguments.offset: must be at least 0");
    JsonNode zero = mcp.call("readFile", args("path", "a", "length", 0));
    assertThat(text(zero)).contains("arguments.length: must be at least 1");
    JsonNode enc = mcp.call("writeFile", args("path", "a", "content", "x", "encoding", "latin-1"));
    assertThat(text(enc)).contains("arguments.encoding: must be one of utf-8, base64");
    JsonNode empty = mcp.call("deleteFile", args("path", ""));
    assertThat(text(empty)).contains("arguments.path: must not be empty");
    JsonNode extra = mcp.call("listFiles", args("append", true));
    assertThat(text(extra)).contains("unknown property 'append'");
    JsonNode tooMany = mcp.call("listFiles", args("maxEntries", 10001));
    assertThat(text(tooMany)).contains("must be at most 10000");
  }

  @Test
  void secretsAreRedactedFromTextAndBase64HoldingOneIsRefused() {
    String secret = "s3cr3t-" + Long.toHexString(System.nanoTime());
    AdapterConfig config = AdapterConfig.parse(new String[] {"--pass-env", "API_KEY"}, Map.of("API_KEY", secret));
    try (McpTestClient withSecret = McpTestClient.initialized(config)) {
      withSecret.call("exec", args("command", "printf 'key=%s\\n' \"$API_KEY\" > cfg.txt;"
          + " printf '\\000\\001%s\\377' \"$API_KEY\" > cfg.bin"));
      JsonNode r = sc(withSecret.call("readFile", args("path", "cfg.txt")));
      assertThat(r.get("content").asText()).isEqualTo("key=[REDACTED:API_KEY]\n");
      // every page that cuts through the secret shows none of it
      for (int from = 0; from < 12; from++) {
        JsonNode page = sc(withSecret.call("readFile", args("path", "cfg.txt", "offset", from, "length", 6)));
        assertThat(page.get("content").asText()).as("from %d", from).doesNotContain(secret.substring(0, 4))
            .doesNotContain(secret.substring(secret.length() - 4));
      }
      JsonNode bin = withSecret.call("readFile", args("path", "cfg.bin"));
      assertThat(isError(bin)).isTrue();
      assertThat(text(bin)).contains("API_KEY").contains("encoding \"utf-8\"").doesNotContain(secret);
      JsonNode prefix = sc(withSecret.call("readFile", args("path", "cfg.bin", "length", 1)));
      assertThat(Base64.getDecoder().decode(prefix.get("content").asText())).isEqualTo(new byte[] {0});
      withSecret.call("destroy", args("force", true));
    }
  }

  @Test
  void aBinaryFileIsReadWholeAcrossPagesByteExact() {
    ByteArrayOutputStream expected = new ByteArrayOutputStream();
    for (int i = 0; i < 40_000; i++) {
      expected.write(i % 251);
    }
    mcp.call("writeFile", args("path", "paged.bin", "content",
        Base64.getEncoder().encodeToString(expected.toByteArray()), "encoding", "base64"));
    ByteArrayOutputStream got = new ByteArrayOutputStream();
    long offset = 0;
    boolean more = true;
    while (more) {
      JsonNode r = sc(mcp.call("readFile", args("path", "paged.bin", "offset", offset)));
      got.writeBytes(Base64.getDecoder().decode(r.get("content").asText()));
      offset = r.get("nextOffset").asLong();
      more = r.get("more").asBoolean();
    }
    assertThat(got.toByteArray()).isEqualTo(expected.toByteArray());
  }
}
