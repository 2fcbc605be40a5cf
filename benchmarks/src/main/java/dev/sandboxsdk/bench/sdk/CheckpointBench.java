package dev.sandboxsdk.bench.sdk;

import dev.sandboxsdk.Checkpoint;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.bench.RssSampler;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.stream.Stream;

/**
 * Checkpoint benchmark (see docs/performance.md, "Checkpoints"): a workspace of {@code --mib}
 * MiB (default 1024) made of one big file of incompressible bytes and {@code --small} (default
 * 10,000) files of 4 KiB in 100 directories, plus an empty directory and a symbolic link, is
 * checkpointed through the real agent (started here, with the flags LocalSandbox uses, and
 * {@code --checkpoint-dir} on the same disk); then half of the small files are deleted, the big
 * file is overwritten at its start and new files are added, and the checkpoint is restored.
 * Printed per run: the time of each, the checkpoint's size and the checkpoint directory's disk
 * use ({@code du}), the agent's resident memory before and at its peak (sampled from /proc every
 * 20 ms) and the peak of tar's, and whether the restored workspace is identical to the one before
 * (every entry's type, mode, link target and SHA-256). The floor, in the same run: {@code cp -a}
 * of the same workspace to the same disk followed by {@code sync}.
 *
 * <p>Run from the repository root: {@code bash benchmarks/scripts/checkpoints.sh [--mib 1024] [--small 10000] [--runs 1]}.
 */
public class CheckpointBench {
  static int mib = 1024;
  static int small = 10_000;
  static int runs = 1;

