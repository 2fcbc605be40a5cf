package dev.sandboxsdk.bench.agent;

import static dev.sandboxsdk.bench.agent.AgentBench.say;

import dev.sandboxsdk.bench.RawHttp;
import dev.sandboxsdk.bench.RawHttp.Resp;
import dev.sandboxsdk.bench.agent.EventStream.StreamResult;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.zip.CRC32;

/**
 * Part 3 of {@link AgentBench}: {@code POST /api/execute/stream} throughput of zeros and random
 * data in base64 and of text in UTF-8, read by the verifying client ({@link EventStream#run}) and
 * by a drain-only client ({@link EventStream#drain}).
 */
final class StreamPhase {
  /** One streaming workload: the request body, its encoding, and the expected output. */
  record Workload(String label, String shortName, String body, boolean base64, long bytes, long crc) {}

  private final AgentBench b;
  private final AgentOptions o;
  private final RawHttp http;
  private final String name;

  StreamPhase(AgentBench b, RawHttp http, String name) {
    this.b = b;
    this.o = b.o;
    this.http = http;
    this.name = name;
  }

  boolean run() throws IOException {
    say("  [3] POST /api/execute/stream throughput (MB = 10^6 bytes of raw process output; %d runs each, median shown)", o.streamReps);
    boolean ok = true;
    Path rand = b.workspace.resolve("rand.bin");
    List<Workload> workloads = workloads(rand);
    // warm-up (agent and client JIT): 64 MiB of each kind, not reported
    long warm = Math.min(67108864, o.streamBytes);
    stream("warm-up", "{\"argv\":[\"head\",\"-c\",\"" + warm + "\",\"/dev/zero\"],\"encoding\":\"base64\"}", true, warm, 0);
    stream("warm-up", "{\"command\":\"yes abcdefghij | head -c " + warm + "\"}", false, warm, 0);

    for (Workload w : workloads) {
      ok &= verifying(w);
    }
    // The same workloads read by a client that only de-chunks and counts (no SSE/base64/JSON decoding),
    // to show how much of the above is the decoding client competing for the 2 cores.
    for (Workload w : List.of(workloads.get(0), workloads.get(2))) {
      ok &= drainOnly(w);
    }
    Files.deleteIfExists(rand);
    return ok;
  }

  private StreamResult stream(String label, String bodyJson, boolean base64, long expectedBytes, long expectedCrc)
      throws IOException {
    return EventStream.run(http, b.agentPid, label, bodyJson, base64, expectedBytes, expectedCrc);
  }

  /** The three workloads with their expected checksums; creates the random file through the agent (not timed). */
  private List<Workload> workloads(Path rand) throws IOException {
    // expected checksums, computed here
    CRC32 zeroCrc = new CRC32();
    byte[] zeros = new byte[1 << 20];
    for (long left = o.streamBytes; left > 0; left -= zeros.length) {
      zeroCrc.update(zeros, 0, (int) Math.min(zeros.length, left));
    }
    CRC32 textCrc = new CRC32();
    byte[] unit = "abcdefghij\n".getBytes(StandardCharsets.US_ASCII);
    byte[] block = new byte[unit.length * 95_325]; // ~1 MiB of whole lines
    for (int i = 0; i < block.length; i++) {
      block[i] = unit[i % unit.length];
    }
    for (long left = o.streamBytes; left > 0; left -= block.length) {
      textCrc.update(block, 0, (int) Math.min(block.length, left));
    }
    // random file, created through the agent (not timed)
    Resp mk = http.call("POST", "/api/execute",
        ("{\"command\":\"head -c " + o.randBytes + " /dev/urandom > rand.bin\"}").getBytes(StandardCharsets.UTF_8));
    if (mk.status != 200 || !mk.text().contains("\"exitCode\":0")) {
      throw new IOException("cannot create rand.bin: " + mk.text());
    }
    CRC32 randCrc = new CRC32();
    try (InputStream in = Files.newInputStream(rand)) {
      byte[] buf = new byte[1 << 20];
      int n;
      while ((n = in.read(buf)) > 0) {
        randCrc.update(buf, 0, n);
      }
    }
    if (Files.size(rand) != o.randBytes) {
      throw new IOException("rand.bin has " + Files.size(rand) + " bytes");
    }
    return List.of(
        new Workload("zeros  base64 (head -c " + o.streamBytes + " /dev/zero)", "zeros, base64",
            "{\"argv\":[\"head\",\"-c\",\"" + o.streamBytes + "\",\"/dev/zero\"],\"encoding\":\"base64\"}", true,
            o.streamBytes, zeroCrc.getValue()),
        new Workload("random base64 (cat rand.bin, " + o.randBytes + " B)", "random, base64",
            "{\"argv\":[\"cat\",\"rand.bin\"],\"encoding\":\"base64\"}", true, o.randBytes, randCrc.getValue()),
        new Workload("ASCII  utf-8  (yes abcdefghij | head -c " + o.streamBytes + ")", "text, UTF-8",
            "{\"command\":\"yes abcdefghij | head -c " + o.streamBytes + "\"}", false, o.streamBytes, textCrc.getValue()));
  }

