package dev.sandboxsdk.bench.sdk;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.bench.Procs;
import dev.sandboxsdk.bench.RssSampler;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Random;

/**
 * File transfer benchmark (see docs/performance.md, "Files"): one file of {@code --mib} MiB
 * (default 1024) of incompressible bytes goes into a sandbox with {@code files().upload} and
 * back out with {@code files().download}, through the real agent (started here, with the flags
 * LocalSandbox uses), and is checked byte for byte by SHA-256 on all three sides: the local
 * source, the sandbox's copy ({@code sha256sum} run in the sandbox) and the downloaded copy.
 * While each transfer runs, the agent's resident memory is sampled from /proc every 20 ms; the
 * peak is printed beside the agent's RSS before the transfer. The floor, measured in the same
 * run: a local {@code Files.copy} of the same file on the same disk, and {@code cat} of it to
 * /dev/null (the page-cache read rate).
 *
 * <p>Run from the repository root: {@code bash benchmarks/scripts/files.sh [--mib 1024] [--runs 2]}.
 */
public class FilesBench {
  static int mib = 1024;
  static int runs = 2;

  static void parse(String[] args) {
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--mib": mib = Integer.parseInt(args[++i]); break;
        case "--runs": runs = Integer.parseInt(args[++i]); break;
        default: throw new IllegalArgumentException("unknown option " + args[i] + " (--mib N, --runs N)");
      }
    }
  }

  public static void main(String[] args) throws Exception {
    parse(args);
    long size = (long) mib << 20;
    System.out.printf(Locale.ROOT, "FilesBench: %s %s, %d cores, %d MiB, %d runs%n",
        System.getProperty("java.vm.name"), System.getProperty("java.version"),
        Runtime.getRuntime().availableProcessors(), mib, runs);

    Path dir = Files.createTempDirectory("filesbench");
    Path ws = Files.createDirectory(dir.resolve("ws"));
    Path source = dir.resolve("source.bin");
    String sourceSha = writeRandom(source, size);

    Path tokenFile = dir.resolve("token");
    Files.writeString(tokenFile, "bench-token");
    String cp = System.getProperty("java.class.path");
    Process agent = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:+UseSerialGC", "-Xss512k", "-Xms8m", "-Xmx512m", "-XX:-UsePerfData", "-cp", cp, "dev.sandboxsdk.agent.Main", "--port", "0",
        "--bind", "127.0.0.1", "--workspace", ws.toString(), "--token-file", tokenFile.toString(),
        "--request-timeout-seconds", "600", "--exit-on-stdin-eof")
        .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(agent.getInputStream(), StandardCharsets.UTF_8));
      String url = out.readLine().replaceAll(".*\"url\":\"([^\"]*)\".*", "$1");
      long pid = agent.pid();
      try (Sandbox sandbox = Sandbox.connect(URI.create(url), "bench-token")) {
        sandbox.exec("true");
        for (int run = 1; run <= runs; run++) {
          double[] floor = floors(source, dir.resolve("floor.bin"));
          double floorS = floor[0];
          double catS = floor[1];
          double loopS = floor[2];

          long heapBefore = usedHeap();
          long rssBefore = RssSampler.rss(pid);
          RssSampler up = new RssSampler(pid);
          long t0 = System.nanoTime();
          sandbox.files().upload(source, "big.bin");
          double upS = (System.nanoTime() - t0) / 1e9;
          long upPeak = up.stop()[0];
          ExecResult sum = sandbox.exec(Command.of("sha256sum", "big.bin"), ExecOptions.defaults());
          String sandboxSha = sum.stdout().split(" ")[0];

          Path back = dir.resolve("back.bin");
          long rssMid = RssSampler.rss(pid);
          RssSampler down = new RssSampler(pid);
          t0 = System.nanoTime();
          sandbox.files().download("big.bin", back);
          double downS = (System.nanoTime() - t0) / 1e9;
          long downPeak = down.stop()[0];
          String backSha = sha256(back);
          long heapAfter = usedHeap();
          boolean exact = sourceSha.equals(sandboxSha) && sourceSha.equals(backSha)
              && Files.size(back) == size;

          System.out.printf(Locale.ROOT, "run %d: upload %.0f MB/s (%.2f s), download %.0f MB/s (%.2f s);"
              + " floor: file to loopback socket to file %.0f MB/s, local copy %.0f MB/s, cat %.0f MB/s%n", run,
              size / upS / 1e6, upS, size / downS / 1e6, downS, size / loopS / 1e6, size / floorS / 1e6, size / catS / 1e6);
          System.out.printf(Locale.ROOT, "run %d: agent RSS %d MiB before upload, peak %d MiB during it; %d MiB"
              + " before download, peak %d MiB during it; benchmark JVM heap in use %d -> %d MiB%n", run,
              rssBefore >> 20, upPeak >> 20, rssMid >> 20, downPeak >> 20, heapBefore >> 20, heapAfter >> 20);
          System.out.printf(Locale.ROOT, "run %d: sha256 source %s, sandbox %s, downloaded %s: %s%n", run,
              sourceSha.substring(0, 16), sandboxSha.substring(0, Math.min(16, sandboxSha.length())),
              backSha.substring(0, 16), exact ? "byte-exact" : "MISMATCH");
          if (!exact) {
            throw new IllegalStateException("the file did not arrive byte for byte");
          }
          Files.delete(back);
          sandbox.files().delete("big.bin");
        }
      }
    } finally {
      agent.destroy();
      agent.waitFor();
      Procs.deleteTree(dir);
    }
  }

  /**
   * Floors of one run, in seconds: the same bytes copied on the same disk, read from the page cache
   * by {@code cat}, and sent over a loopback socket ({@link #loopbackCopy}); {@code copy} is deleted after.
   */
  static double[] floors(Path source, Path copy) throws Exception {
    long t0 = System.nanoTime();
    Files.copy(source, copy, StandardCopyOption.REPLACE_EXISTING);
    double floorS = (System.nanoTime() - t0) / 1e9;
    Files.delete(copy);
    t0 = System.nanoTime();
    new ProcessBuilder("cat", source.toString()).redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor();
    double catS = (System.nanoTime() - t0) / 1e9;
    t0 = System.nanoTime();
    loopbackCopy(source, copy);
    double loopS = (System.nanoTime() - t0) / 1e9;
    Files.delete(copy);
    return new double[] {floorS, catS, loopS};
  }

  /**
   * The transfer floor: the file read, sent over one loopback TCP connection with 64 KiB writes,
   * and written to a file on the same disk, by two threads of this JVM: what any HTTP transfer
   * between two processes on this machine costs at least.
   */
  static void loopbackCopy(Path from, Path to) throws Exception {
    try (java.net.ServerSocket server = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      Thread sender = new Thread(() -> {
        try (java.net.Socket s = new java.net.Socket(java.net.InetAddress.getLoopbackAddress(), server.getLocalPort());
            InputStream in = Files.newInputStream(from); OutputStream out = s.getOutputStream()) {
          byte[] buf = new byte[64 << 10];
          for (int n; (n = in.read(buf)) > 0; ) {
            out.write(buf, 0, n);
          }
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }, "loopback-sender");
      sender.start();
      try (java.net.Socket s = server.accept(); InputStream in = s.getInputStream();
          OutputStream out = Files.newOutputStream(to)) {
        byte[] buf = new byte[64 << 10];
        for (int n; (n = in.read(buf)) > 0; ) {
          out.write(buf, 0, n);
        }
      }
      sender.join();
    }
  }

  /** Writes incompressible bytes (a seeded PRNG) and returns their SHA-256. */
  static String writeRandom(Path file, long size) throws Exception {
    MessageDigest md = MessageDigest.getInstance("SHA-256");
    Random random = new Random(42);
    byte[] buf = new byte[1 << 20];
    try (OutputStream out = Files.newOutputStream(file)) {
      for (long left = size; left > 0; left -= buf.length) {
        random.nextBytes(buf);
        int n = (int) Math.min(buf.length, left);
        out.write(buf, 0, n);
        md.update(buf, 0, n);
      }
    }
    return HexFormat.of().formatHex(md.digest());
  }

  static String sha256(Path file) throws Exception {
    MessageDigest md = MessageDigest.getInstance("SHA-256");
    byte[] buf = new byte[1 << 20];
    try (InputStream in = Files.newInputStream(file)) {
      for (int n; (n = in.read(buf)) > 0; ) {
        md.update(buf, 0, n);
      }
    }
    return HexFormat.of().formatHex(md.digest());
  }

  static long usedHeap() {
    System.gc();
    Runtime r = Runtime.getRuntime();
    return r.totalMemory() - r.freeMemory();
  }
}
