package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.testkit.ProcStats;
import java.io.IOException;
import java.io.InputStream;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The file routes against a real agent and real files: Cloudflare's read, read/stream, write,
 * delete, rename, move, mkdir, list-files and exists, our stat and raw routes, the errors, the
 * workspace boundary, and memory that stays flat while a 64 MiB file goes up and down.
 */
class FilesIT {
  @RegisterExtension static final TestAgent agent = new TestAgent(b -> { });

  @AfterEach
  void emptyTheWorkspace() throws IOException {
    try (var files = Files.list(agent.workspace)) {
      for (Path p : (Iterable<Path>) files::iterator) {
        deleteTree(p);
      }
    }
  }

  static void deleteTree(Path p) throws IOException {
    if (Files.isDirectory(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      try (var files = Files.list(p)) {
        for (Path c : (Iterable<Path>) files::iterator) {
          deleteTree(c);
        }
      }
    }
    Files.deleteIfExists(p);
  }

  static String raw(String path) {
    return "/api/files/raw?path=" + URLEncoder.encode(path, StandardCharsets.UTF_8);
  }

  @Test
  void aChainDeeperThanThePathLimitIsListedAndDeletedWithinTheCapNeverAServerError() {
    // 2,100 levels: more than PATH_MAX allows by name, made one level at a time by a command.
    TestAgent.Response made = agent.post("/api/execute", obj("command",
        "perl -e 'mkdir \"chain\"; chdir \"chain\" or die; for (1..2100) { mkdir \"d\" or die; chdir \"d\" or die }'"));
    try {
      assertThat(made.body().path("exitCode").asInt()).as("%s", made.body()).isZero();

      TestAgent.Response list = agent.post("/api/list-files", obj("path", "chain", "options", Map.of("recursive", true)));
      assertThat(list.status()).as("%s", list.body()).isEqualTo(413);
      assertThat(list.text("code")).isEqualTo("PAYLOAD_TOO_LARGE");
      assertThat(list.body().path("context").path("maxDepth").asInt()).isEqualTo(512);

      TestAgent.Response delete = agent.post("/api/delete", obj("path", "chain", "recursive", true));
      assertThat(delete.status()).as("%s", delete.body()).isEqualTo(413);
    } finally {
      // rm walks by descriptors too; the workspace's own cleanup could not (its names are too long).
      agent.post("/api/execute", obj("command", "rm -rf chain"));
    }
    assertThat(agent.post("/api/exists", obj("path", "chain")).body().path("exists").asBoolean()).isFalse();
  }

  @Test
  void writesAndReadsTextWithCloudflaresFields() throws Exception {
    TestAgent.Response w = agent.post("/api/write", obj("path", "notes/hello.txt", "content", "hé llo\n", "sessionId", "s1"));
    assertThat(w.status()).isEqualTo(200);
    assertThat(w.body().get("success").asBoolean()).isTrue();
    assertThat(w.text("path")).isEqualTo("notes/hello.txt");
    assertThat(w.body().has("timestamp")).isTrue();
    assertThat(Files.readString(agent.workspace.resolve("notes/hello.txt"))).isEqualTo("hé llo\n");

    TestAgent.Response r = agent.post("/api/read", obj("path", "notes/hello.txt"));
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.text("content")).isEqualTo("hé llo\n");
    assertThat(r.text("encoding")).isEqualTo("utf-8");
    assertThat(r.body().get("isBinary").asBoolean()).isFalse();
    assertThat(r.text("mimeType")).isEqualTo("text/plain");
    assertThat(r.body().get("size").asLong()).isEqualTo(8);

    // Absolute paths inside the workspace are the same file.
    String absolute = agent.workspace.toRealPath().resolve("notes/hello.txt").toString();
    assertThat(agent.post("/api/read", obj("path", absolute)).text("content")).isEqualTo("hé llo\n");
  }

  @Test
  void writesAndReadsBinaryAsBase64() throws Exception {
    byte[] bytes = new byte[1000];
    new Random(7).nextBytes(bytes);
    bytes[0] = 0;
    String b64 = Base64.getEncoder().encodeToString(bytes);
    assertThat(agent.post("/api/write", obj("path", "blob.bin", "content", b64, "encoding", "base64")).status()).isEqualTo(200);
    assertThat(Files.readAllBytes(agent.workspace.resolve("blob.bin"))).isEqualTo(bytes);

    TestAgent.Response r = agent.post("/api/read", obj("path", "blob.bin"));
    assertThat(r.text("encoding")).isEqualTo("base64");
    assertThat(r.body().get("isBinary").asBoolean()).isTrue();
    assertThat(r.text("mimeType")).isEqualTo("application/octet-stream");
    assertThat(Base64.getDecoder().decode(r.text("content"))).isEqualTo(bytes);

    // A text file asked for as base64 comes as base64.
    agent.post("/api/write", obj("path", "a.json", "content", "{}"));
    TestAgent.Response j = agent.post("/api/read", obj("path", "a.json", "encoding", "base64"));
    assertThat(j.text("content")).isEqualTo("e30=");
    assertThat(j.text("mimeType")).isEqualTo("application/json");

    TestAgent.Response bad = agent.post("/api/write", obj("path", "x.bin", "content", "not base64!", "encoding", "base64"));
    assertThat(bad.status()).isEqualTo(400);
    assertThat(bad.text("code")).isEqualTo("VALIDATION_FAILED");
    assertThat(bad.body().at("/context/field").asText()).isEqualTo("content");
    TestAgent.Response enc = agent.post("/api/read", obj("path", "a.json", "encoding", "latin1"));
    assertThat(enc.status()).isEqualTo(400);
  }