  /** The workload's runs through the verifying client; the median run reported. */
  private boolean verifying(Workload w) throws IOException {
    List<StreamResult> runs = new ArrayList<>();
    for (int i = 0; i < o.streamReps; i++) {
      runs.add(stream(w.label(), w.body(), w.base64(), w.bytes(), w.crc()));
    }
    boolean allOk = runs.stream().allMatch(StreamResult::ok);
    runs.sort(Comparator.comparingDouble(StreamResult::mbPerSec));
    StreamResult r = runs.get(runs.size() / 2);
    String verdict = allOk ? "verified (count+CRC32+offsets, exit 0)" : "MISMATCH in at least one run";
    for (StreamResult x : runs) {
      if (!x.ok()) {
        verdict += String.format(Locale.ROOT, " [got %d B, crc ok %s, offsets ok %s, exit %d, stderr %d B]",
            x.rawBytes, x.crc == x.expectedCrc, x.offsetsOk, x.exitCode, x.stderrBytes);
      }
    }
    String line = String.format(Locale.ROOT,
        "%-50s %6.1f MB/s raw (runs %s; wire %6.1f MB/s), %d B %s; median run: %.2f s, %d events (%.0f B raw/event), "
            + "%d HTTP chunks, CPU s: agent %.2f, child procs %.2f, client %.2f",
        w.label(), r.mbPerSec(), runsList(runs), r.wireBytes / r.seconds / 1e6, r.rawBytes, verdict, r.seconds,
        r.events, r.events > 2 ? r.rawBytes / (double) (r.events - 2) : 0.0, r.chunks, r.agentCpu, r.childCpu, r.clientCpu);
    say("    %s", line);
    b.sum("[%s] stream %s", name, line);
    b.streamBars.bar(w.shortName(), "agent " + name + ", verifying client", r.mbPerSec(),
        runs.stream().mapToDouble(StreamResult::mbPerSec).toArray());
    return allOk;
  }

  /** The workload's runs through the drain-only client; the median run reported. */
  private boolean drainOnly(Workload w) throws IOException {
    List<double[]> runs = new ArrayList<>();
    boolean allOk = true;
    for (int i = 0; i < o.streamReps; i++) {
      double[] d = EventStream.drain(http, w.body());
      runs.add(d);
      allOk &= d[2] == 0 && d[1] >= w.bytes();
    }
    runs.sort(Comparator.comparingDouble(d -> d[0]));
    double[] m = runs.get(runs.size() / 2);
    StringBuilder all = new StringBuilder("[");
    for (double[] d : runs) {
      all.append(all.length() > 1 ? ", " : "").append(String.format(Locale.ROOT, "%.0f", w.bytes() / d[0] / 1e6));
    }
    all.append(']');
    String line = String.format(Locale.ROOT, "%-50s %6.1f MB/s raw (runs %s; wire %6.1f MB/s) with a drain-only client (%s)",
        w.label(), w.bytes() / m[0] / 1e6, all, m[1] / m[0] / 1e6, allOk ? "exit 0, wire bytes plausible" : "CHECK FAILED");
    say("    %s", line);
    b.sum("[%s] stream %s", name, line);
    b.streamBars.bar(w.shortName(), "agent " + name + ", drain-only client (floor of the client's work)", w.bytes() / m[0] / 1e6,
        runs.stream().mapToDouble(d -> w.bytes() / d[0] / 1e6).toArray());
    return allOk;
  }

  static String runsList(List<StreamResult> runs) {
    StringBuilder sb = new StringBuilder("[");
    for (StreamResult r : runs) {
      sb.append(sb.length() > 1 ? ", " : "").append(String.format(Locale.ROOT, "%.0f", r.mbPerSec()));
    }
    return sb.append(']').toString();
  }
}