  static void parse(String[] args) {
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--mib": mib = Integer.parseInt(args[++i]); break;
        case "--small": small = Integer.parseInt(args[++i]); break;
        case "--runs": runs = Integer.parseInt(args[++i]); break;
        default: throw new IllegalArgumentException("unknown option " + args[i] + " (--mib N, --small N, --runs N)");
      }
    }
  }

  public static void main(String[] args) throws Exception {
    parse(args);
    System.out.printf(Locale.ROOT, "CheckpointBench: %s %s, %d cores, %d MiB workspace (%d small files of 4 KiB),"
        + " %d runs%n", System.getProperty("java.vm.name"), System.getProperty("java.version"),
        Runtime.getRuntime().availableProcessors(), mib, small, runs);

    Path dir = Files.createTempDirectory("checkpointbench");
    Path ws = Files.createDirectory(dir.resolve("ws"));
    Path checkpoints = dir.resolve("checkpoints");
    long total = (long) mib << 20;
    long bigSize = total - (long) small * 4096;
    fill(ws, bigSize);

    Path tokenFile = dir.resolve("token");
    Files.writeString(tokenFile, "bench-token");
    String cp = System.getProperty("java.class.path");
    Process agent = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:+UseSerialGC", "-Xss512k", "-Xms8m", "-Xmx512m", "-XX:-UsePerfData", "-cp", cp, "dev.sandboxsdk.agent.Main",
        "--port", "0", "--bind", "127.0.0.1", "--workspace", ws.toString(), "--token-file", tokenFile.toString(),
        "--checkpoint-dir", checkpoints.toString(), "--exit-on-stdin-eof")
        .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(agent.getInputStream(), StandardCharsets.UTF_8));
      String url = out.readLine().replaceAll(".*\"url\":\"([^\"]*)\".*", "$1");
      long pid = agent.pid();
      try (Sandbox sandbox = Sandbox.connect(URI.create(url), "bench-token")) {
        sandbox.exec("true");
        for (int run = 1; run <= runs; run++) {
          String before = digest(ws);
          Path copy = dir.resolve("floor");
          long t0 = System.nanoTime();
          run("cp", "-a", ws.toString(), copy.toString());
          run("sync");
          double floorS = (System.nanoTime() - t0) / 1e9;
          run("rm", "-rf", copy.toString());

          long rssBefore = RssSampler.rss(pid);
          RssSampler sampler = new RssSampler(pid);
          t0 = System.nanoTime();
          Checkpoint c = sandbox.checkpoints().create("bench-" + run);
          double ckptS = (System.nanoTime() - t0) / 1e9;
          long[] ckptPeak = sampler.stop();
          String du = run("du", "-sh", checkpoints.toString()).split("\\s+")[0];

          change(ws);
          String changed = digest(ws);

          long rssMid = RssSampler.rss(pid);
          sampler = new RssSampler(pid);
          t0 = System.nanoTime();
          sandbox.checkpoints().restore(c.id());
          double restoreS = (System.nanoTime() - t0) / 1e9;
          long[] restorePeak = sampler.stop();
          String after = digest(ws);
          boolean exact = before.equals(after) && !before.equals(changed);

          System.out.printf(Locale.ROOT, "run %d: checkpoint %.2f s (%.0f MB/s), restore %.2f s (%.0f MB/s);"
              + " floor: cp -a + sync %.2f s (%.0f MB/s)%n", run, ckptS, total / ckptS / 1e6, restoreS,
              total / restoreS / 1e6, floorS, total / floorS / 1e6);
          System.out.printf(Locale.ROOT, "run %d: checkpoint %d bytes (%.1f MiB for %d MiB of files), checkpoint"
              + " directory on disk %s%n", run, c.sizeBytes(), c.sizeBytes() / 1048576.0, mib, du);
          System.out.printf(Locale.ROOT, "run %d: agent RSS %d MiB before, peak %d MiB during the checkpoint (tar %d MiB);"
              + " %d MiB before, peak %d MiB during the restore (tar %d MiB)%n", run, rssBefore >> 20, ckptPeak[0] >> 20,
              ckptPeak[1] >> 20, rssMid >> 20, restorePeak[0] >> 20, restorePeak[1] >> 20);
          System.out.printf(Locale.ROOT, "run %d: restored workspace %s%n", run,
              exact ? "identical to the checkpointed one (types, modes, links, SHA-256 of every file)" : "DIFFERENT");
          if (!exact) {
            throw new IllegalStateException("the restore did not bring the workspace back");
          }
          sandbox.checkpoints().delete(c.id());
        }
      }
    } finally {
      agent.destroy();
      agent.waitFor();
      run("rm", "-rf", dir.toString());
    }
  }

  /** One big file of incompressible bytes, {@link #small} files of 4 KiB, an empty directory, a link. */
  static void fill(Path ws, long bigSize) throws IOException {
    Random random = new Random(42);
    byte[] buf = new byte[1 << 20];
    try (OutputStream out = Files.newOutputStream(ws.resolve("big.bin"))) {
      for (long left = bigSize; left > 0; left -= buf.length) {
        random.nextBytes(buf);
        out.write(buf, 0, (int) Math.min(buf.length, left));
      }
    }
    byte[] four = new byte[4096];
    for (int i = 0; i < small; i++) {
      Path d = Files.createDirectories(ws.resolve("src").resolve("d" + (i % 100)));
      random.nextBytes(four);
      Files.write(d.resolve("f" + i + ".txt"), four);
    }
    Files.setPosixFilePermissions(ws.resolve("src/d0/f0.txt"), PosixFilePermissions.fromString("rwx--x---"));
    Files.createDirectories(ws.resolve("empty/inner"));
    Files.createSymbolicLink(ws.resolve("link"), Path.of("src/d1/f1.txt"));
  }

  /** Half the small files gone, the big file's first MiB overwritten, new files and a link. */
  static void change(Path ws) throws IOException {
    for (int i = 0; i < small; i += 2) {
      Files.delete(ws.resolve("src").resolve("d" + (i % 100)).resolve("f" + i + ".txt"));
    }
    try (var ch = java.nio.channels.FileChannel.open(ws.resolve("big.bin"), java.nio.file.StandardOpenOption.WRITE)) {
      ch.write(java.nio.ByteBuffer.allocate(1 << 20));
    }
    Files.writeString(ws.resolve("created-after.txt"), "new");
    Files.delete(ws.resolve("link"));
    Files.createSymbolicLink(ws.resolve("link"), Path.of("elsewhere"));
    Files.delete(ws.resolve("empty/inner"));
  }

  /** Type, mode, link target and SHA-256 of every entry, in a fixed order, digested. */
  static String digest(Path root) throws Exception {
    List<Path> all = new ArrayList<>();
    try (Stream<Path> walk = Files.walk(root)) {
      walk.sorted().forEach(all::add);
    }
    MessageDigest md = MessageDigest.getInstance("SHA-256");
    byte[] buf = new byte[1 << 20];
    for (Path p : all) {
      String mode = PosixFilePermissions.toString(Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS));
      md.update((root.relativize(p) + " " + mode + "\n").getBytes(StandardCharsets.UTF_8));
      if (Files.isSymbolicLink(p)) {
        md.update(("-> " + Files.readSymbolicLink(p) + "\n").getBytes(StandardCharsets.UTF_8));
      } else if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
        try (InputStream in = Files.newInputStream(p)) {
          for (int n; (n = in.read(buf)) > 0; ) {
            md.update(buf, 0, n);
          }
        }
      }
    }
    return HexFormat.of().formatHex(md.digest());
  }

  static String run(String... argv) throws Exception {
    Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (p.waitFor() != 0) {
      throw new IllegalStateException(String.join(" ", argv) + " failed: " + out);
    }
    return out;
  }
}