  @Test
  void makesDirectoriesRecursivelyOrNot() throws Exception {
    TestAgent.Response flat = agent.post("/api/mkdir", obj("path", "a/b/c"));
    assertThat(flat.status()).isEqualTo(404);
    assertThat(flat.text("code")).isEqualTo("FILE_NOT_FOUND");

    TestAgent.Response deep = agent.post("/api/mkdir", obj("path", "a/b/c", "recursive", true));
    assertThat(deep.status()).isEqualTo(200);
    assertThat(deep.body().get("recursive").asBoolean()).isTrue();
    assertThat(agent.workspace.resolve("a/b/c")).isDirectory();
    assertThat(agent.post("/api/mkdir", obj("path", "a/b/c", "recursive", true)).status()).isEqualTo(200);

    TestAgent.Response again = agent.post("/api/mkdir", obj("path", "a/b/c"));
    assertThat(again.status()).isEqualTo(409);
    assertThat(again.text("code")).isEqualTo("FILE_EXISTS");

    TestAgent.Response one = agent.post("/api/mkdir", obj("path", "a/d"));
    assertThat(one.status()).isEqualTo(200);
    assertThat(one.body().get("recursive").asBoolean()).isFalse();

    agent.post("/api/write", obj("path", "file", "content", "x"));
    TestAgent.Response underFile = agent.post("/api/mkdir", obj("path", "file/sub", "recursive", true));
    assertThat(underFile.status()).isEqualTo(400);
    assertThat(underFile.text("code")).isEqualTo("NOT_DIRECTORY");
  }

  @Test
  void listsFilesWithRecursiveAndHiddenOptions() throws Exception {
    agent.post("/api/write", obj("path", "d/one.txt", "content", "1"));
    agent.post("/api/write", obj("path", "d/sub/two.txt", "content", "22"));
    agent.post("/api/write", obj("path", "d/.hidden", "content", "h"));
    agent.post("/api/write", obj("path", "d/.git/config", "content", "c"));
    Files.setPosixFilePermissions(agent.workspace.resolve("d/one.txt"), PosixFilePermissions.fromString("rwxr-x---"));

    TestAgent.Response flat = agent.post("/api/list-files", obj("path", "d"));
    assertThat(flat.status()).isEqualTo(200);
    assertThat(names(flat, "relativePath")).containsExactly("one.txt", "sub");
    assertThat(flat.body().get("count").asInt()).isEqualTo(2);
    JsonNode one = flat.body().get("files").get(0);
    assertThat(one.get("name").asText()).isEqualTo("one.txt");
    assertThat(one.get("type").asText()).isEqualTo("file");
    assertThat(one.get("size").asLong()).isEqualTo(1);
    assertThat(one.get("mode").asText()).isEqualTo("rwxr-x---");
    assertThat(one.get("absolutePath").asText()).isEqualTo(agent.workspace.toRealPath().resolve("d/one.txt").toString());
    assertThat(one.at("/permissions/executable").asBoolean()).isTrue();
    assertThat(one.has("modifiedAt")).isTrue();
    assertThat(flat.body().get("files").get(1).get("type").asText()).isEqualTo("directory");

    TestAgent.Response deep = agent.post("/api/list-files", obj("path", "d", "options", Map.of("recursive", true)));
    assertThat(names(deep, "relativePath")).containsExactly("one.txt", "sub", "sub/two.txt");

    TestAgent.Response all = agent.post("/api/list-files", obj("path", "d",
        "options", Map.of("recursive", true, "includeHidden", true)));
    assertThat(names(all, "relativePath")).containsExactly(".git", ".git/config", ".hidden", "one.txt", "sub", "sub/two.txt");

    assertThat(agent.post("/api/list-files", obj("path", "d/one.txt")).text("code")).isEqualTo("NOT_DIRECTORY");
    assertThat(agent.post("/api/list-files", obj("path", "nope")).status()).isEqualTo(404);
    assertThat(agent.post("/api/list-files", obj("path", "d", "options", Map.of("depth", 1))).status()).isEqualTo(400);
  }

