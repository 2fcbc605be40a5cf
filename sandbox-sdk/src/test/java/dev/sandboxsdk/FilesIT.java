package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Sandbox#files()} against a real {@link LocalSandbox} (isolated by default; the agent
 * serves the file routes itself): round trips, streaming of a large file, listing, the changing
 * operations, errors, and files shared with commands.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class FilesIT {
  private LocalSandbox sandbox;
  private SandboxFiles files;

  @TempDir
  Path tmp;

  @BeforeAll
  void start() {
    sandbox = LocalSandbox.builder().gracePeriod(Duration.ofMillis(500)).start();
    files = sandbox.files();
  }

  @AfterAll
  void stop() {
    if (sandbox != null) {
      sandbox.close();
    }
  }

  // ---- round trips

  @Test
  void textRoundTripsAsUtf8() {
    String text = "grüße, 世界 ✓ \uD83D\uDE80\r\nline two\n";
    files.writeString("text/hello.txt", text);

    assertThat(files.readString("text/hello.txt")).isEqualTo(text);
    assertThat(files.readBytes("text/hello.txt")).isEqualTo(text.getBytes(UTF_8));
  }

  @Test
  void everyByteValueRoundTrips() {
    byte[] all = new byte[512];
    for (int i = 0; i < all.length; i++) {
      all[i] = (byte) (i % 256);
    }
    files.writeBytes("bin/all.bin", all);

    assertThat(files.readBytes("bin/all.bin")).isEqualTo(all);
    assertThat(files.stat("bin/all.bin").size()).isEqualTo(512);
  }

  @Test
  void anEmptyFileRoundTrips() throws IOException {
    files.writeBytes("empty.bin", new byte[0]);

    assertThat(files.readBytes("empty.bin")).isEmpty();
    assertThat(files.readString("empty.bin")).isEmpty();
    try (InputStream in = files.open("empty.bin")) {
      assertThat(in.read()).isEqualTo(-1);
    }
    assertThat(files.stat("empty.bin").size()).isZero();
  }

  @Test
  void namesWithSpacesPlusSignsAndUnicodeWorkOnEveryRoute() {
    String name = "odd names/a b+c&d=e#f ü.txt";
    files.writeString(name, "odd");

    assertThat(files.readString(name)).isEqualTo("odd");
    assertThat(files.exists(name)).isTrue();
    assertThat(files.list("odd names")).extracting(FileEntry::name).containsExactly("a b+c&d=e#f ü.txt");
    assertThat(sandbox.exec(Command.of("cat", name), ExecOptions.defaults()).stdout()).isEqualTo("odd");
  }

  @Test
  void sixtyFourMebibytesStreamUpAndDownUnchanged() throws Exception {
    long size = 64L << 20;
    MessageDigest sent = sha256();
    long t0 = System.nanoTime();
    files.write("big/random.bin", new DigestInputStream(new RandomStream(size, 42), sent));
    long up = System.nanoTime() - t0;

    MessageDigest received = sha256();
    long t1 = System.nanoTime();
    long count;
    try (InputStream in = new DigestInputStream(files.open("big/random.bin"), received)) {
      count = in.transferTo(OutputStreamSink.INSTANCE);
    }
    long down = System.nanoTime() - t1;

    System.out.printf("[it] 64 MiB through files(): write(InputStream) %d ms, open() %d ms%n",
        TimeUnit.NANOSECONDS.toMillis(up), TimeUnit.NANOSECONDS.toMillis(down));
    assertThat(count).isEqualTo(size);
    assertThat(HexFormat.of().formatHex(received.digest())).isEqualTo(HexFormat.of().formatHex(sent.digest()));
    assertThat(sandbox.exec("sha256sum big/random.bin").stdout()).startsWith(HexFormat.of().formatHex(
        sha256Of(new RandomStream(size, 42))));
    files.delete("big/random.bin");
  }

  @Test
  void uploadAndDownloadCopyLocalFiles() throws Exception {
    Path local = tmp.resolve("local.bin");
    byte[] data = new RandomStream(3 << 20, 7).readAllBytes();
    Files.write(local, data);

    files.upload(local, "copies/local.bin");
    Path back = tmp.resolve("back.bin");
    files.download("copies/local.bin", back);

    assertThat(Files.readAllBytes(back)).isEqualTo(data);
    try (var listing = Files.list(tmp)) {
      assertThat(listing).containsExactlyInAnyOrder(local, back); // no temporary file left
    }
    assertThatThrownBy(() -> files.download("copies/missing.bin", back))
        .isInstanceOf(SandboxFileNotFoundException.class);
    assertThat(Files.readAllBytes(back)).isEqualTo(data);
    assertThatThrownBy(() -> files.upload(tmp.resolve("nope"), "x")).isInstanceOf(UncheckedIOException.class);
  }

  @Test
  void aLongTransferCountsAsActivityForTheIdleTimeout() throws Exception {
    try (LocalSandbox idle = LocalSandbox.builder().idleTimeout(Duration.ofMillis(800)).start()) {
      idle.files().writeString("slow.txt", "x".repeat(10_000));
      try (InputStream in = idle.files().open("slow.txt")) {
        assertThat(in.read()).isEqualTo('x');
        Thread.sleep(2_000); // an open download is activity: the idle check must not stop the agent
        assertThat(in.readAllBytes()).hasSize(9_999);
      }
      assertThat(idle.files().exists("slow.txt")).isTrue();
    }
  }

  // ---- directories and changes

  @Test
  void listIsSortedInPreOrderAndHonoursRecursiveAndHidden() {
    files.mkdir("tree/sub/deeper");
    files.writeString("tree/b.txt", "b");
    files.writeString("tree/.hidden", "h");
    files.writeString("tree/sub/a.txt", "aa");
    files.writeString("tree/sub/deeper/c.txt", "ccc");

    assertThat(files.list("tree")).extracting(FileEntry::relativePath).containsExactly("b.txt", "sub");
    assertThat(files.list("tree", ListOptions.recursively())).extracting(FileEntry::relativePath)
        .containsExactly("b.txt", "sub", "sub/a.txt", "sub/deeper", "sub/deeper/c.txt");
    List<FileEntry> all = files.list("tree", ListOptions.recursively().withIncludeHidden(true));
    assertThat(all).extracting(FileEntry::relativePath)
        .containsExactly(".hidden", "b.txt", "sub", "sub/a.txt", "sub/deeper", "sub/deeper/c.txt");
    FileEntry a = all.get(3);
    assertThat(a.name()).isEqualTo("a.txt");
    assertThat(a.type()).isEqualTo(FileType.FILE);
    assertThat(a.size()).isEqualTo(2);
    assertThat(a.absolutePath()).endsWith("/tree/sub/a.txt");
    assertThat(a.mode()).isEqualTo(0644);
    assertThat(a.modifiedAt()).isBefore(Instant.now().plusSeconds(5)).isAfter(Instant.now().minusSeconds(600));
    assertThat(all.get(2).type()).isEqualTo(FileType.DIRECTORY);
  }

  @Test
  void mkdirDeleteRenameMoveExistsAndStat() {
    files.mkdir("ops/a/b");
    files.mkdir("ops/a/b"); // exists already: nothing happens
    assertThat(files.stat("ops/a/b").type()).isEqualTo(FileType.DIRECTORY);
    files.writeString("ops/a/b/f.txt", "f");

    files.rename("ops/a/b/f.txt", "ops/a/b/g.txt");
    assertThat(files.exists("ops/a/b/f.txt")).isFalse();
    assertThat(files.readString("ops/a/b/g.txt")).isEqualTo("f");

    files.mkdir("ops/target");
    files.move("ops/a/b/g.txt", "ops/target"); // into an existing directory, like mv
    assertThat(files.readString("ops/target/g.txt")).isEqualTo("f");

    assertThatThrownBy(() -> files.delete("ops/a")).isInstanceOf(SandboxInvalidRequestException.class)
        .extracting(e -> ((SandboxException) e).code()).isEqualTo("IS_DIRECTORY");
    files.delete("ops/target/g.txt");
    assertThat(files.exists("ops/target/g.txt")).isFalse();
    files.deleteRecursively("ops");
    assertThat(files.exists("ops")).isFalse();
  }

  @Test
  void statDescribesModeOwnerAndSymbolicLinks() {
    sandbox.exec("mkdir -p st && printf 12345 > st/f && chmod 750 st/f && ln -sf f st/link").requireSuccess();

    FileStat f = files.stat("st/f");
    assertThat(f.type()).isEqualTo(FileType.FILE);
    assertThat(f.size()).isEqualTo(5);
    assertThat(f.mode()).isEqualTo(0750);
    assertThat(f.octalMode()).isEqualTo("0750");
    assertThat(f.permissions()).isEqualTo("rwxr-x---");
    assertThat(f.symlinkTarget()).isNull();
    assertThat(f.absolutePath()).endsWith("/st/f");

    FileStat link = files.stat("st/link");
    assertThat(link.type()).isEqualTo(FileType.SYMLINK);
    assertThat(link.symlinkTarget()).isEqualTo("f");
    assertThat(files.readString("st/link")).isEqualTo("12345"); // reads follow a link inside the workspace
  }

  // ---- errors

  @Test
  void aMissingFileIsSandboxFileNotFound() {
    Throwable t = catchThrowable(() -> files.readString("no/such.txt"));
    assertThat(t).isInstanceOf(SandboxFileNotFoundException.class);
    SandboxException e = (SandboxException) t;
    assertThat(e.code()).isEqualTo("FILE_NOT_FOUND");
    assertThat(e.httpStatus()).isEqualTo(404);
    assertThat(e.context()).containsEntry("path", "no/such.txt");
    assertThatThrownBy(() -> files.open("no/such.txt")).isInstanceOf(SandboxFileNotFoundException.class);
    assertThatThrownBy(() -> files.stat("no/such.txt")).isInstanceOf(SandboxFileNotFoundException.class);
    assertThatThrownBy(() -> files.list("no/such")).isInstanceOf(SandboxFileNotFoundException.class);
    assertThatThrownBy(() -> files.delete("no/such.txt")).isInstanceOf(SandboxFileNotFoundException.class);
    assertThat(files.exists("no/such.txt")).isFalse();
  }

  @Test
  void readingADirectoryIsAnInvalidRequest() {
    files.mkdir("adir");

    assertThatThrownBy(() -> files.readBytes("adir")).isInstanceOf(SandboxInvalidRequestException.class)
        .hasMessageContaining("directory")
        .extracting(e -> ((SandboxException) e).code()).isEqualTo("IS_DIRECTORY");
    assertThatThrownBy(() -> files.writeString("adir", "x")).isInstanceOf(SandboxInvalidRequestException.class);
    files.writeString("afile", "x");
    assertThatThrownBy(() -> files.list("afile")).isInstanceOf(SandboxInvalidRequestException.class)
        .extracting(e -> ((SandboxException) e).code()).isEqualTo("NOT_DIRECTORY");
  }

  @Test
  void pathsOutsideTheWorkspaceAreAPermissionError() {
    sandbox.exec("ln -sfn /etc etc-link").requireSuccess();

    for (String path : List.of("../outside.txt", "/etc/passwd", "etc-link/passwd")) {
      assertThatThrownBy(() -> files.readString(path)).as(path).isInstanceOf(SandboxPermissionException.class)
          .extracting(e -> ((SandboxException) e).code()).isEqualTo("PERMISSION_DENIED");
    }
    assertThatThrownBy(() -> files.writeString("../escape.txt", "x")).isInstanceOf(SandboxPermissionException.class);
    assertThatThrownBy(() -> files.exists("../x")).isInstanceOf(SandboxPermissionException.class);
    assertThatThrownBy(() -> files.deleteRecursively(".")).isInstanceOf(SandboxPermissionException.class);
  }

  @Test
  void aLargeStreamedWriteThatTheAgentRefusesUpFrontReportsTheAgentsError() {
    // The agent answers before it reads the body; the client must report that answer, not the
    // broken pipe of the body it was still sending.
    assertThatThrownBy(() -> files.write("../escape.bin", new RandomStream(32L << 20, 1)))
        .isInstanceOf(SandboxPermissionException.class);
    files.mkdir("refused-dir");
    assertThatThrownBy(() -> files.write("refused-dir", new RandomStream(32L << 20, 1)))
        .isInstanceOf(SandboxInvalidRequestException.class)
        .extracting(e -> ((SandboxException) e).code()).isEqualTo("IS_DIRECTORY");
  }

  // ---- shared with commands

  @Test
  void filesAndCommandsSeeTheSameFiles() {
    files.writeString("shared/from-sdk.txt", "written by files()\n");
    assertThat(sandbox.exec("cat shared/from-sdk.txt").stdout()).isEqualTo("written by files()\n");

    sandbox.exec("printf 'written by a command' > shared/from-cmd.txt").requireSuccess();
    assertThat(files.readString("shared/from-cmd.txt")).isEqualTo("written by a command");
    assertThat(files.list("shared")).extracting(FileEntry::name).containsExactly("from-cmd.txt", "from-sdk.txt");
  }

  // ---- helpers

  private static MessageDigest sha256() throws NoSuchAlgorithmException {
    return MessageDigest.getInstance("SHA-256");
  }

  private static byte[] sha256Of(InputStream in) throws Exception {
    MessageDigest d = sha256();
    try (DigestInputStream din = new DigestInputStream(in, d)) {
      din.transferTo(OutputStreamSink.INSTANCE);
    }
    return d.digest();
  }

  /** Pseudo-random bytes of a given length, generated as read (never held whole). */
  private static final class RandomStream extends InputStream {
    private final SplittableRandom random;
    private long left;

    RandomStream(long size, long seed) {
      this.left = size;
      this.random = new SplittableRandom(seed);
    }

    @Override
    public int read() {
      if (left <= 0) {
        return -1;
      }
      left--;
      return random.nextInt(256);
    }

    @Override
    public int read(byte[] b, int off, int len) {
      if (left <= 0) {
        return -1;
      }
      int n = (int) Math.min(len, left);
      for (int i = 0; i < n; i++) {
        b[off + i] = (byte) random.nextInt(256);
      }
      left -= n;
      return n;
    }
  }

  /** Discards what is written. */
  private static final class OutputStreamSink extends java.io.OutputStream {
    static final OutputStreamSink INSTANCE = new OutputStreamSink();

    @Override
    public void write(int b) {}

    @Override
    public void write(byte[] b, int off, int len) {}
  }
}
