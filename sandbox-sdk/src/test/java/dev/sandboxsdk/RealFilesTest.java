package dev.sandboxsdk;

import static dev.sandboxsdk.Fixtures.body;
import static dev.sandboxsdk.Fixtures.errorResponse;
import static dev.sandboxsdk.Fixtures.json;
import static dev.sandboxsdk.Fixtures.parse;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import okhttp3.mockwebserver.MockResponse;
import okhttp3.mockwebserver.RecordedRequest;
import okhttp3.mockwebserver.SocketPolicy;
import okio.Buffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RealFilesTest extends MockAgentTest {
  private static final String OK = "{\"success\":true,\"path\":\"x\",\"timestamp\":\"2026-11-25T04:31:58.939082115Z\"}";

  private static MockResponse octets(byte[] data) {
    return new MockResponse().setHeader("Content-Type", "application/octet-stream").setBody(new Buffer().write(data));
  }

  // ---- request shapes

  @Test
  void readBytesGetsTheRawRouteWithThePathPercentEncoded() throws Exception {
    server.enqueue(octets(new byte[] {0, (byte) 0xff, 10}));

    byte[] data = sandbox.files().readBytes("dir with space/ünï+cödé&x=1#frag.bin");

    assertThat(data).containsExactly(0, 0xff, 10);
    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("GET");
    assertThat(request.getHeader("Authorization")).isEqualTo("Bearer t");
    assertThat(request.getPath()).isEqualTo(
        "/api/files/raw?path=dir%20with%20space%2F%C3%BCn%C3%AF%2Bc%C3%B6d%C3%A9%26x%3D1%23frag.bin");
    assertThat(request.getRequestUrl().queryParameter("path")).isEqualTo("dir with space/ünï+cödé&x=1#frag.bin");
  }

  @Test
  void readStringDecodesUtf8AndReplacesInvalidBytes() {
    server.enqueue(octets("grüße ✓\n".getBytes(UTF_8)));
    server.enqueue(octets(new byte[] {'a', (byte) 0xff, 'b'}));

    assertThat(sandbox.files().readString("a.txt")).isEqualTo("grüße ✓\n");
    assertThat(sandbox.files().readString("b.bin")).isEqualTo("a\uFFFDb");
  }

  @Test
  void readBytesOfAnEmptyFileIsEmpty() {
    server.enqueue(new MockResponse().setHeader("Content-Type", "application/octet-stream"));

    assertThat(sandbox.files().readBytes("empty")).isEmpty();
  }

  @Test
  void readBytesRefusesABodyShorterThanAnnounced() {
    server.enqueue(octets(new byte[10]).setHeader("Content-Length", "20")
        .setSocketPolicy(SocketPolicy.DISCONNECT_AT_END));

    assertThatThrownBy(() -> sandbox.files().readBytes("short")).isInstanceOf(SandboxException.class);
  }

  @Test
  void writeStringPutsTheUtf8BytesAsTheRawBody() throws Exception {
    server.enqueue(json(OK));

    sandbox.files().writeString("notes/ü.txt", "grüße ✓\n");

    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("PUT");
    assertThat(request.getPath()).isEqualTo("/api/files/raw?path=notes%2F%C3%BC.txt");
    assertThat(request.getHeader("Content-Type")).isEqualTo("application/octet-stream");
    assertThat(request.getHeader("Content-Length")).isEqualTo(Integer.toString("grüße ✓\n".getBytes(UTF_8).length));
    assertThat(request.getBody().readUtf8()).isEqualTo("grüße ✓\n");
  }

  @Test
  void writeBytesSendsEveryByteValueUnchanged() throws Exception {
    byte[] all = new byte[256];
    for (int i = 0; i < 256; i++) {
      all[i] = (byte) i;
    }
    server.enqueue(json(OK));

    sandbox.files().writeBytes("all.bin", all);

    assertThat(server.takeRequest().getBody().readByteArray()).isEqualTo(all);
  }

  @Test
  void writeOfAStreamIsSentChunkedAndLeavesTheStreamOpen() throws Exception {
    server.enqueue(json(OK));
    AtomicReference<Boolean> closed = new AtomicReference<>(false);
    InputStream data = new ByteArrayInputStream("streamed".getBytes(UTF_8)) {
      @Override
      public void close() {
        closed.set(true);
      }
    };

    sandbox.files().write("s.txt", data);

    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("PUT");
    assertThat(request.getHeader("Transfer-Encoding")).isEqualTo("chunked");
    assertThat(request.getBody().readUtf8()).isEqualTo("streamed");
    assertThat(closed.get()).isFalse();
  }

  @Test
  void writeOfAStreamThatFailsIsAnUncheckedIoExceptionWithTheCause() {
    server.enqueue(json(OK));
    IOException broken = new IOException("disk read error");
    InputStream data = new InputStream() {
      private int n;

      @Override
      public int read() throws IOException {
        if (n++ > 100_000) {
          throw broken;
        }
        return 'x';
      }
    };

    Throwable t = catchThrowable(() -> sandbox.files().write("s.txt", data));

    assertThat(t).isInstanceOf(UncheckedIOException.class).hasCause(broken);
  }

  @Test
  void uploadSendsTheFileWithItsLength(@TempDir Path dir) throws Exception {
    Path source = dir.resolve("local.bin");
    Files.write(source, new byte[] {1, 2, 3});
    server.enqueue(json(OK));

    sandbox.files().upload(source, "remote.bin");

    RecordedRequest request = server.takeRequest();
    assertThat(request.getPath()).isEqualTo("/api/files/raw?path=remote.bin");
    assertThat(request.getHeader("Content-Length")).isEqualTo("3");
    assertThat(request.getBody().readByteArray()).containsExactly(1, 2, 3);
  }

  @Test
  void uploadOfAMissingLocalFileSendsNothing(@TempDir Path dir) {
    assertThatThrownBy(() -> sandbox.files().upload(dir.resolve("missing"), "x"))
        .isInstanceOf(UncheckedIOException.class).hasMessageContaining("missing");
    assertThat(server.getRequestCount()).isZero();
  }

  @Test
  void downloadWritesTheTargetAndLeavesNoTemporaryFile(@TempDir Path dir) throws Exception {
    server.enqueue(octets("downloaded".getBytes(UTF_8)));
    Path target = dir.resolve("out.txt");
    Files.writeString(target, "old");

    sandbox.files().download("remote.txt", target);

    assertThat(Files.readString(target)).isEqualTo("downloaded");
    try (var files = Files.list(dir)) {
      assertThat(files).containsExactly(target);
    }
  }

  @Test
  void aFailedDownloadLeavesTheTargetUnchanged(@TempDir Path dir) throws Exception {
    server.enqueue(errorResponse(404, "FILE_NOT_FOUND", "file not found: remote.txt", "{\"path\":\"remote.txt\"}"));
    server.enqueue(octets(new byte[10]).setHeader("Content-Length", "20")
        .setSocketPolicy(SocketPolicy.DISCONNECT_AT_END));
    Path target = dir.resolve("out.txt");
    Files.writeString(target, "old");

    assertThatThrownBy(() -> sandbox.files().download("remote.txt", target))
        .isInstanceOf(SandboxFileNotFoundException.class);
    assertThatThrownBy(() -> sandbox.files().download("remote.txt", target))
        .isInstanceOf(SandboxConnectionException.class);

    assertThat(Files.readString(target)).isEqualTo("old");
    try (var files = Files.list(dir)) {
      assertThat(files).containsExactly(target);
    }
  }

  @Test
  void openStreamsTheBodyAndClosingReleasesTheCall() throws Exception {
    server.enqueue(octets("0123456789".getBytes(UTF_8)));

    try (InputStream in = sandbox.files().open("f")) {
      assertThat(in.readNBytes(4)).isEqualTo("0123".getBytes(UTF_8));
      assertThat(in.readAllBytes()).isEqualTo("456789".getBytes(UTF_8));
    }
    assertThat(server.takeRequest().getPath()).isEqualTo("/api/files/raw?path=f");
  }

  @Test
  void closingTheSandboxBreaksAnOpenStream() throws Exception {
    server.enqueue(octets(new byte[8 << 20]).throttleBody(64 << 10, 50, TimeUnit.MILLISECONDS));
    InputStream in = sandbox.files().open("big");
    in.readNBytes(1000);

    sandbox.close();

    assertThatThrownBy(in::readAllBytes).isInstanceOf(IOException.class);
    in.close();
    assertThatThrownBy(() -> sandbox.files().open("big")).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void listPostsRecursiveAndIncludeHiddenAndReadsTheEntries() throws Exception {
    server.enqueue(json(Fixtures.read("file-list-response.json")));

    List<FileEntry> entries = sandbox.files().list("notes", ListOptions.recursively().withIncludeHidden(true));

    RecordedRequest request = server.takeRequest();
    assertThat(request.getPath()).isEqualTo("/api/list-files");
    assertThat(body(request)).isEqualTo(
        parse("{\"path\":\"notes\",\"options\":{\"recursive\":true,\"includeHidden\":true}}"));
    assertThat(entries).extracting(FileEntry::relativePath).containsExactly("hello.txt", "sub", "sub/two.txt");
    FileEntry hello = entries.get(0);
    assertThat(hello.name()).isEqualTo("hello.txt");
    assertThat(hello.absolutePath()).isEqualTo("/tmp/tmp.yFhFO4ADbq/ws/notes/hello.txt");
    assertThat(hello.type()).isEqualTo(FileType.FILE);
    assertThat(hello.size()).isEqualTo(13);
    assertThat(hello.modifiedAt()).isEqualTo(Instant.parse("2026-11-25T04:31:58.644717205Z"));
    assertThat(hello.mode()).isEqualTo(0644);
    assertThat(hello.permissions()).isEqualTo("rw-r--r--");
    assertThat(entries.get(1).type()).isEqualTo(FileType.DIRECTORY);
    assertThat(entries.get(1).mode()).isEqualTo(0755);
  }

  @Test
  void listWithoutOptionsIsNotRecursiveAndHidesHiddenFiles() throws Exception {
    server.enqueue(json("{\"success\":true,\"path\":\".\",\"files\":[],\"count\":0}"));

    assertThat(sandbox.files().list(".")).isEmpty();

    assertThat(body(server.takeRequest())).isEqualTo(
        parse("{\"path\":\".\",\"options\":{\"recursive\":false,\"includeHidden\":false}}"));
  }

  @Test
  void aTruncatedListingIsAnErrorNotAPartialAnswer() {
    server.enqueue(json("{\"success\":true,\"path\":\".\",\"files\":[],\"count\":10000,\"truncated\":true}"));

    assertThatThrownBy(() -> sandbox.files().list(".", ListOptions.recursively()))
        .isInstanceOf(SandboxException.class).hasMessageContaining("one by one");
  }

  @Test
  void statReadsModeTypeOwnerAndLinkTarget() throws Exception {
    server.enqueue(json(Fixtures.read("file-stat-response.json")));

    FileStat stat = sandbox.files().stat("notes/link");

    assertThat(body(server.takeRequest())).isEqualTo(parse("{\"path\":\"notes/link\"}"));
    assertThat(stat.type()).isEqualTo(FileType.SYMLINK);
    assertThat(stat.isSymlink()).isTrue();
    assertThat(stat.symlinkTarget()).isEqualTo("hello.txt");
    assertThat(stat.mode()).isEqualTo(0777);
    assertThat(stat.octalMode()).isEqualTo("0777");
    assertThat(stat.permissions()).isEqualTo("rwxrwxrwx");
    assertThat(stat.size()).isEqualTo(9);
    assertThat(stat.uid()).isZero();
    assertThat(stat.absolutePath()).isEqualTo("/tmp/tmp.yFhFO4ADbq/ws/notes/link");
    assertThat(stat.modifiedAt()).isEqualTo(Instant.parse("2026-11-25T04:31:58.856717211Z"));
  }

  @Test
  void existsReadsTheAnswer() throws Exception {
    server.enqueue(json(Fixtures.read("file-exists-response.json")));
    server.enqueue(json("{\"success\":true,\"path\":\"nope\",\"exists\":false}"));

    assertThat(sandbox.files().exists("notes/hello.txt")).isTrue();
    assertThat(sandbox.files().exists("nope")).isFalse();
    assertThat(server.takeRequest().getPath()).isEqualTo("/api/exists");
  }

  @Test
  void directoryOperationsPostTheirRoutesAndFields() throws Exception {
    for (int i = 0; i < 5; i++) {
      server.enqueue(json(OK));
    }

    sandbox.files().mkdir("a/b");
    sandbox.files().delete("f");
    sandbox.files().deleteRecursively("a");
    sandbox.files().rename("x", "y");
    sandbox.files().move("y", "dir/");

    assertRequest("/api/mkdir", "{\"path\":\"a/b\",\"recursive\":true}");
    assertRequest("/api/delete", "{\"path\":\"f\"}");
    assertRequest("/api/delete", "{\"path\":\"a\",\"recursive\":true}");
    assertRequest("/api/rename", "{\"oldPath\":\"x\",\"newPath\":\"y\"}");
    assertRequest("/api/move", "{\"sourcePath\":\"y\",\"destinationPath\":\"dir/\"}");
  }

  private void assertRequest(String path, String body) throws InterruptedException {
    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("POST");
    assertThat(request.getPath()).isEqualTo(path);
    assertThat(request.getHeader("Authorization")).isEqualTo("Bearer t");
    assertThat(body(request)).isEqualTo(parse(body));
  }

  @Test
  void nullArgumentsAreRefusedBeforeAnyRequest() {
    assertThatThrownBy(() -> sandbox.files().readBytes(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> sandbox.files().writeBytes("x", null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> sandbox.files().move("x", null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> sandbox.files().list("x", null)).isInstanceOf(NullPointerException.class);
    assertThat(server.getRequestCount()).isZero();
  }

  // ---- errors

  @ParameterizedTest
  @CsvSource({
      "404, FILE_NOT_FOUND, dev.sandboxsdk.SandboxFileNotFoundException",
      "400, IS_DIRECTORY, dev.sandboxsdk.SandboxInvalidRequestException",
      "400, NOT_DIRECTORY, dev.sandboxsdk.SandboxInvalidRequestException",
      "400, NAME_TOO_LONG, dev.sandboxsdk.SandboxInvalidRequestException",
      "400, TOO_MANY_LINKS, dev.sandboxsdk.SandboxInvalidRequestException",
      "400, VALIDATION_FAILED, dev.sandboxsdk.SandboxInvalidRequestException",
      "403, PERMISSION_DENIED, dev.sandboxsdk.SandboxPermissionException",
      "403, READ_ONLY, dev.sandboxsdk.SandboxPermissionException",
      "409, FILE_EXISTS, dev.sandboxsdk.SandboxConflictException",
      "413, FILE_TOO_LARGE, dev.sandboxsdk.SandboxInvalidRequestException",
      "413, PAYLOAD_TOO_LARGE, dev.sandboxsdk.SandboxInvalidRequestException",
      "507, NO_SPACE, dev.sandboxsdk.SandboxServerException",
      "500, FILESYSTEM_ERROR, dev.sandboxsdk.SandboxServerException",
  })
  void agentErrorCodesMapToExceptionsOnJsonAndRawRoutes(int status, String code, String type) throws Exception {
    Class<?> expected = Class.forName(type);
    String message = code + " happened to 'x y'";
    for (int i = 0; i < 3; i++) {
      server.enqueue(errorResponse(status, code, message, "{\"path\":\"x y\",\"field\":\"path\"}"));
    }

    Throwable json = catchThrowable(() -> sandbox.files().stat("x y"));
    Throwable raw = catchThrowable(() -> sandbox.files().readBytes("x y"));
    Throwable put = catchThrowable(() -> sandbox.files().writeString("x y", "data"));

    for (Throwable t : List.of(json, raw, put)) {
      assertThat(t).isExactlyInstanceOf(expected).hasMessageContaining(message);
      SandboxException e = (SandboxException) t;
      assertThat(e.code()).isEqualTo(code);
      assertThat(e.httpStatus()).isEqualTo(status);
      assertThat(e.context()).containsEntry("path", "x y");
    }
  }

  @Test
  void aPermissionErrorIsStillAnInvalidRequestForOlderCatchBlocks() {
    server.enqueue(errorResponse(403, "PERMISSION_DENIED", "path '../x' is not allowed", "{\"path\":\"../x\"}"));

    assertThatThrownBy(() -> sandbox.files().readString("../x")).isInstanceOf(SandboxInvalidRequestException.class);
  }

  @Test
  void aHugeErrorBodyIsReadOnlyInPart() {
    String longMessage = "x".repeat(1 << 20);
    server.enqueue(errorResponse(404, "FILE_NOT_FOUND", longMessage, "{}"));

    Throwable t = catchThrowable(() -> sandbox.files().readBytes("f"));

    assertThat(t).isInstanceOf(SandboxNotFoundException.class);
    assertThat(t.getMessage().length()).isLessThan(1000);
  }

  // ---- streaming

  /**
   * A 64 MiB upload reaches the server while the source is still being read: the client never
   * holds the whole body. The source stalls until the server has most of what it produced so far.
   */
  @Test
  void writeStreamsTheBodyWithoutBufferingItWhole() throws Exception {
    long total = 64L << 20;
    AtomicLong received = new AtomicLong();
    try (ServerSocket listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      Thread agent = new Thread(() -> countingAgent(listener, received), "counting-agent");
      agent.setDaemon(true);
      agent.start();
      try (Sandbox client = Fixtures.client(URI.create("http://127.0.0.1:" + listener.getLocalPort() + "/"))) {
        InputStream source = new InputStream() {
          private long produced;

          @Override
          public int read() {
            throw new UnsupportedOperationException();
          }

          @Override
          public int read(byte[] b, int off, int len) throws IOException {
            if (produced >= total) {
              return -1;
            }
            // Past 16 MiB, wait until all but 8 MiB (more than socket buffers hold) arrived.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (produced > (16 << 20) && received.get() < produced - (8 << 20)) {
              if (System.nanoTime() > deadline) {
                throw new IOException("the server got " + received.get() + " of " + produced
                    + " bytes produced: the client buffers the body");
              }
              Thread.onSpinWait();
            }
            int n = (int) Math.min(len, total - produced);
            produced += n;
            return n;
          }
        };

        client.files().write("big.bin", source);
      }
      assertThat(received.get()).isGreaterThanOrEqualTo(total);
    }
  }

  /** Reads one request, counts its body bytes until the chunked body ends, answers success. */
  private static void countingAgent(ServerSocket listener, AtomicLong received) {
    try (Socket s = listener.accept()) {
      InputStream in = s.getInputStream();
      int state = 0; // matches "\r\n\r\n" for the end of the headers
      while (state < 4) {
        int b = in.read();
        if (b < 0) {
          return;
        }
        state = (b == (state % 2 == 0 ? '\r' : '\n')) ? state + 1 : (b == '\r' ? 1 : 0);
      }
      byte[] buf = new byte[64 << 10];
      byte[] tail = new byte[5];
      for (;;) {
        int n = in.read(buf);
        if (n < 0) {
          return;
        }
        received.addAndGet(n);
        int keep = Math.min(n, 5); // the last five bytes seen, for the end of the chunked body
        System.arraycopy(tail, keep, tail, 0, 5 - keep);
        System.arraycopy(buf, n - keep, tail, 5 - keep, keep);
        if (new String(tail, UTF_8).equals("0\r\n\r\n")) {
          break;
        }
      }
      byte[] answer = OK.getBytes(UTF_8);
      OutputStream out = s.getOutputStream();
      out.write(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + answer.length
          + "\r\nConnection: close\r\n\r\n").getBytes(UTF_8));
      out.write(answer);
      out.flush();
    } catch (IOException e) {
      // the test fails on the client side
    }
  }
}