  static List<String> names(TestAgent.Response r, String field) {
    List<String> out = new ArrayList<>();
    r.body().get("files").forEach(f -> out.add(f.get(field).asText()));
    return out;
  }

  @Test
  void renamesMovesAndDeletes() throws Exception {
    agent.post("/api/write", obj("path", "old.txt", "content", "data"));
    TestAgent.Response rn = agent.post("/api/rename", obj("oldPath", "old.txt", "newPath", "new.txt"));
    assertThat(rn.status()).isEqualTo(200);
    assertThat(rn.text("path")).isEqualTo("old.txt");
    assertThat(rn.text("newPath")).isEqualTo("new.txt");
    assertThat(agent.workspace.resolve("new.txt")).hasContent("data");
    assertThat(agent.workspace.resolve("old.txt")).doesNotExist();

    agent.post("/api/mkdir", obj("path", "dir"));
    TestAgent.Response mv = agent.post("/api/move", obj("sourcePath", "new.txt", "destinationPath", "dir"));
    assertThat(mv.status()).isEqualTo(200);
    assertThat(mv.text("path")).isEqualTo("new.txt");
    assertThat(mv.text("newPath")).isEqualTo("dir");
    assertThat(agent.workspace.resolve("dir/new.txt")).hasContent("data"); // into a directory, like mv

    assertThat(agent.post("/api/move", obj("sourcePath", "gone", "destinationPath", "x")).text("code")).isEqualTo("FILE_NOT_FOUND");
    assertThat(agent.post("/api/rename", obj("oldPath", "dir", "newPath", "dir/inside")).status()).isEqualTo(400);

    TestAgent.Response dirDelete = agent.post("/api/delete", obj("path", "dir"));
    assertThat(dirDelete.status()).isEqualTo(400);
    assertThat(dirDelete.text("code")).isEqualTo("IS_DIRECTORY");
    TestAgent.Response recursive = agent.post("/api/delete", obj("path", "dir", "recursive", true));
    assertThat(recursive.status()).isEqualTo(200);
    assertThat(recursive.text("path")).isEqualTo("dir");
    assertThat(agent.workspace.resolve("dir")).doesNotExist();

    TestAgent.Response missing = agent.post("/api/delete", obj("path", "dir"));
    assertThat(missing.status()).isEqualTo(404);
    assertThat(missing.text("code")).isEqualTo("FILE_NOT_FOUND");
    assertThat(missing.body().at("/context/path").asText()).isEqualTo("dir");
    assertThat(agent.post("/api/delete", obj("path", ".", "recursive", true)).status()).isEqualTo(403);
  }

  @Test
  void existsAnswersTrueAndFalse() {
    agent.post("/api/write", obj("path", "here.txt", "content", ""));
    TestAgent.Response yes = agent.post("/api/exists", obj("path", "here.txt"));
    assertThat(yes.status()).isEqualTo(200);
    assertThat(yes.body().get("exists").asBoolean()).isTrue();
    assertThat(yes.text("path")).isEqualTo("here.txt");
    assertThat(agent.post("/api/exists", obj("path", "missing.txt")).body().get("exists").asBoolean()).isFalse();
    assertThat(agent.post("/api/exists", obj("path", ".")).body().get("exists").asBoolean()).isTrue();
  }

  @Test
  void directoriesAndFilesAreNotMistakenForEachOther() {
    agent.post("/api/mkdir", obj("path", "dir"));
    TestAgent.Response read = agent.post("/api/read", obj("path", "dir"));
    assertThat(read.status()).isEqualTo(400);
    assertThat(read.text("code")).isEqualTo("IS_DIRECTORY");
    assertThat(agent.post("/api/write", obj("path", "dir", "content", "x")).text("code")).isEqualTo("IS_DIRECTORY");
    assertThat(agent.send(agent.request(raw("dir")).GET().build()).text("code")).isEqualTo("IS_DIRECTORY");
    agent.post("/api/write", obj("path", "f", "content", "x"));
    assertThat(agent.post("/api/write", obj("path", "f/g", "content", "x")).text("code")).isEqualTo("NOT_DIRECTORY");
    assertThat(agent.post("/api/rename", obj("oldPath", "f", "newPath", "dir")).status()).isEqualTo(200); // into dir
    agent.post("/api/mkdir", obj("path", "dir2"));
    agent.post("/api/write", obj("path", "f2", "content", "x"));
    assertThat(agent.post("/api/rename", obj("oldPath", "dir2", "newPath", "f2")).text("code")).isEqualTo("NOT_DIRECTORY");

    TestAgent.Response missing = agent.post("/api/read", obj("path", "no/such.txt"));
    assertThat(missing.status()).isEqualTo(404);
    assertThat(missing.text("code")).isEqualTo("FILE_NOT_FOUND");
    assertThat(missing.body().get("success").asBoolean()).isFalse();
    assertThat(missing.text("message")).contains("no/such.txt");
  }

  @Test
  void pathsOutsideTheWorkspaceAreRefused() throws Exception {
    Path outside = Files.createTempDirectory("outside-ws");
    try {
      Files.writeString(outside.resolve("secret"), "secret");
      for (String escape : List.of("../x", "a/../../x", "/etc/passwd", outside.resolve("secret").toString())) {
        for (String route : List.of("/api/read", "/api/exists", "/api/delete", "/api/stat", "/api/read/stream")) {
          TestAgent.Response r = agent.post(route, obj("path", escape));
          assertThat(r.status()).as(route + " " + escape).isEqualTo(403);
          assertThat(r.text("code")).isEqualTo("PERMISSION_DENIED");
        }
        assertThat(agent.post("/api/write", obj("path", escape, "content", "x")).status()).isEqualTo(403);
        assertThat(agent.post("/api/mkdir", obj("path", escape, "recursive", true)).status()).isEqualTo(403);
        assertThat(agent.post("/api/rename", obj("oldPath", "a", "newPath", escape)).status()).isEqualTo(403);
        assertThat(agent.send(agent.request(raw(escape)).GET().build()).status()).isEqualTo(403);
        assertThat(agent.send(agent.request(raw(escape)).PUT(HttpRequest.BodyPublishers.ofString("x")).build()).status())
            .isEqualTo(403);
      }
      // Through symbolic links: a directory link and a file link that lead out.
      Files.createSymbolicLink(agent.workspace.resolve("out"), outside);
      Files.createSymbolicLink(agent.workspace.resolve("secret-link"), outside.resolve("secret"));
      assertThat(agent.post("/api/read", obj("path", "out/secret")).status()).isEqualTo(403);
      assertThat(agent.post("/api/write", obj("path", "out/new", "content", "x")).status()).isEqualTo(403);
      assertThat(agent.post("/api/read", obj("path", "secret-link")).status()).isEqualTo(403);
      assertThat(agent.post("/api/write", obj("path", "secret-link", "content", "x")).status()).isEqualTo(403);
      assertThat(agent.post("/api/list-files", obj("path", "out")).status()).isEqualTo(403);
      assertThat(agent.post("/api/delete", obj("path", "out/secret")).status()).isEqualTo(403);
      assertThat(agent.post("/api/exists", obj("path", "out/secret")).status()).isEqualTo(403);
      assertThat(outside.resolve("new")).doesNotExist();
      assertThat(outside.resolve("secret")).hasContent("secret");

      // stat and delete look at a final link itself, which is inside: stat describes it, delete removes the link only.
      TestAgent.Response st = agent.post("/api/stat", obj("path", "secret-link"));
      assertThat(st.status()).isEqualTo(200);
      assertThat(st.text("type")).isEqualTo("symlink");
      assertThat(st.text("symlinkTarget")).isEqualTo(outside.resolve("secret").toString());
      assertThat(agent.post("/api/delete", obj("path", "secret-link")).status()).isEqualTo(200);
      assertThat(agent.post("/api/rename", obj("oldPath", "out", "newPath", "out2")).status()).isEqualTo(200);
      assertThat(agent.post("/api/delete", obj("path", "out2", "recursive", true)).status()).isEqualTo(200);
      assertThat(outside.resolve("secret")).hasContent("secret");

      // A link that stays inside is followed.
      agent.post("/api/write", obj("path", "real.txt", "content", "inside"));
      Files.createSymbolicLink(agent.workspace.resolve("inner-link"), agent.workspace.resolve("real.txt"));
      assertThat(agent.post("/api/read", obj("path", "inner-link")).text("content")).isEqualTo("inside");
    } finally {
      deleteTree(outside);
    }
  }

  @Test
  void requestsWithMissingOrUnknownFieldsAreClientErrors() {
    TestAgent.Response none = agent.post("/api/read", obj("encoding", "utf-8"));
    assertThat(none.status()).isEqualTo(400);
    assertThat(none.body().at("/context/field").asText()).isEqualTo("path");
    assertThat(agent.post("/api/write", obj("path", "x")).status()).isEqualTo(400);
    assertThat(agent.post("/api/read", obj("path", "x", "bogus", 1)).status()).isEqualTo(400);
    assertThat(agent.post("/api/read", "{").status()).isEqualTo(400);
    assertThat(agent.get("/api/read").status()).isEqualTo(405);
    assertThat(agent.send(agent.request("/api/files/raw").GET().build()).status()).isEqualTo(400);
    assertThat(agent.send(agent.request(raw("x") + "&other=1").GET().build()).status()).isEqualTo(400);
  }

  @Test
  void statDescribesFilesDirectoriesAndLinks() throws Exception {
    agent.post("/api/write", obj("path", "s.txt", "content", "12345"));
    Files.setPosixFilePermissions(agent.workspace.resolve("s.txt"), PosixFilePermissions.fromString("rw-r-----"));
    TestAgent.Response f = agent.post("/api/stat", obj("path", "s.txt"));
    assertThat(f.status()).isEqualTo(200);
    assertThat(f.text("type")).isEqualTo("file");
    assertThat(f.body().get("size").asLong()).isEqualTo(5);
    assertThat(f.text("mode")).isEqualTo("0640");
    assertThat(f.body().has("modifiedAt")).isTrue();
    assertThat(f.body().has("symlinkTarget")).isFalse();
    assertThat(agent.post("/api/stat", obj("path", ".")).text("type")).isEqualTo("directory");
    Files.createSymbolicLink(agent.workspace.resolve("l"), Path.of("s.txt"));
    TestAgent.Response l = agent.post("/api/stat", obj("path", "l"));
    assertThat(l.text("type")).isEqualTo("symlink");
    assertThat(l.text("symlinkTarget")).isEqualTo("s.txt");
    assertThat(agent.post("/api/stat", obj("path", "none")).text("code")).isEqualTo("FILE_NOT_FOUND");
    Files.createSymbolicLink(agent.workspace.resolve("dangling"), Path.of("nothing-here"));
    assertThat(agent.post("/api/read", obj("path", "dangling")).text("code")).isEqualTo("FILE_NOT_FOUND");
    assertThat(agent.post("/api/exists", obj("path", "dangling")).body().get("exists").asBoolean()).isFalse();
    assertThat(agent.post("/api/stat", obj("path", "dangling")).text("type")).isEqualTo("symlink");
  }

  @Test
  void streamsAFileAsMetadataChunksAndComplete() throws Exception {
    // 150000 bytes of text with a two-byte character across the first chunk boundary (65535).
    StringBuilder text = new StringBuilder();
    while (text.length() < 65534) {
      text.append('a');
    }
    text.append('é');
    while (text.length() < 149_999) {
      text.append('b');
    }
    Files.writeString(agent.workspace.resolve("big.txt"), text);
    long size = Files.size(agent.workspace.resolve("big.txt"));
    List<JsonNode> events = new ArrayList<>();
    try (SseReader sse = agent.stream("/api/read/stream", obj("path", "big.txt"))) {
      assertThat(sse.status()).isEqualTo(200);
      for (JsonNode e = sse.next(); e != null; e = sse.next()) {
        events.add(e);
      }
    }
    assertThat(events.get(0).get("type").asText()).isEqualTo("metadata");
    assertThat(events.get(0).get("mimeType").asText()).isEqualTo("text/plain");
    assertThat(events.get(0).get("size").asLong()).isEqualTo(size);
    assertThat(events.get(0).get("isBinary").asBoolean()).isFalse();
    assertThat(events.get(0).get("encoding").asText()).isEqualTo("utf-8");
    StringBuilder joined = new StringBuilder();
    for (JsonNode e : events.subList(1, events.size() - 1)) {
      assertThat(e.get("type").asText()).isEqualTo("chunk");
      joined.append(e.get("data").asText());
    }
    assertThat(events.size()).isEqualTo(1 + 3 + 1);
    assertThat(joined.toString()).isEqualTo(text.toString());
    JsonNode complete = events.get(events.size() - 1);
    assertThat(complete.get("type").asText()).isEqualTo("complete");
    assertThat(complete.get("bytesRead").asLong()).isEqualTo(size);

    byte[] bin = new byte[70_000];
    new Random(3).nextBytes(bin);
    Files.write(agent.workspace.resolve("b.dat"), bin);
    List<JsonNode> binEvents = new ArrayList<>();
    try (SseReader sse = agent.stream("/api/read/stream", obj("path", "b.dat"))) {
      for (JsonNode e = sse.next(); e != null; e = sse.next()) {
        binEvents.add(e);
      }
    }
    assertThat(binEvents.get(0).get("encoding").asText()).isEqualTo("base64");
    assertThat(binEvents.get(0).get("isBinary").asBoolean()).isTrue();
    var out = new java.io.ByteArrayOutputStream();
    for (JsonNode e : binEvents.subList(1, binEvents.size() - 1)) {
      out.write(Base64.getDecoder().decode(e.get("data").asText()));
    }
    assertThat(out.toByteArray()).isEqualTo(bin);
    assertThat(binEvents.get(binEvents.size() - 1).get("bytesRead").asLong()).isEqualTo(70_000);

    // Errors before the stream starts are plain JSON errors.
    try (SseReader sse = agent.stream("/api/read/stream", obj("path", "none.txt"))) {
      assertThat(sse.status()).isEqualTo(404);
    }
  }

  @Test
  void jsonReadOfAFileOverTheCapPointsToTheStreamAndRawRoutes() throws Exception {
    try (TestAgent small = TestAgent.start(b -> b.outputBudgetBytes(8L * 1024 * 1024))) {
      Files.write(small.workspace.resolve("big.bin"), new byte[3 * 1024 * 1024]);
      TestAgent.Response r = small.post("/api/read", obj("path", "big.bin"));
      assertThat(r.status()).isEqualTo(413);
      assertThat(r.text("code")).isEqualTo("FILE_TOO_LARGE");
      assertThat(r.text("message")).contains("/api/read/stream").contains("/api/files/raw");
      assertThat(r.body().at("/context/limit").asLong()).isEqualTo(2L * 1024 * 1024);
    }
  }

  @Test
  void jsonWriteOverTheBodyLimitPointsToTheRawRoute() {
    try (TestAgent small = TestAgent.start(b -> b.maxBodyBytes(64 * 1024))) {
      TestAgent.Response r = small.post("/api/write", obj("path", "x", "content", "y".repeat(100_000)));
      assertThat(r.status()).isEqualTo(413);
      assertThat(r.text("code")).isEqualTo("PAYLOAD_TOO_LARGE");
      assertThat(r.text("message")).contains("PUT /api/files/raw");
    }
  }

  @Test
  void rawRoutesMoveBytesExactlyAndReplaceAtomically() throws Exception {
    byte[] bytes = new byte[300_001];
    new Random(11).nextBytes(bytes);
    TestAgent.Response up = agent.send(agent.request(raw("up/deep/r.bin")).PUT(HttpRequest.BodyPublishers.ofByteArray(bytes)).build());
    assertThat(up.status()).isEqualTo(200);
    assertThat(up.body().get("size").asLong()).isEqualTo(bytes.length);
    assertThat(Files.readAllBytes(agent.workspace.resolve("up/deep/r.bin"))).isEqualTo(bytes);
    Files.setPosixFilePermissions(agent.workspace.resolve("up/deep/r.bin"), PosixFilePermissions.fromString("rwx------"));

    HttpResponse<byte[]> down = agent.http.send(agent.request(raw("up/deep/r.bin")).GET().build(),
        HttpResponse.BodyHandlers.ofByteArray());
    assertThat(down.statusCode()).isEqualTo(200);
    assertThat(down.headers().firstValue("Content-Length")).hasValue(String.valueOf(bytes.length));
    assertThat(down.headers().firstValue("Content-Type")).hasValue("application/octet-stream");
    assertThat(down.body()).isEqualTo(bytes);

    // Replacing keeps the mode and leaves no temporary file behind.
    agent.send(agent.request(raw("up/deep/r.bin")).PUT(HttpRequest.BodyPublishers.ofString("short")).build());
    assertThat(agent.workspace.resolve("up/deep/r.bin")).hasContent("short");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(agent.workspace.resolve("up/deep/r.bin"))))
        .isEqualTo("rwx------");
    try (var files = Files.list(agent.workspace.resolve("up/deep"))) {
      assertThat(files.map(p -> p.getFileName().toString())).containsExactly("r.bin");
    }
    HttpResponse<byte[]> empty = agent.http.send(agent.request(raw("up/empty")).PUT(HttpRequest.BodyPublishers.noBody()).build(),
        HttpResponse.BodyHandlers.ofByteArray());
    assertThat(empty.statusCode()).isEqualTo(200);
    assertThat(agent.http.send(agent.request(raw("up/empty")).GET().build(), HttpResponse.BodyHandlers.ofByteArray()).body())
        .isEmpty();
    assertThat(agent.send(agent.request(raw("nope")).GET().build()).text("code")).isEqualTo("FILE_NOT_FOUND");
  }

  /** 64 MiB of random bytes up and down through a separate agent JVM whose resident memory is watched. */
  @Test
  void rawRoutesStreamSixtyFourMebibytesInBoundedMemory() throws Exception {
    Path dir = Files.createTempDirectory("files-it-big");
    Path ws = Files.createDirectories(dir.resolve("ws"));
    try (LaunchedAgent big = LaunchedAgent.start(List.of(), Map.of(), dir.resolve("agent.log"), "--workspace", ws.toString())) {
      java.net.URI base = big.url;
      // Warm up the routes, so class loading and the first buffers are in the baseline.
      send(big, HttpRequest.newBuilder(base.resolve(raw("warm"))).PUT(HttpRequest.BodyPublishers.ofByteArray(new byte[1 << 20])));
      big.http.send(auth(HttpRequest.newBuilder(base.resolve(raw("warm")))).GET().build(), HttpResponse.BodyHandlers.discarding());
      long rssBefore = ProcStats.rssKib(big.pid);

      int size = 64 * 1024 * 1024;
      MessageDigest sent = MessageDigest.getInstance("SHA-256");
      Random random = new Random(64);
      long upStart = System.nanoTime();
      HttpRequest put = auth(HttpRequest.newBuilder(base.resolve(raw("big/file.bin"))))
          .PUT(HttpRequest.BodyPublishers.ofInputStream(() -> new RandomStream(random, size, sent))).build();
      HttpResponse<String> up = big.http.send(put, HttpResponse.BodyHandlers.ofString());
      long upMillis = (System.nanoTime() - upStart) / 1_000_000;
      assertThat(up.statusCode()).as(up.body()).isEqualTo(200);
      long rssAfterUp = ProcStats.rssKib(big.pid);

      long downStart = System.nanoTime();
      HttpResponse<InputStream> down = big.http.send(auth(HttpRequest.newBuilder(base.resolve(raw("big/file.bin")))).GET().build(),
          HttpResponse.BodyHandlers.ofInputStream());
      assertThat(down.headers().firstValue("Content-Length")).hasValue(String.valueOf(size));
      MessageDigest received = MessageDigest.getInstance("SHA-256");
      long count = 0;
      try (InputStream in = down.body()) {
        byte[] buf = new byte[64 * 1024];
        for (int n; (n = in.read(buf)) >= 0; ) {
          received.update(buf, 0, n);
          count += n;
        }
      }
      long downMillis = (System.nanoTime() - downStart) / 1_000_000;
      long rssAfterDown = ProcStats.rssKib(big.pid);
      assertThat(count).isEqualTo(size);
      String hexSent = HexFormat.of().formatHex(sent.digest());
      assertThat(HexFormat.of().formatHex(received.digest())).isEqualTo(hexSent);
      try (InputStream in = Files.newInputStream(ws.resolve("big/file.bin"))) {
        MessageDigest onDisk = MessageDigest.getInstance("SHA-256");
        byte[] buf = new byte[64 * 1024];
        for (int n; (n = in.read(buf)) >= 0; ) {
          onDisk.update(buf, 0, n);
        }
        assertThat(HexFormat.of().formatHex(onDisk.digest())).isEqualTo(hexSent);
      }
      System.err.printf("FilesIT 64 MiB: up %d ms, down %d ms; agent RSS %d KiB before, %d after up, %d after down%n",
          upMillis, downMillis, rssBefore, rssAfterUp, rssAfterDown);
      // The file is 65536 KiB; the agent may not grow by anything near it. Measured: 1.6 to 5.9 MiB
      // in most runs, once 21 to 22 MiB (the JVM's heap sizing, not the file: buffers are 64 KiB), so
      // the bound is half the file.
      assertThat(rssAfterUp - rssBefore).isLessThan(32 * 1024);
      assertThat(rssAfterDown - rssBefore).isLessThan(32 * 1024);
    } finally {
      deleteTree(dir);
    }
  }

  /** With --command-user, what the file routes create belongs to that user. Needs root. */
  @Test
  void filesTheRoutesCreateBelongToTheCommandUser() throws Exception {
    assumeTrue("root".equals(System.getProperty("user.name")), "needs root");
    Path dir = Files.createTempDirectory("files-it-owner");
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
    Path ws = Files.createDirectories(dir.resolve("ws"));
    int uid = 64_000 + new Random().nextInt(1000);
    Files.setAttribute(ws, "unix:uid", uid);
    Files.setAttribute(ws, "unix:gid", uid);
    try (LaunchedAgent a = LaunchedAgent.start(List.of(), Map.of(), dir.resolve("agent.log"),
        "--workspace", ws.toString(), "--command-user", uid + ":" + uid)) {
      assertThat(post(a, "/api/write", obj("path", "p/q/w.txt", "content", "w")).statusCode()).isEqualTo(200);
      assertThat(post(a, "/api/mkdir", obj("path", "m/n", "recursive", true)).statusCode()).isEqualTo(200);
      assertThat(send(a, HttpRequest.newBuilder(a.url.resolve(raw("r/raw.bin"))).PUT(HttpRequest.BodyPublishers.ofString("r")))
          .statusCode()).isEqualTo(200);
      for (String p : List.of("p", "p/q", "p/q/w.txt", "m", "m/n", "r", "r/raw.bin")) {
        assertThat(Files.getAttribute(ws.resolve(p), "unix:uid")).as(p).isEqualTo(uid);
        assertThat(Files.getAttribute(ws.resolve(p), "unix:gid")).as(p).isEqualTo(uid);
      }
      // And a command running as that user can change them in place.
      HttpResponse<String> exec = post(a, "/api/execute", obj("command", "echo more >> p/q/w.txt && echo x > r/raw.bin && id -u"));
      JsonNode result = TestAgent.JSON.readTree(exec.body());
      assertThat(result.get("exitCode").asInt()).as(exec.body()).isEqualTo(0);
      assertThat(result.get("stdout").asText().trim()).isEqualTo(String.valueOf(uid));
    } finally {
      deleteTree(dir);
    }
  }

  /**
   * Container mode as shipped: root with only CAP_SETUID, CAP_SETGID, CAP_SETPCAP and CAP_KILL, so
   * the agent can neither write into the user's workspace nor chown; the routes work all the same
   * (as the user), and read files only the user may read.
   */
  @Test
  void theRoutesWorkInContainerModeWithoutChownOrDacOverride() throws Exception {
    CommandUserIT.assumeRootWithSetpriv();
    Path dir = Files.createTempDirectory("files-it-container");
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
    Path ws = Files.createDirectories(dir.resolve("ws"));
    int uid = 64_000 + new Random().nextInt(1000);
    Files.setAttribute(ws, "unix:gid", uid);
    Files.setAttribute(ws, "unix:uid", uid);
    try (LaunchedAgent a = LaunchedAgent.start(CommandUserIT.CONTAINER_ROOT, Map.of(), dir.resolve("agent.log"),
        "--workspace", ws.toString(), "--command-user", uid + ":" + uid)) {
      assertThat(post(a, "/api/write", obj("path", "p/q/w.txt", "content", "w")).statusCode()).isEqualTo(200);
      assertThat(post(a, "/api/mkdir", obj("path", "m/n", "recursive", true)).statusCode()).isEqualTo(200);
      assertThat(post(a, "/api/mkdir", obj("path", "m/n")).statusCode()).isEqualTo(409);
      byte[] bytes = new byte[200_000];
      new Random(5).nextBytes(bytes);
      assertThat(send(a, HttpRequest.newBuilder(a.url.resolve(raw("r/raw.bin"))).PUT(HttpRequest.BodyPublishers.ofByteArray(bytes)))
          .statusCode()).isEqualTo(200);
      assertThat(Files.readAllBytes(ws.resolve("r/raw.bin"))).isEqualTo(bytes);
      for (String p : List.of("p", "p/q", "p/q/w.txt", "m", "m/n", "r", "r/raw.bin")) {
        assertThat(Files.getAttribute(ws.resolve(p), "unix:uid")).as(p).isEqualTo(uid);
      }
      try (var left = Files.list(ws.resolve("r"))) {
        assertThat(left.map(f -> f.getFileName().toString())).containsExactly("raw.bin");
      }
      // A file only its owner may read, made by a command: read as the user.
      HttpResponse<String> exec = post(a, "/api/execute", obj("command",
          "umask 077; printf secret > private.txt; echo more >> p/q/w.txt"));
      assertThat(TestAgent.JSON.readTree(exec.body()).get("exitCode").asInt()).as(exec.body()).isEqualTo(0);
      assertThat(TestAgent.JSON.readTree(post(a, "/api/read", obj("path", "private.txt")).body()).get("content").asText())
          .isEqualTo("secret");
      HttpResponse<byte[]> down = a.http.send(auth(HttpRequest.newBuilder(a.url.resolve(raw("private.txt")))).GET().build(),
          HttpResponse.BodyHandlers.ofByteArray());
      assertThat(new String(down.body(), StandardCharsets.UTF_8)).isEqualTo("secret");
      assertThat(post(a, "/api/rename", obj("oldPath", "private.txt", "newPath", "m/n/private.txt")).statusCode()).isEqualTo(200);
      assertThat(post(a, "/api/delete", obj("path", "p/q/w.txt")).statusCode()).isEqualTo(200);
      assertThat(post(a, "/api/delete", obj("path", "m", "recursive", true)).statusCode()).isEqualTo(200);
      assertThat(ws.resolve("m")).doesNotExist();
      HttpResponse<String> missing = post(a, "/api/delete", obj("path", "m"));
      assertThat(missing.statusCode()).isEqualTo(404);
      assertThat(post(a, "/api/write", obj("path", "../escape.txt", "content", "x")).statusCode()).isEqualTo(403);
      assertThat(dir.resolve("escape.txt")).doesNotExist();
    } finally {
      deleteTree(dir);
    }
  }

  static HttpRequest.Builder auth(HttpRequest.Builder b) {
    return b.header("Authorization", "Bearer " + LaunchedAgent.TOKEN);
  }

  static HttpResponse<String> send(LaunchedAgent a, HttpRequest.Builder b) throws Exception {
    return a.http.send(auth(b).build(), HttpResponse.BodyHandlers.ofString());
  }

  static HttpResponse<String> post(LaunchedAgent a, String path, String json) throws Exception {
    return send(a, HttpRequest.newBuilder(a.url.resolve(path)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json)));
  }

  /** {@code size} pseudo-random bytes, digested as they are read, without holding them. */
  static final class RandomStream extends InputStream {
    private final Random random;
    private final MessageDigest digest;
    private long left;

    RandomStream(Random random, long size, MessageDigest digest) {
      this.random = random;
      this.left = size;
      this.digest = digest;
    }

    @Override
    public int read() {
      byte[] one = new byte[1];
      return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) {
      if (left == 0) {
        return -1;
      }
      int n = (int) Math.min(len, left);
      byte[] chunk = new byte[n];
      random.nextBytes(chunk);
      System.arraycopy(chunk, 0, b, off, n);
      digest.update(chunk);
      left -= n;
      return n;
    }
  }
}
