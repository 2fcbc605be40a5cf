package dev.sandboxsdk.bench.agent;

import dev.sandboxsdk.bench.Svg;
import java.io.BufferedReader;
import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.CRC32;

/**
 * Benchmark of the sandbox container agent, self-contained (JDK only: it starts the agent's jar and
 * talks HTTP to it on a plain socket). Run it with {@code bash benchmarks/scripts/agent.sh}, which
 * runs it from the repository root with this module's jar alone on the classpath:
 *
 * <pre>
 *   bash benchmarks/scripts/agent.sh [--jar container-agent/target/container-agent.jar]
 *        [--calls 1000] [--warmup 200] [--stream-bytes 268435456] [--rand-bytes 100000000]
 *        [--processes 1000] [--agent-jvm-opts "-XX:+UseSerialGC -Xss512k -Xms8m -Xmx512m -XX:-UsePerfData"]
 * </pre>
 *
 * It measures, in one run (see docs/performance.md):
 *
 * <ol>
 *   <li>raw {@code new ProcessBuilder("true").start().waitFor()} in this JVM (default launch
 *       mechanism), plus {@code setsid true} and {@code setsid /bin/sh -c true} (what the agent
 *       actually spawns), and {@code true} in child JVMs of this program ({@code --raw-spawn-only})
 *       with {@code -Djdk.lang.Process.launchMechanism=VFORK} and with the default;
 *   <li>round trips of {@code GET /api/ping}, {@code {"argv":["true"]}} and {@code {"command":"true"}}
 *       through the agent on ONE keep-alive HTTP/1.1 connection, using a minimal client on a plain
 *       socket with TCP_NODELAY (the number of connections opened is reported);
 *   <li>streaming throughput of {@code POST /api/execute/stream} (base64 zeros, base64 random data,
 *       UTF-8 text): this client de-chunks HTTP, parses SSE, decodes base64/JSON strings and verifies
 *       byte count, offsets and CRC-32; plus the same streams read by a drain-only client;
 *   <li>agent RSS (idle, after each phase), JVM launch to ready line, and 1,000 concurrent
 *       background processes (start latency, RSS, threads, fds, exec latency meanwhile, kill-all);
 *   <li>the same for a second agent JVM started with {@code --agent-jvm-opts}.
 * </ol>
 *
 * It writes SVG plots into {@code --plots DIR}: exec latency by percentile beside raw spawn,
 * stream throughput, start latency as the process count grows, and the agent's RSS over the run.
 * {@code --smoke} runs every part at seconds-long sizes (CI), still verifying every result.
 *
 * Percentiles: samples sorted ascending, p-th percentile = sample at index ceil(p*n)-1.
 */
public class AgentBench {
  static final String READY_PREFIX = "SANDBOX_AGENT_READY ";
  static final String DEFAULT_TUNED_OPTS = "-XX:+UseSerialGC -Xss512k -Xms8m -Xmx512m -XX:-UsePerfData";

  // ---------------------------------------------------------------------------------------------
  // Options

  static final class Options {
    String jar = "container-agent/target/container-agent.jar";
    int calls = 1000;
    int warmup = 200;
    long streamBytes = 268_435_456L;
    long randBytes = 100_000_000L;
    int processes = 1000;
    String tunedOpts = DEFAULT_TUNED_OPTS;
    String baseOpts = "";
    String agentArgs = "";
    int clients = 16;
    long idleMs = 2000;
    int startupRepeats = 4;
    int streamReps = 3;
    String tunedBench = "all"; // startup | exec | all
    boolean rawSpawnOnly;
    boolean skipStream;
    boolean skipRawChildren;
    boolean keep;
    boolean smoke;
    String plots = "target/bench-plots";
    String self;

    static Options parse(String[] args) {
      Options o = new Options();
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        switch (a) {
          case "--raw-spawn-only": o.rawSpawnOnly = true; break;
          case "--skip-stream": o.skipStream = true; break;
          case "--skip-raw-children": o.skipRawChildren = true; break;
          case "--keep-workspace": o.keep = true; break;
          case "--smoke": o.smokeSizes(); break;
          case "--help": case "-h": usage(); System.exit(0); break;
          default: {
            if (i + 1 >= args.length) {
              die("option " + a + " needs a value (see --help)");
            }
            String v = args[++i];
            switch (a) {
              case "--jar": o.jar = v; break;
              case "--calls": o.calls = Integer.parseInt(v); break;
              case "--warmup": o.warmup = Integer.parseInt(v); break;
              case "--stream-bytes": o.streamBytes = Long.parseLong(v); break;
              case "--rand-bytes": o.randBytes = Long.parseLong(v); break;
              case "--processes": o.processes = Integer.parseInt(v); break;
              case "--agent-jvm-opts": o.tunedOpts = v; break;
              case "--base-jvm-opts": o.baseOpts = v; break;
              case "--agent-args": o.agentArgs = v; break;
              case "--clients": o.clients = Integer.parseInt(v); break;
              case "--idle-ms": o.idleMs = Long.parseLong(v); break;
              case "--startup-repeats": o.startupRepeats = Integer.parseInt(v); break;
              case "--stream-reps": o.streamReps = Integer.parseInt(v); break;
              case "--tuned-bench": o.tunedBench = v; break;
              case "--self": o.self = v; break;
              case "--plots": o.plots = v; break;
              default: die("unknown option " + a + " (see --help)");
            }
          }
        }
      }
      if (!List.of("startup", "exec", "all").contains(o.tunedBench)) {
        die("--tuned-bench must be startup, exec or all");
      }
      return o;
    }

    /**
     * Seconds-long sizes so CI can run every part (CI runs it, so it cannot rot): results are still
     * verified (exit codes, byte counts, CRC-32), plots still written; the figures mean nothing.
     * Options after --smoke override these sizes.
     */
    void smokeSizes() {
      smoke = true;
      calls = 20;
      warmup = 5;
      streamBytes = 1 << 20;
      randBytes = 1_000_000;
      processes = 20;
      clients = 4;
      idleMs = 200;
      startupRepeats = 1;
      streamReps = 1;
      skipRawChildren = true;
    }

    static void usage() {
      System.out.println(String.join("\n",
          "Usage: bash benchmarks/scripts/agent.sh [options]",
          "  --jar PATH              agent jar (default container-agent/target/container-agent.jar)",
          "  --calls N               measured samples per latency series (default 1000)",
          "  --warmup N              warm-up iterations per latency series (default 200)",
          "  --stream-bytes N        bytes streamed from /dev/zero and from `yes` (default 268435456)",
          "  --rand-bytes N          size of the random file streamed with cat (default 100000000)",
          "  --processes N           concurrent background processes to hold (default 1000; 0 skips)",
          "  --agent-jvm-opts \"...\"  JVM options of the second agent (default \"" + DEFAULT_TUNED_OPTS + "\")",
          "  --base-jvm-opts \"...\"   JVM options of the first agent (default: none, i.e. JVM defaults)",
          "  --agent-args \"...\"      extra agent arguments for every agent, e.g. \"--spawn jdk\" (default none)",
          "  --clients N             concurrent clients for the second round of --processes starts (default 16)",
          "  --tuned-bench MODE      what runs against the second agent: startup | exec | all (default all)",
          "  --idle-ms N             idle time before the idle RSS reading (default 2000)",
          "  --startup-repeats N     extra agent launches per flag set for the start-up median (default 4)",
          "  --stream-reps N         repetitions of each streaming run; the median is reported (default 3)",
          "  --skip-stream           skip the streaming runs",
          "  --skip-raw-children     skip the child-JVM raw spawn runs",
          "  --keep-workspace        keep the temporary workspace and agent logs",
          "  --plots DIR             where the SVG plots go (default target/bench-plots)",
          "  --smoke                 seconds-long sizes (CI): 20 calls, 1 MiB streams, 20 processes, checks kept",
          "  --raw-spawn-only        (internal) only measure raw spawns in this JVM and print the samples"));
    }
  }

  static void die(String msg) {
    System.err.println("AgentBench: " + msg);
    System.exit(2);
  }

  // ---------------------------------------------------------------------------------------------
  // Statistics

  record Stats(int n, double p50, double p90, double p99, double max, double mean, int over10, int over35) {
    static Stats of(long[] nanos) {
      long[] s = nanos.clone();
      Arrays.sort(s);
      double sum = 0;
      int over10 = 0;
      int over35 = 0;
      for (long v : s) {
        sum += v;
        if (v >= 10_000_000L) {
          over10++;
        }
        if (v >= 35_000_000L) {
          over35++;
        }
      }
      return new Stats(s.length, ms(pick(s, 0.50)), ms(pick(s, 0.90)), ms(pick(s, 0.99)),
          ms(s[s.length - 1]), sum / s.length / 1e6, over10, over35);
    }

    static long pick(long[] sorted, double p) {
      int idx = (int) Math.ceil(p * sorted.length) - 1;
      return sorted[Math.max(0, Math.min(sorted.length - 1, idx))];
    }

    static double ms(long nanos) {
      return nanos / 1e6;
    }

    String line() {
      return String.format(Locale.ROOT, "p50 %7.3f  p90 %7.3f  p99 %7.3f  max %8.3f  mean %7.3f ms  (n=%d, >=10ms: %d, >=35ms: %d)",
          p50, p90, p99, max, mean, n, over10, over35);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Raw spawn

  static long[] rawSpawn(List<String> command, int warmup, int n) throws Exception {
    for (int i = 0; i < warmup; i++) {
      spawnOnce(command);
    }
    long[] samples = new long[n];
    for (int i = 0; i < n; i++) {
      long t0 = System.nanoTime();
      spawnOnce(command);
      samples[i] = System.nanoTime() - t0;
    }
    return samples;
  }

  static void spawnOnce(List<String> command) throws Exception {
    int rc = new ProcessBuilder(command).start().waitFor();
    if (rc != 0) {
      throw new IllegalStateException(command + " exited with " + rc);
    }
  }

  static String launchMechanism() {
    String m = System.getProperty("jdk.lang.Process.launchMechanism");
    return m != null ? m : "default (POSIX_SPAWN via jspawnhelper on Linux, JDK 17)";
  }

  /** Child-JVM mode: measure raw spawns of `true` and print the samples on one line. */
  static void rawSpawnChild(Options o) throws Exception {
    long[] s = rawSpawn(List.of("true"), o.warmup, o.calls);
    StringBuilder sb = new StringBuilder("RAW_SPAWN_SAMPLES_NS ");
    sb.append(launchMechanism().replace(' ', '_')).append(' ');
    for (int i = 0; i < s.length; i++) {
      if (i > 0) {
        sb.append(',');
      }
      sb.append(s[i]);
    }
    System.out.println(sb);
  }

  /** The command that re-runs this program. */
  List<String> selfCommand() {
    if (o.self != null) {
      return List.of(o.self);
    }
    return List.of("-cp", System.getProperty("java.class.path"), AgentBench.class.getName());
  }

  long[] rawSpawnInChildJvm(List<String> jvmOpts) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(javaBin());
    cmd.addAll(jvmOpts);
    cmd.addAll(selfCommand());
    cmd.addAll(List.of("--raw-spawn-only", "--warmup", String.valueOf(o.warmup), "--calls", String.valueOf(o.calls)));
    Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    String samples = null;
    try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        if (line.startsWith("RAW_SPAWN_SAMPLES_NS ")) {
          samples = line;
        }
      }
    }
    if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0 || samples == null) {
      throw new IllegalStateException("child JVM " + cmd + " failed");
    }
    String[] parts = samples.split(" ");
    String[] nums = parts[2].split(",");
    long[] out = new long[nums.length];
    for (int i = 0; i < nums.length; i++) {
      out[i] = Long.parseLong(nums[i]);
    }
    return out;
  }

  static String javaBin() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  // ---------------------------------------------------------------------------------------------
  // Minimal HTTP/1.1 client on a plain socket

  static final class Resp {
    final int status;
    final Map<String, String> headers;
    final byte[] body;

    Resp(int status, Map<String, String> headers, byte[] body) {
      this.status = status;
      this.headers = headers;
      this.body = body;
    }

    String text() {
      return new String(body, StandardCharsets.UTF_8);
    }
  }

  /** One keep-alive connection at a time; counts how many it had to open. */
  static final class RawHttp implements Closeable {
    final String host;
    final int port;
    final String token;
    int connectionsOpened;
    long requests;
    final List<String> reconnects = new ArrayList<>();
    Socket socket;
    FastIn in;
    OutputStream out;
    boolean mustClose;

    RawHttp(String host, int port, String token) {
      this.host = host;
      this.port = port;
      this.token = token;
    }

    void connect() throws IOException {
      close();
      Socket s = new Socket();
      s.setTcpNoDelay(true);
      s.connect(new InetSocketAddress(host, port), 5000);
      s.setSoTimeout(120_000);
      socket = s;
      in = new FastIn(s.getInputStream());
      out = s.getOutputStream();
      connectionsOpened++;
      mustClose = false;
    }

    byte[] requestBytes(String method, String path, byte[] body) {
      StringBuilder h = new StringBuilder(256);
      h.append(method).append(' ').append(path).append(" HTTP/1.1\r\n")
          .append("Host: ").append(host).append(':').append(port).append("\r\n")
          .append("Authorization: Bearer ").append(token).append("\r\n");
      if (body != null) {
        h.append("Content-Type: application/json\r\n");
      }
      h.append("Content-Length: ").append(body == null ? 0 : body.length).append("\r\n\r\n");
      byte[] head = h.toString().getBytes(StandardCharsets.US_ASCII);
      if (body == null || body.length == 0) {
        return head;
      }
      byte[] all = Arrays.copyOf(head, head.length + body.length);
      System.arraycopy(body, 0, all, head.length, body.length);
      return all;
    }

    /** Sends a request (one write) and reads the status line and headers. */
    Map<String, String> send(String method, String path, byte[] body, int[] statusOut) throws IOException {
      if (socket == null || mustClose) {
        connect();
      }
      byte[] request = requestBytes(method, path, body);
      String status;
      try {
        out.write(request);
        status = readLine(in);
      } catch (IOException e) {
        status = null;
      }
      if (status == null) {
        // The server closed the keep-alive connection: note it, and retry once on a new one.
        requests++;
        reconnects.add("after " + (requests - 1) + " requests, before " + method + " " + path);
        connect();
        out.write(request);
        status = readLine(in);
        if (status == null) {
          throw new EOFException("server closed a fresh connection before answering " + method + " " + path);
        }
      } else {
        requests++;
      }
      if (!status.startsWith("HTTP/1.1 ")) {
        throw new IOException("unexpected status line: " + status);
      }
      statusOut[0] = Integer.parseInt(status.substring(9, 12));
      Map<String, String> headers = new LinkedHashMap<>();
      String line;
      while ((line = readLine(in)) != null && !line.isEmpty()) {
        int colon = line.indexOf(':');
        if (colon > 0) {
          headers.put(line.substring(0, colon).trim().toLowerCase(Locale.ROOT), line.substring(colon + 1).trim());
        }
      }
      if (line == null) {
        throw new EOFException("connection closed inside the response headers");
      }
      if ("close".equalsIgnoreCase(headers.get("connection"))) {
        mustClose = true;
      }
      return headers;
    }

    Resp call(String method, String path, byte[] body) throws IOException {
      int[] st = new int[1];
      Map<String, String> headers = send(method, path, body, st);
      byte[] data;
      String te = headers.get("transfer-encoding");
      if (te != null && te.toLowerCase(Locale.ROOT).contains("chunked")) {
        data = new ChunkedIn(in).readAllBytes();
      } else {
        String cl = headers.get("content-length");
        if (cl == null) {
          throw new IOException("response without Content-Length or chunking (" + method + " " + path + ")");
        }
        data = in.readNBytes(Integer.parseInt(cl));
        if (data.length != Integer.parseInt(cl)) {
          throw new EOFException("short body");
        }
      }
      return new Resp(st[0], headers, data);
    }

    /** Sends a request and returns the (de-chunked) body stream of a chunked response. */
    InputStream stream(String method, String path, byte[] body, int[] status) throws IOException {
      Map<String, String> headers = send(method, path, body, status);
      String te = headers.get("transfer-encoding");
      if (te == null || !te.toLowerCase(Locale.ROOT).contains("chunked")) {
        throw new IOException("expected a chunked response, got headers " + headers);
      }
      return new ChunkedIn(in);
    }

    @Override
    public void close() {
      if (socket != null) {
        try {
          socket.close();
        } catch (IOException ignored) {
          // closing anyway
        }
        socket = null;
      }
    }
  }

  /** An unsynchronized buffered input stream with a fast line reader (status line, headers, chunk sizes). */
  static final class FastIn extends InputStream {
    final InputStream raw;
    final byte[] buf = new byte[256 * 1024];
    int pos;
    int lim;

    FastIn(InputStream raw) {
      this.raw = raw;
    }

    private int fill() throws IOException {
      if (pos == lim) {
        pos = 0;
        lim = 0;
        int n = raw.read(buf, 0, buf.length);
        if (n < 0) {
          return -1;
        }
        lim = n;
      }
      return lim - pos;
    }

    @Override
    public int read() throws IOException {
      if (pos == lim && fill() < 0) {
        return -1;
      }
      return buf[pos++] & 0xFF;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      if (pos == lim) {
        if (len >= buf.length) {
          return raw.read(b, off, len);
        }
        if (fill() < 0) {
          return -1;
        }
      }
      int n = Math.min(len, lim - pos);
      System.arraycopy(buf, pos, b, off, n);
      pos += n;
      return n;
    }

    @Override
    public int available() {
      return lim - pos;
    }

    /** Reads a CRLF (or LF) terminated ASCII line; null at EOF before any byte. */
    String readLine() throws IOException {
      StringBuilder sb = null;
      while (true) {
        if (pos == lim && fill() < 0) {
          return sb == null || sb.length() == 0 ? null : sb.toString();
        }
        for (int i = pos; i < lim; i++) {
          if (buf[i] == '\n') {
            int end = i > pos && buf[i - 1] == '\r' ? i - 1 : i;
            String part = new String(buf, pos, end - pos, StandardCharsets.ISO_8859_1);
            pos = i + 1;
            if (sb == null) {
              return part;
            }
            sb.append(part);
            int n = sb.length();
            if (n > 0 && sb.charAt(n - 1) == '\r') {
              sb.setLength(n - 1);
            }
            return sb.toString();
          }
        }
        if (sb == null) {
          sb = new StringBuilder();
        }
        sb.append(new String(buf, pos, lim - pos, StandardCharsets.ISO_8859_1));
        pos = lim;
      }
    }
  }

  /** Reads a CRLF (or LF) terminated ASCII line; null at EOF before any byte. */
  static String readLine(InputStream in) throws IOException {
    if (in instanceof FastIn) {
      return ((FastIn) in).readLine();
    }
    StringBuilder sb = new StringBuilder(64);
    int c;
    while ((c = in.read()) >= 0) {
      if (c == '\n') {
        int n = sb.length();
        if (n > 0 && sb.charAt(n - 1) == '\r') {
          sb.setLength(n - 1);
        }
        return sb.toString();
      }
      sb.append((char) c);
    }
    return sb.length() == 0 ? null : sb.toString();
  }

  /** Decodes HTTP/1.1 chunked transfer encoding; counts payload bytes and chunks. */
  static final class ChunkedIn extends InputStream {
    final FastIn in;
    long remaining;
    boolean eof;
    boolean first = true;
    long payloadBytes;
    long chunks;

    ChunkedIn(FastIn in) {
      this.in = in;
    }

    private boolean nextChunk() throws IOException {
      if (!first) {
        String crlf = readLine(in);
        if (crlf == null || !crlf.isEmpty()) {
          throw new IOException("bad chunk terminator: " + crlf);
        }
      }
      first = false;
      String line = readLine(in);
      if (line == null) {
        throw new EOFException("connection closed inside a chunked body");
      }
      int semi = line.indexOf(';');
      long size = Long.parseLong((semi >= 0 ? line.substring(0, semi) : line).trim(), 16);
      if (size == 0) {
        String trailer;
        while ((trailer = readLine(in)) != null && !trailer.isEmpty()) {
          // ignore trailers
        }
        eof = true;
        return false;
      }
      chunks++;
      remaining = size;
      return true;
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      int n = read(one, 0, 1);
      return n < 0 ? -1 : one[0] & 0xFF;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (eof) {
        return -1;
      }
      if (len == 0) {
        return 0;
      }
      // Copy as many chunks as are already buffered (never block once something was copied).
      int done = 0;
      while (done < len) {
        if (remaining == 0) {
          if (done > 0 && in.available() < 16) {
            break;
          }
          if (!nextChunk()) {
            break;
          }
        }
        if (done > 0 && in.available() == 0) {
          break;
        }
        int n = in.read(b, off + done, (int) Math.min(len - done, remaining));
        if (n < 0) {
          throw new EOFException("connection closed inside a chunk");
        }
        remaining -= n;
        payloadBytes += n;
        done += n;
      }
      return done == 0 && eof ? -1 : done;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // SSE decoding

  static final byte[] K_TYPE = ascii("\"type\":\"");
  static final byte[] K_DATA = ascii("\"data\":\"");
  static final byte[] K_OFFSET = ascii("\"offset\":");
  static final byte[] K_BYTES = ascii("\"bytes\":");
  static final byte[] K_EXIT = ascii("\"exitCode\":");

  static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  static int indexOf(byte[] a, int from, int to, byte[] pat) {
    outer:
    for (int i = from, last = to - pat.length; i <= last; i++) {
      for (int j = 0; j < pat.length; j++) {
        if (a[i + j] != pat[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }

  static long parseLongAfter(byte[] a, int from, int to, byte[] key) {
    int k = indexOf(a, from, to, key);
    if (k < 0) {
      return Long.MIN_VALUE;
    }
    int i = k + key.length;
    boolean neg = false;
    if (i < to && a[i] == '-') {
      neg = true;
      i++;
    }
    long v = 0;
    int digits = 0;
    while (i < to && a[i] >= '0' && a[i] <= '9') {
      v = v * 10 + (a[i] - '0');
      i++;
      digits++;
    }
    return digits == 0 ? Long.MIN_VALUE : neg ? -v : v;
  }

  /** Splits a byte stream into lines without copying them out. */
  static final class Lines {
    final InputStream in;
    byte[] buf = new byte[1 << 20];
    int pos;
    int lim;
    int scan;
    int start;

    Lines(InputStream in) {
      this.in = in;
    }

    /** Returns the end index (exclusive, without the newline) of the next line, start in {@link #start}; -1 at EOF. */
    int next() throws IOException {
      while (true) {
        for (int i = Math.max(scan, pos); i < lim; i++) {
          if (buf[i] == '\n') {
            start = pos;
            pos = i + 1;
            scan = pos;
            int end = i;
            if (end > start && buf[end - 1] == '\r') {
              end--;
            }
            return end;
          }
        }
        scan = lim;
        if (pos > 0) {
          System.arraycopy(buf, pos, buf, 0, lim - pos);
          lim -= pos;
          scan -= pos;
          pos = 0;
        }
        if (lim == buf.length) {
          buf = Arrays.copyOf(buf, buf.length * 2);
        }
        int n = in.read(buf, lim, buf.length - lim);
        if (n < 0) {
          if (lim > pos) {
            throw new EOFException("stream ended inside a line");
          }
          return -1;
        }
        lim += n;
      }
    }
  }

  static final class StreamResult {
    String label;
    long expectedBytes;
    long rawBytes;
    long stderrBytes;
    long wireBytes;
    long chunks;
    long events;
    long keepAlives;
    int exitCode = Integer.MIN_VALUE;
    long crc;
    long expectedCrc;
    double seconds;
    double agentCpu;
    double childCpu;
    double clientCpu;
    boolean offsetsOk = true;

    double mbPerSec() {
      return rawBytes / seconds / 1e6;
    }

    boolean ok() {
      return rawBytes == expectedBytes && crc == expectedCrc && exitCode == 0 && offsetsOk && stderrBytes == 0;
    }
  }

  /** JSON string unescape of a[from..] up to the closing quote into out; returns the decoded length. */
  static int unescapeJsonString(byte[] a, int from, int to, byte[] out, int[] closeQuote) {
    int o = 0;
    int i = from;
    while (i < to) {
      byte b = a[i];
      if (b == '"') {
        closeQuote[0] = i;
        return o;
      }
      if (b != '\\') {
        out[o++] = b;
        i++;
        continue;
      }
      byte e = a[i + 1];
      i += 2;
      switch (e) {
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case '/': out[o++] = '/'; break;
        case '"': out[o++] = '"'; break;
        case '\\': out[o++] = '\\'; break;
        case 'u': {
          int cp = Integer.parseInt(new String(a, i, 4, StandardCharsets.US_ASCII), 16);
          i += 4;
          if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= to && a[i] == '\\' && a[i + 1] == 'u') {
            int lo = Integer.parseInt(new String(a, i + 2, 4, StandardCharsets.US_ASCII), 16);
            i += 6;
            cp = Character.toCodePoint((char) cp, (char) lo);
          }
          byte[] enc = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8);
          System.arraycopy(enc, 0, out, o, enc.length);
          o += enc.length;
          break;
        }
        default:
          throw new IllegalStateException("bad escape \\" + (char) e);
      }
    }
    throw new IllegalStateException("unterminated JSON string");
  }

  StreamResult streamRun(RawHttp http, String label, String bodyJson, boolean base64, long expectedBytes, long expectedCrc)
      throws IOException {
    StreamResult r = new StreamResult();
    r.label = label;
    r.expectedBytes = expectedBytes;
    r.expectedCrc = expectedCrc;
    CRC32 crc = new CRC32();
    Base64.Decoder dec = Base64.getDecoder();
    byte[] text = new byte[1 << 20];
    double agentCpu0 = cpuSeconds(agentPid, false);
    double childCpu0 = cpuSeconds(agentPid, true);
    double clientCpu0 = selfCpuSeconds();
    long t0 = System.nanoTime();
    int[] status = new int[1];
    ChunkedIn body = (ChunkedIn) http.stream("POST", "/api/execute/stream", bodyJson.getBytes(StandardCharsets.UTF_8), status);
    if (status[0] != 200) {
      throw new IOException(label + ": HTTP " + status[0] + ": " + new String(body.readAllBytes(), StandardCharsets.UTF_8));
    }
    Lines lines = new Lines(body);
    int end;
    while ((end = lines.next()) >= 0) {
      byte[] a = lines.buf;
      int s = lines.start;
      if (end == s) {
        continue; // event separator
      }
      if (a[s] == ':') {
        r.keepAlives++;
        continue;
      }
      if (end - s < 6 || a[s] != 'd' || a[s + 5] != ' ') {
        continue; // other SSE fields are not used by the agent
      }
      int js = s + 6;
      r.events++;
      int t = indexOf(a, js, Math.min(end, js + 64), K_TYPE);
      if (t < 0) {
        throw new IOException("event without type: " + new String(a, js, Math.min(200, end - js), StandardCharsets.UTF_8));
      }
      int ts = t + K_TYPE.length;
      byte c0 = a[ts];
      boolean isStdout = c0 == 's' && a[ts + 3] == 'o'; // "stdout"
      boolean isStderr = c0 == 's' && a[ts + 3] == 'e'; // "stderr"
      if (isStdout || isStderr) {
        int d = indexOf(a, ts, end, K_DATA);
        int ds = d + K_DATA.length;
        int len;
        int after;
        if (base64) {
          int q = ds;
          while (a[q] != '"') {
            q++;
          }
          ByteBuffer raw = dec.decode(ByteBuffer.wrap(a, ds, q - ds));
          len = raw.remaining();
          if (isStdout) {
            crc.update(raw);
          }
          after = q;
        } else {
          if (text.length < end - ds) {
            text = new byte[(end - ds) * 2];
          }
          int[] close = new int[1];
          // For ASCII output the decoded length equals the raw byte count the agent reports.
          len = unescapeJsonString(a, ds, end, text, close);
          if (isStdout) {
            crc.update(text, 0, len);
          }
          after = close[0];
        }
        long offset = parseLongAfter(a, after, end, K_OFFSET);
        long bytes = parseLongAfter(a, after, end, K_BYTES);
        long before = isStdout ? r.rawBytes : r.stderrBytes;
        if (offset != before || bytes != len) {
          r.offsetsOk = false;
        }
        if (isStdout) {
          r.rawBytes += len;
        } else {
          r.stderrBytes += len;
        }
      } else if (c0 == 'c') { // complete
        long exit = parseLongAfter(a, js, end, K_EXIT);
        r.exitCode = exit == Long.MIN_VALUE ? Integer.MIN_VALUE : (int) exit;
      }
    }
    r.seconds = (System.nanoTime() - t0) / 1e9;
    r.clientCpu = selfCpuSeconds() - clientCpu0;
    r.agentCpu = cpuSeconds(agentPid, false) - agentCpu0;
    r.childCpu = cpuSeconds(agentPid, true) - childCpu0;
    r.wireBytes = body.payloadBytes;
    r.chunks = body.chunks;
    r.crc = crc.getValue();
    return r;
  }

  // ---------------------------------------------------------------------------------------------
  // /proc helpers

  static final double CLK_TCK = 100.0; // USER_HZ; 100 on every mainstream Linux build

  /** CPU seconds of a process (user+sys), or of its waited-for children (cutime+cstime). */
  static double cpuSeconds(long pid, boolean children) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"), StandardCharsets.ISO_8859_1);
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      // f[0] is field 3 (state); utime=14, stime=15, cutime=16, cstime=17
      int base = children ? 16 : 14;
      return (Long.parseLong(f[base - 3]) + Long.parseLong(f[base - 2])) / CLK_TCK;
    } catch (IOException | RuntimeException e) {
      return Double.NaN;
    }
  }

  static double selfCpuSeconds() {
    return ProcessHandle.current().info().totalCpuDuration().map(d -> d.toNanos() / 1e9).orElse(Double.NaN);
  }

  record ProcStatus(long rssKb, long hwmKb, long anonKb, long fileKb, int threads, int fds) {
    static ProcStatus of(long pid) throws IOException {
      long rss = -1;
      long hwm = -1;
      long anon = -1;
      long file = -1;
      int threads = -1;
      for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"), StandardCharsets.ISO_8859_1)) {
        if (line.startsWith("VmRSS:")) {
          rss = kb(line);
        } else if (line.startsWith("VmHWM:")) {
          hwm = kb(line);
        } else if (line.startsWith("RssAnon:")) {
          anon = kb(line);
        } else if (line.startsWith("RssFile:")) {
          file = kb(line);
        } else if (line.startsWith("Threads:")) {
          threads = (int) kb(line);
        }
      }
      int fds;
      try (Stream<Path> s = Files.list(Path.of("/proc/" + pid + "/fd"))) {
        fds = (int) s.count();
      }
      return new ProcStatus(rss, hwm, anon, file, threads, fds);
    }

    static long kb(String line) {
      return Long.parseLong(line.replaceAll("[^0-9]", ""));
    }

    String line() {
      return String.format(Locale.ROOT, "VmRSS %.1f MiB (anon %.1f, file %.1f), VmHWM %.1f MiB, threads %d, fds %d",
          rssKb / 1024.0, anonKb / 1024.0, fileKb / 1024.0, hwmKb / 1024.0, threads, fds);
    }
  }

  static String sigIgn(long pid) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"), StandardCharsets.ISO_8859_1)) {
        if (line.startsWith("SigIgn:")) {
          return line.substring(7).trim();
        }
      }
    } catch (IOException ignored) {
      // unknown
    }
    return "?";
  }

  // ---------------------------------------------------------------------------------------------
  // Agent process

  static final Pattern PORT = Pattern.compile("\"port\":(\\d+)");
  static final Pattern PID = Pattern.compile("\"pid\":(\\d+)");

  final class Agent implements Closeable {
    final String name;
    final List<String> jvmOpts;
    final Process process;
    final long pid;
    final int port;
    final double readyMs;
    final long launchNanos;
    final List<String> printedFlags = new ArrayList<>();
    final String readyLine;
    final Path stderrLog;
    volatile int extraStdoutLines;

    Agent(String name, List<String> jvmOpts) throws IOException {
      this.name = name;
      this.jvmOpts = jvmOpts;
      this.stderrLog = workDir.resolve("agent-" + name.replaceAll("[^A-Za-z0-9]", "_") + "-" + (++agentLaunches) + ".stderr.log");
      List<String> cmd = new ArrayList<>();
      cmd.add(javaBin());
      cmd.addAll(jvmOpts);
      cmd.add("-XX:+PrintCommandLineFlags");
      cmd.addAll(List.of("-jar", jar.toString(), "--port", "0", "--bind", "127.0.0.1",
          "--workspace", workspace.toString(), "--token-file", tokenFile.toString()));
      cmd.addAll(splitOpts(o.agentArgs));
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(stderrLog.toFile());
      pb.environment().remove("SANDBOX_AGENT_TOKEN");
      long t0 = System.nanoTime();
      launchNanos = t0;
      process = pb.start();
      BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
      String line;
      String ready = null;
      while ((line = r.readLine()) != null) {
        if (line.startsWith(READY_PREFIX)) {
          ready = line;
          break;
        }
        printedFlags.add(line.trim());
      }
      readyMs = (System.nanoTime() - t0) / 1e6;
      if (ready == null) {
        String err = Files.exists(stderrLog) ? Files.readString(stderrLog) : "";
        throw new IOException("agent " + name + " exited without a ready line; stderr:\n" + err);
      }
      readyLine = ready;
      Matcher pm = PORT.matcher(ready);
      Matcher im = PID.matcher(ready);
      if (!pm.find() || !im.find()) {
        throw new IOException("cannot parse ready line: " + ready);
      }
      port = Integer.parseInt(pm.group(1));
      pid = Long.parseLong(im.group(1));
      Thread drain = new Thread(() -> {
        try {
          while (r.readLine() != null) {
            extraStdoutLines++;
          }
        } catch (IOException ignored) {
          // agent gone
        }
      }, "agent-stdout-drain");
      drain.setDaemon(true);
      drain.start();
    }

    String flagsLine() {
      return String.join(" ", printedFlags);
    }

    String stderrText() {
      try {
        return Files.readString(stderrLog);
      } catch (IOException e) {
        return "";
      }
    }

    @Override
    public void close() {
      process.destroy(); // SIGTERM: the agent stops its processes and exits
      try {
        if (!process.waitFor(15, TimeUnit.SECONDS)) {
          process.destroyForcibly();
          process.waitFor(5, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * Samples the VmRSS of the agent being benchmarked every 100 ms on its own thread, for the
   * "RSS over the run" plot; the benchmark marks where each phase starts.
   */
  static final class RssSampler extends Thread {
    /** Where a phase of the run starts. */
    record Mark(double seconds, String label) {}

    final long t0 = System.nanoTime();
    final Map<String, List<double[]>> series = new LinkedHashMap<>(); // agent -> {seconds, MiB}
    final List<Mark> marks = new ArrayList<>();
    volatile long pid;
    volatile String agent;

    RssSampler() {
      super("rss-sampler");
      setDaemon(true);
    }

    double now() {
      return (System.nanoTime() - t0) / 1e9;
    }

    synchronized void follow(String name, long agentPid) {
      agent = name;
      pid = agentPid;
      if (name != null) {
        series.computeIfAbsent(name, k -> new ArrayList<>());
      }
    }

    synchronized void mark(String label) {
      marks.add(new Mark(now(), label));
    }

    @Override
    public void run() {
      while (!isInterrupted()) {
        long p = pid;
        String name = agent;
        if (p != 0) {
          try {
            for (String line : Files.readAllLines(Path.of("/proc/" + p + "/status"), StandardCharsets.ISO_8859_1)) {
              if (line.startsWith("VmRSS:")) {
                double mib = ProcStatus.kb(line) / 1024.0;
                synchronized (this) {
                  series.get(name).add(new double[] {now(), mib});
                }
              }
            }
          } catch (IOException | RuntimeException e) {
            // the agent is gone or going: no sample
          }
        }
        try {
          Thread.sleep(100);
        } catch (InterruptedException e) {
          return;
        }
      }
    }

    synchronized Svg.Plot plot(String run) {
      Svg.Plot plot = new Svg.Plot("Agent memory (VmRSS) over the benchmark run, sampled every 100 ms", run,
          "time since the benchmark started (s)", "agent VmRSS (MiB)").yFrom(0);
      for (Map.Entry<String, List<double[]>> e : series.entrySet()) {
        double[] xs = new double[e.getValue().size()];
        double[] ys = new double[xs.length];
        for (int i = 0; i < xs.length; i++) {
          xs[i] = e.getValue().get(i)[0];
          ys[i] = e.getValue().get(i)[1];
        }
        plot.series("agent, " + e.getKey(), xs, ys, "line");
      }
      for (Mark m : marks) {
        plot.marker(m.seconds(), m.label());
      }
      return plot;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // The benchmark

  final Options o;
  final Path sourceJar;
  Path jar;
  Path workDir;
  Path workspace;
  Path tokenFile;
  String token;
  long agentPid;
  Agent lastAgent;
  int agentLaunches;
  final List<String> summary = new ArrayList<>();
  Stats rawSetsid;
  Stats rawSh;
  // Plots (Svg), filled in as the run goes and written at its end
  String runInfo;
  Svg.Plot latencyPlot;
  Svg.Bars streamBars;
  final Map<String, Svg.Plot> processPlots = new LinkedHashMap<>();
  RssSampler rss;
  long[] lastSamples;

  AgentBench(Options o) {
    this.o = o;
    this.sourceJar = Path.of(o.jar).toAbsolutePath().normalize();
  }

  static void say(String fmt, Object... args) {
    System.out.println(args.length == 0 ? fmt : String.format(Locale.ROOT, fmt, args));
    System.out.flush();
  }

  void sum(String fmt, Object... args) {
    summary.add(args.length == 0 ? fmt : String.format(Locale.ROOT, fmt, args));
  }

  static String memTotal() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
        if (line.startsWith("MemTotal:")) {
          return String.format(Locale.ROOT, "%.1f GiB", ProcStatus.kb(line) / 1024.0 / 1024.0);
        }
      }
    } catch (IOException ignored) {
      // unknown
    }
    return "?";
  }

  static String loadAvg() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).trim();
    } catch (IOException e) {
      return "?";
    }
  }

  /** A warning when something else keeps the machine busy (the figures are then not representative). */
  static String busyWarning() {
    try {
      double oneMinute = Double.parseDouble(loadAvg().split(" ")[0]);
      return oneMinute > Runtime.getRuntime().availableProcessors()
          ? "  (WARNING: the machine looks busy; figures may be distorted)" : "";
    } catch (RuntimeException e) {
      return "";
    }
  }

  static String cpuModel() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
        if (line.startsWith("model name")) {
          return line.substring(line.indexOf(':') + 1).trim();
        }
      }
    } catch (IOException ignored) {
      // unknown
    }
    return "?";
  }

  /** Runs everything; returns whether every check passed. */
  boolean run() throws Exception {
    long benchStart = System.nanoTime();
    runInfo = Svg.runInfo() + (o.smoke ? ", SMOKE SIZES (figures meaningless)" : "");
    latencyPlot = Svg.percentiles("Exec round trip through the agent vs raw spawn of `true`", runInfo);
    streamBars = new Svg.Bars("POST /api/execute/stream throughput, median of " + o.streamReps + " (dots: each run)",
        runInfo, "workload (" + o.streamBytes + " B of zeros and text, " + o.randBytes + " B random)",
        "MB/s of process output (10^6 B/s)");
    rss = new RssSampler();
    rss.start();
    rss.mark("raw spawn series (no agent)");
    if (!Files.isRegularFile(sourceJar)) {
      die("agent jar not found: " + sourceJar + " (build it: ./mvnw -q -B -pl container-agent package -DskipTests, or use benchmarks/scripts/agent.sh)");
    }
    workDir = Files.createTempDirectory("agent-bench");
    // Run agents from a private copy, so a rebuild of target/ during the run cannot change classes under them.
    jar = workDir.resolve("container-agent.jar");
    Files.copy(sourceJar, jar);
    workspace = workDir.resolve("workspace");
    Files.createDirectories(workspace);
    token = "bench-" + Long.toHexString(System.nanoTime()) + Long.toHexString(Double.doubleToLongBits(Math.random()));
    tokenFile = workDir.resolve("token");
    Files.writeString(tokenFile, token + "\n");

    String env = String.format(Locale.ROOT, "%s; %d cores (availableProcessors), %s RAM; %s %s (%s); %s %s",
        ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME), Runtime.getRuntime().availableProcessors(),
        memTotal(), System.getProperty("java.vm.name"), System.getProperty("java.runtime.version"),
        System.getProperty("java.vendor"), System.getProperty("os.name"), System.getProperty("os.version"));
    say("== AgentBench ==");
    say("environment : %s", env);
    say("cpu         : %s", cpuModel());
    say("agent jar   : %s (%d bytes, modified %s; run from a private copy)", sourceJar, Files.size(sourceJar),
        Files.getLastModifiedTime(sourceJar));
    say("bench JVM   : %s", ManagementFactory.getRuntimeMXBean().getInputArguments());
    say("calls=%d warmup=%d stream-bytes=%d rand-bytes=%d processes=%d", o.calls, o.warmup, o.streamBytes, o.randBytes, o.processes);
    String load = loadAvg();
    say("load average: %s%s", load, busyWarning());
    sum("environment        : %s", env);
    sum("load avg at start  : %s%s", load, busyWarning());
    sum("cpu                : %s", cpuModel());

    // 1. Raw spawn -----------------------------------------------------------------------------
    say("");
    say("[1] raw ProcessBuilder(cmd).start().waitFor(), warm-up %d, %d samples", o.warmup, o.calls);
    long[] rawTrueSamples = rawSpawn(List.of("true"), o.warmup, o.calls);
    Stats rawTrue = Stats.of(rawTrueSamples);
    Svg.percentileSeries(latencyPlot, "raw ProcessBuilder(\"true\") in the bench JVM (the floor)", rawTrueSamples, true);
    say("  true           in bench JVM, %s: %s", launchMechanism(), rawTrue.line());
    sum("raw spawn `true`, bench JVM, default (POSIX_SPAWN)   : %s", rawTrue.line());
    rawSetsid = Stats.of(rawSpawn(List.of("setsid", "true"), o.warmup, o.calls));
    say("  setsid true    in bench JVM (the agent's launcher): %s", rawSetsid.line());
    sum("raw spawn `setsid true`, bench JVM                  : %s", rawSetsid.line());
    rawSh = Stats.of(rawSpawn(List.of("setsid", "/bin/sh", "-c", "true"), o.warmup, o.calls));
    say("  setsid sh -c true in bench JVM (agent's shell path): %s", rawSh.line());
    sum("raw spawn `setsid /bin/sh -c true`, bench JVM       : %s", rawSh.line());
    Stats rawVfork = null;
    Stats rawChildDefault = null;
    if (!o.skipRawChildren) {
      rawVfork = Stats.of(rawSpawnInChildJvm(List.of("-Djdk.lang.Process.launchMechanism=VFORK")));
      say("  true           in child JVM, VFORK: %s", rawVfork.line());
      sum("raw spawn `true`, child JVM, launchMechanism=VFORK  : %s", rawVfork.line());
      rawChildDefault = Stats.of(rawSpawnInChildJvm(List.of()));
      say("  true           in child JVM, default: %s", rawChildDefault.line());
      sum("raw spawn `true`, child JVM, default (POSIX_SPAWN)  : %s", rawChildDefault.line());
    }

    // 2-4. Agent with default JVM flags ------------------------------------------------------------
    List<String> baseOpts = splitOpts(o.baseOpts);
    List<String> tunedOpts = splitOpts(o.tunedOpts);
    AgentFigures base = benchAgent("default-flags", baseOpts, true, rawTrue);
    AgentFigures tuned = benchAgent("tuned-flags", tunedOpts, !o.tunedBench.equals("startup"), rawTrue);

    // 5. Start-up repeats ------------------------------------------------------------------------
    say("");
    say("[5] start-up: %d extra launches per flag set (JVM launch -> ready line)", o.startupRepeats);
    double[] baseStarts = startupSeries("default-flags", baseOpts, base.readyMs);
    double[] tunedStarts = startupSeries("tuned-flags", tunedOpts, tuned.readyMs);

    // Plots --------------------------------------------------------------------------------------
    rss.interrupt();
    say("");
    Path plotDir = Path.of(o.plots);
    say("plots: %s", latencyPlot.write(plotDir, "agent-exec-latency.svg"));
    if (!o.skipStream) {
      say("plots: %s", streamBars.write(plotDir, "agent-stream-throughput.svg"));
    }
    for (Map.Entry<String, Svg.Plot> p : processPlots.entrySet()) {
      say("plots: %s", p.getValue().write(plotDir, "agent-processes-" + p.getKey() + ".svg"));
    }
    say("plots: %s", rss.plot(runInfo).write(plotDir, "agent-rss.svg"));

    // Summary ------------------------------------------------------------------------------------
    say("");
    say("==================================== SUMMARY ====================================");
    for (String s : summary) {
      say(s);
    }
    say("start-up (launch -> ready line), default flags  : median %.0f ms, all %s", median(baseStarts), fmtList(baseStarts));
    say("start-up (launch -> ready line), tuned flags    : median %.0f ms, all %s", median(tunedStarts), fmtList(tunedStarts));
    say("idle RSS (ready + %d ms), default flags          : %.1f MiB", o.idleMs, base.idle.rssKb / 1024.0);
    say("idle RSS (ready + %d ms), tuned flags            : %.1f MiB", o.idleMs, tuned.idle.rssKb / 1024.0);
    say("default agent JVM flags : %s", base.flags);
    say("tuned agent JVM flags   : %s", tuned.flags);
    say("bench JVM flags         : %s", ManagementFactory.getRuntimeMXBean().getInputArguments());
    say("total bench time        : %.1f s; load average at the end (includes this benchmark): %s",
        (System.nanoTime() - benchStart) / 1e9, loadAvg());
    say("=================================================================================");
    boolean allOk = base.ok && tuned.ok;
    if (!allOk) {
      say("SOME CHECKS FAILED (see above)");
    }
    return allOk;
  }

  /** Removes the temporary workspace (with its 100 MB random file) and logs unless --keep-workspace. */
  void cleanUp() {
    if (workDir == null) {
      return;
    }
    if (o.keep) {
      say("workspace and logs kept in %s", workDir);
    } else {
      deleteTree(workDir);
    }
  }

  static String fmtList(double[] v) {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < v.length; i++) {
      sb.append(i == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.0f", v[i]));
    }
    return sb.append("] ms").toString();
  }

  static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  static List<String> splitOpts(String s) {
    List<String> out = new ArrayList<>();
    for (String part : s.trim().split("\\s+")) {
      if (!part.isEmpty()) {
        out.add(part);
      }
    }
    return out;
  }

  double[] startupSeries(String name, List<String> opts, double first) throws IOException {
    double[] out = new double[o.startupRepeats + 1];
    double[] firstExec = new double[o.startupRepeats];
    out[0] = first;
    for (int i = 1; i <= o.startupRepeats; i++) {
      try (Agent a = new Agent(name, opts)) {
        out[i] = a.readyMs;
        // What a client that sends its first command right away waits for (LocalSandbox does).
        try (RawHttp http = new RawHttp("127.0.0.1", a.port, token)) {
          Resp r = http.call("POST", "/api/execute", ascii("{\"argv\":[\"true\"]}"));
          if (r.status != 200 || !r.text().contains("\"exitCode\":0")) {
            throw new IOException("first exec: HTTP " + r.status + " " + r.text());
          }
        }
        firstExec[i - 1] = (System.nanoTime() - a.launchNanos) / 1e6;
      }
    }
    say("  %-14s %s (first = the benchmarked launch)", name, fmtList(out));
    if (firstExec.length == 0) {
      return out;
    }
    say("  %-14s launch -> first exec answered: %s (a new connection right after the ready line)", name, fmtList(firstExec));
    sum("start-up, %s: launch -> first `exec true` answered: median %.0f ms, all %s", name, median(firstExec),
        fmtList(firstExec));
    return out;
  }

  static final class AgentFigures {
    double readyMs;
    ProcStatus idle;
    ProcStatus after;
    String flags;
    boolean ok = true;
  }

  AgentFigures benchAgent(String name, List<String> opts, boolean full, Stats rawTrue) throws Exception {
    AgentFigures f = new AgentFigures();
    say("");
    say("[agent %s] starting: java %s -jar ...", name, opts.isEmpty() ? "(JVM defaults)" : String.join(" ", opts));
    String phase = name.replace("-flags", "") + ": "; // prefix of this agent's marks in the RSS plot
    try (Agent agent = new Agent(name, opts)) {
      lastAgent = agent;
      agentPid = agent.pid;
      rss.follow(name, agent.pid);
      rss.mark(phase + "ready");
      f.readyMs = agent.readyMs;
      f.flags = (opts.isEmpty() ? "(none given) " : String.join(" ", opts) + " ") + "=> " + agent.flagsLine();
      say("  ready line : %s", agent.readyLine);
      say("  JVM flags  : %s", f.flags);
      say("  launch -> ready line: %.0f ms", agent.readyMs);
      String err = agent.stderrText();
      boolean envReset = err.contains("ignored signals");
      say("  agent SigIgn mask %s; launcher (JDK spawn only) = setsid%s", sigIgn(agent.pid),
          envReset ? " env --default-signal" : "");
      Thread.sleep(o.idleMs);
      f.idle = ProcStatus.of(agent.pid);
      say("  idle (ready + %d ms): %s", o.idleMs, f.idle.line());
      sum("[%s] JVM opts      : %s", name, opts.isEmpty() ? "(JVM defaults)" : String.join(" ", opts));
      sum("[%s] launch->ready : %.0f ms", name, agent.readyMs);
      sum("[%s] idle          : %s", name, f.idle.line());
      if (!full) {
        return f;
      }
      try (RawHttp http = new RawHttp("127.0.0.1", agent.port, token)) {
        Resp version = http.call("GET", "/api/version", null);
        java.util.regex.Matcher spawnMode = Pattern.compile("\"spawn\":\"([a-z]+)\"").matcher(version.text());
        String spawn = spawnMode.find() ? spawnMode.group(1) : "unreported";
        say("  spawn (per /api/version): %s; agent args: %s", spawn, o.agentArgs.isEmpty() ? "(none)" : o.agentArgs);
        sum("[%s] spawn                          : %s (agent args: %s)", name, spawn,
            o.agentArgs.isEmpty() ? "none" : o.agentArgs);
        // HTTP floor
        rss.mark(phase + "ping, exec series");
        Stats ping = latencySeries(http, "GET", "/api/ping", null, "\"status\":\"healthy\"");
        plotLatency("GET /api/ping (no spawn), " + name);
        say("  GET /api/ping (HTTP+JSON floor, no spawn): %s", ping.line());
        sum("[%s] GET /api/ping (no spawn)          : %s", name, ping.line());
        // 2. exec argv / shell
        long[] durSum = new long[1];
        Stats execArgv = latencySeries(http, "POST", "/api/execute", "{\"argv\":[\"true\"]}", "\"exitCode\":0", durSum);
        double durMean = durSum[0] / (double) o.calls;
        plotLatency("exec {\"argv\":[\"true\"]}, " + name);
        say("  exec {\"argv\":[\"true\"]}   : %s", execArgv.line());
        say("     agent-reported duration mean %.2f ms (whole ms, truncated)", durMean);
        Stats execShell = latencySeries(http, "POST", "/api/execute", "{\"command\":\"true\"}", "\"exitCode\":0");
        plotLatency("exec {\"command\":\"true\"}, " + name);
        say("  exec {\"command\":\"true\"}  : %s", execShell.line());
        say("  overhead vs raw spawn p50: argv %+.3f ms, shell %+.3f ms (raw `true` p50 %.3f ms)",
            execArgv.p50 - rawTrue.p50, execShell.p50 - rawTrue.p50, rawTrue.p50);
        sum("[%s] exec argv true (1 conn)          : %s", name, execArgv.line());
        sum("[%s] exec command true (1 conn)       : %s", name, execShell.line());
        sum("[%s] exec overhead p50 vs raw `true`  : argv %+.3f ms, shell %+.3f ms", name,
            execArgv.p50 - rawTrue.p50, execShell.p50 - rawTrue.p50);
        sum("[%s] agent-reported duration, argv    : mean %.2f ms (whole-ms, truncated)", name, durMean);
        // The native spawn runs no setsid: its command is the only execve, as in raw `true`.
        String decomposition = spawn.equals("native")
            ? String.format(Locale.ROOT, "no setsid exec (native spawn), HTTP+JSON floor %.3f (ping), rest %+.3f"
                + " (exec - raw `true` - ping)", ping.p50, execArgv.p50 - rawTrue.p50 - ping.p50)
            : String.format(Locale.ROOT,
            "extra setsid exec %+.3f (raw `setsid true` - raw `true`), HTTP+JSON floor %.3f (ping), rest %+.3f"
                + " (exec - raw `setsid true` - ping); shell path: raw `setsid sh -c true` - raw `setsid true` = %+.3f",
            rawSetsid.p50 - rawTrue.p50, ping.p50, execArgv.p50 - rawSetsid.p50 - ping.p50, rawSh.p50 - rawSetsid.p50);
        say("  overhead decomposition at p50 (ms): %s", decomposition);
        sum("[%s] overhead decomposition p50 (ms)  : %s", name, decomposition);

        ProcStatus afterExec = ProcStatus.of(agent.pid);
        say("  after the exec series: %s", afterExec.line());
        sum("[%s] after exec series: %s", name, afterExec.line());

        // 3. streaming
        boolean stream = !o.skipStream && (name.equals("default-flags") || o.tunedBench.equals("all"));
        if (stream) {
          rss.mark(phase + "streams");
          f.ok &= streams(http, name);
          ProcStatus afterStreams = ProcStatus.of(agent.pid);
          say("  after the streams: %s", afterStreams.line());
          sum("[%s] after streams: %s", name, afterStreams.line());
        }

        // 4b. many processes
        if (o.processes > 0 && (name.equals("default-flags") || o.tunedBench.equals("all"))) {
          rss.mark(phase + o.processes + " processes");
          f.ok &= manyProcesses(http, name, agent);
        }
        int conns = http.connectionsOpened;
        say("  HTTP connections opened for all of the above (%d requests): %d%s", http.requests, conns,
            http.reconnects.isEmpty() ? "" : "; the server closed the connection " + http.reconnects);
        sum("[%s] HTTP connections used             : %d for %d requests%s", name, conns, http.requests,
            conns == 1 ? "" : "  (expected 1! server closed it " + http.reconnects + ")");
        if (conns != 1) {
          f.ok = false;
        }
      }
      f.after = ProcStatus.of(agent.pid);
      say("  after the benchmark: %s", f.after.line());
      sum("[%s] after benchmark: %s", name, f.after.line());
      if (agent.extraStdoutLines > 0) {
        say("  WARNING: the agent printed %d extra stdout line(s) after the ready line", agent.extraStdoutLines);
      }
    } catch (IOException | RuntimeException e) {
      say("  FAILED against agent %s: %s", name, e);
      if (lastAgent != null) {
        say("  agent alive: %s; agent stderr (%s):%n%s", lastAgent.process.isAlive(), lastAgent.stderrLog, lastAgent.stderrText());
      }
      throw e;
    } finally {
      agentPid = 0;
      rss.mark(phase + "stopped");
      rss.follow(null, 0);
    }
    return f;
  }

  /** Adds the samples of the latency series just measured to the latency plot. */
  void plotLatency(String label) {
    Svg.percentileSeries(latencyPlot, label, lastSamples, false);
  }

  Stats latencySeries(RawHttp http, String method, String path, String body, String mustContain) throws IOException {
    return latencySeries(http, method, path, body, mustContain, null);
  }

  static final byte[] K_DURATION = ascii("\"duration\":");

  Stats latencySeries(RawHttp http, String method, String path, String body, String mustContain, long[] durationSum)
      throws IOException {
    byte[] b = body == null ? null : body.getBytes(StandardCharsets.UTF_8);
    long[] samples = new long[o.calls];
    for (int i = -o.warmup; i < o.calls; i++) {
      long t0 = System.nanoTime();
      Resp r = http.call(method, path, b);
      long dt = System.nanoTime() - t0;
      if (r.status != 200 || !r.text().contains(mustContain)) {
        throw new IOException(method + " " + path + " " + body + ": HTTP " + r.status + " " + r.text());
      }
      if (i >= 0) {
        samples[i] = dt;
        if (durationSum != null) {
          durationSum[0] += parseLongAfter(r.body, 0, r.body.length, K_DURATION);
        }
      }
    }
    lastSamples = samples;
    return Stats.of(samples);
  }

  /** One streaming workload: the request body, its encoding, and the expected output. */
  record Workload(String label, String shortName, String body, boolean base64, long bytes, long crc) {}

  boolean streams(RawHttp http, String name) throws IOException {
    say("  [3] POST /api/execute/stream throughput (MB = 10^6 bytes of raw process output; %d runs each, median shown)", o.streamReps);
    boolean ok = true;
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
    Path rand = workspace.resolve("rand.bin");
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
    List<Workload> workloads = List.of(
        new Workload("zeros  base64 (head -c " + o.streamBytes + " /dev/zero)", "zeros, base64",
            "{\"argv\":[\"head\",\"-c\",\"" + o.streamBytes + "\",\"/dev/zero\"],\"encoding\":\"base64\"}", true,
            o.streamBytes, zeroCrc.getValue()),
        new Workload("random base64 (cat rand.bin, " + o.randBytes + " B)", "random, base64",
            "{\"argv\":[\"cat\",\"rand.bin\"],\"encoding\":\"base64\"}", true, o.randBytes, randCrc.getValue()),
        new Workload("ASCII  utf-8  (yes abcdefghij | head -c " + o.streamBytes + ")", "text, UTF-8",
            "{\"command\":\"yes abcdefghij | head -c " + o.streamBytes + "\"}", false, o.streamBytes, textCrc.getValue()));
    // warm-up (agent and client JIT): 64 MiB of each kind, not reported
    long warm = Math.min(67108864, o.streamBytes);
    streamRun(http, "warm-up", "{\"argv\":[\"head\",\"-c\",\"" + warm + "\",\"/dev/zero\"],\"encoding\":\"base64\"}", true, warm, 0);
    streamRun(http, "warm-up", "{\"command\":\"yes abcdefghij | head -c " + warm + "\"}", false, warm, 0);

    for (Workload w : workloads) {
      List<StreamResult> runs = new ArrayList<>();
      for (int i = 0; i < o.streamReps; i++) {
        runs.add(streamRun(http, w.label(), w.body(), w.base64(), w.bytes(), w.crc()));
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
      sum("[%s] stream %s", name, line);
      streamBars.bar(w.shortName(), "agent " + name + ", verifying client", r.mbPerSec(),
          runs.stream().mapToDouble(StreamResult::mbPerSec).toArray());
      ok &= allOk;
    }
    // The same workloads read by a client that only de-chunks and counts (no SSE/base64/JSON decoding),
    // to show how much of the above is the decoding client competing for the 2 cores.
    for (Workload w : List.of(workloads.get(0), workloads.get(2))) {
      List<double[]> runs = new ArrayList<>();
      boolean allOk = true;
      for (int i = 0; i < o.streamReps; i++) {
        double[] d = drainRun(http, w.body());
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
      sum("[%s] stream %s", name, line);
      streamBars.bar(w.shortName(), "agent " + name + ", drain-only client (floor of the client's work)", w.bytes() / m[0] / 1e6,
          runs.stream().mapToDouble(d -> w.bytes() / d[0] / 1e6).toArray());
      ok &= allOk;
    }
    Files.deleteIfExists(rand);
    return ok;
  }

  static String runsList(List<StreamResult> runs) {
    StringBuilder sb = new StringBuilder("[");
    for (StreamResult r : runs) {
      sb.append(sb.length() > 1 ? ", " : "").append(String.format(Locale.ROOT, "%.0f", r.mbPerSec()));
    }
    return sb.append(']').toString();
  }

  static final byte[] K_COMPLETE = ascii("\"type\":\"complete\"");

  /** Reads a stream response de-chunking only; returns {seconds, wire bytes, 0 if it ended with complete/exit 0}. */
  double[] drainRun(RawHttp http, String bodyJson) throws IOException {
    long t0 = System.nanoTime();
    int[] status = new int[1];
    ChunkedIn body = (ChunkedIn) http.stream("POST", "/api/execute/stream", bodyJson.getBytes(StandardCharsets.UTF_8), status);
    byte[] buf = new byte[256 * 1024];
    byte[] tail = new byte[8192];
    int tailLen = 0;
    int n;
    while ((n = body.read(buf, 0, buf.length)) >= 0) {
      if (n >= tail.length) {
        System.arraycopy(buf, n - tail.length, tail, 0, tail.length);
        tailLen = tail.length;
      } else if (n > 0) {
        int keep = Math.min(tailLen, tail.length - n);
        System.arraycopy(tail, tailLen - keep, tail, 0, keep);
        System.arraycopy(buf, 0, tail, keep, n);
        tailLen = keep + n;
      }
    }
    double secs = (System.nanoTime() - t0) / 1e9;
    int c = indexOf(tail, 0, tailLen, K_COMPLETE);
    long exit = c < 0 ? Long.MIN_VALUE : parseLongAfter(tail, c, tailLen, K_EXIT);
    return new double[] {secs, body.payloadBytes, status[0] == 200 && exit == 0 ? 0 : 1};
  }

  boolean manyProcesses(RawHttp http, String name, Agent agent) throws Exception {
    int n = o.processes;
    say("  [4b] %d concurrent background processes (POST /api/process/start {\"argv\":[\"sleep\",\"300\"]})", n);
    byte[] body = "{\"argv\":[\"sleep\",\"300\"]}".getBytes(StandardCharsets.UTF_8);
    ProcStatus before = ProcStatus.of(agent.pid);
    long[] samples = new long[n];
    long t0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      long s = System.nanoTime();
      Resp r = http.call("POST", "/api/process/start", body);
      samples[i] = System.nanoTime() - s;
      if (r.status != 200) {
        say("    start #%d failed: HTTP %d %s", i + 1, r.status, r.text());
        sum("[%s] %d processes: start #%d FAILED: HTTP %d %s", name, n, i + 1, r.status, r.text());
        http.call("DELETE", "/api/process/kill-all", null);
        return false;
      }
    }
    double startAll = (System.nanoTime() - t0) / 1e9;
    Stats st = Stats.of(samples);
    StringBuilder deciles = new StringBuilder();
    for (double mean : tenthMeans(samples)[1]) {
      deciles.append(deciles.length() > 0 ? " " : "").append(String.format(Locale.ROOT, "%.1f", mean));
    }
    Svg.Plot plot = new Svg.Plot(n + " background processes: start latency as the count grows, agent " + name, runInfo,
        "start # (processes already started + 1; with several clients, the order in which starts were claimed)",
        "POST /api/process/start latency (ms, log scale)").logY();
    processPlots.put(name, plot);
    plotStarts(plot, "sequential, one client", samples, Svg.COLORS[0]);
    Resp list = http.call("GET", "/api/process/list?status=running", null);
    int running = countOccurrences(list.text(), "\"status\":\"running\"");
    ProcStatus holding = ProcStatus.of(agent.pid);
    // exec latency while the agent holds all of them
    int loadCalls = Math.max(1, o.calls / 5);
    long[] load = new long[loadCalls];
    byte[] exec = "{\"argv\":[\"true\"]}".getBytes(StandardCharsets.UTF_8);
    for (int i = 0; i < loadCalls; i++) {
      long s = System.nanoTime();
      Resp r = http.call("POST", "/api/execute", exec);
      load[i] = System.nanoTime() - s;
      if (r.status != 200 || !r.text().contains("\"exitCode\":0")) {
        throw new IOException("exec under load failed: " + r.text());
      }
    }
    Stats loaded = Stats.of(load);
    long t1 = System.nanoTime();
    Resp kill = http.call("DELETE", "/api/process/kill-all", null);
    double killMs = (System.nanoTime() - t1) / 1e6;
    Resp clean = http.call("POST", "/api/process/cleanup", null);
    say("    start latency: %s; all %d started in %.2f s", st.line(), n, startAll);
    say("    mean start latency per successive tenth of the %d starts (ms): %s", n, deciles);
    say("    running per /api/process/list: %d", running);
    say("    agent before: %s", before.line());
    say("    agent while holding %d: %s", n, holding.line());
    say("    exec {\"argv\":[\"true\"]} while holding %d: %s", n, loaded.line());
    say("    kill-all: HTTP %d in %.0f ms (%s); cleanup: %s", kill.status, killMs, kill.text().replaceAll(",\"timestamp\".*", ""),
        clean.text().replaceAll(",\"timestamp\".*", ""));
    sum("[%s] %d processes: start %s", name, n, st.line());
    sum("[%s] %d processes: mean start ms per tenth: %s", name, n, deciles);
    sum("[%s] %d processes: all started in %.2f s, %d running; agent %s", name, n, startAll, running, holding.line());
    sum("[%s] %d processes: exec argv true meanwhile: %s", name, n, loaded.line());
    sum("[%s] %d processes: kill-all %.0f ms", name, n, killMs);
    boolean ok = running == n && kill.status == 200;
    if (o.clients > 1) {
      rss.mark(name.replace("-flags", "") + ": " + n + " processes, " + o.clients + " clients");
      ok &= manyProcessesConcurrently(http, name, agent);
    }
    return ok;
  }

  /** Mean start latency (ms) per successive tenth of the starts: {x at each tenth's middle (start #), mean}. */
  static double[][] tenthMeans(long[] samples) {
    int n = samples.length;
    int tenth = Math.max(1, n / 10);
    int parts = (n + tenth - 1) / tenth;
    double[][] out = new double[2][parts];
    for (int d = 0; d < parts; d++) {
      int from = d * tenth;
      int to = Math.min(n, from + tenth);
      long sumNs = 0;
      for (int i = from; i < to; i++) {
        sumNs += samples[i];
      }
      out[0][d] = (from + 1 + to) / 2.0;
      out[1][d] = sumNs / (double) (to - from) / 1e6;
    }
    return out;
  }

  /** Each start (faint) and the mean per tenth of the starts, in one colour. */
  static void plotStarts(Svg.Plot plot, String label, long[] samples, String color) {
    double[] index = new double[samples.length];
    double[] ms = new double[samples.length];
    for (int i = 0; i < samples.length; i++) {
      index[i] = i + 1;
      ms[i] = samples[i] / 1e6;
    }
    double[][] tenths = tenthMeans(samples);
    plot.series(label + ", each start", index, ms, "faint", color);
    plot.series(label + ", mean per tenth of the starts", tenths[0], tenths[1], "line", color);
  }

  /** The same starts from {@code --clients} connections at once: total time, latency, agent state. */
  boolean manyProcessesConcurrently(RawHttp http, String name, Agent agent) throws Exception {
    int n = o.processes;
    int k = o.clients;
    say("  [4c] %d background processes started by %d concurrent clients", n, k);
    byte[] body = "{\"argv\":[\"sleep\",\"300\"]}".getBytes(StandardCharsets.UTF_8);
    long[] samples = new long[n];
    java.util.concurrent.atomic.AtomicInteger next = new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.atomic.AtomicReference<String> failure = new java.util.concurrent.atomic.AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
    for (int c = 0; c < k; c++) {
      Thread t = new Thread(() -> {
        try (RawHttp client = new RawHttp("127.0.0.1", agent.port, token)) {
          client.call("GET", "/api/ping", null); // connect before the clock starts
          go.await();
          for (int i = next.getAndIncrement(); i < n && failure.get() == null; i = next.getAndIncrement()) {
            long s = System.nanoTime();
            Resp r = client.call("POST", "/api/process/start", body);
            samples[i] = System.nanoTime() - s;
            if (r.status != 200) {
              failure.compareAndSet(null, "start #" + (i + 1) + ": HTTP " + r.status + " " + r.text());
            }
          }
        } catch (Exception e) {
          failure.compareAndSet(null, e.toString());
        }
      });
      t.start();
      threads.add(t);
    }
    Thread.sleep(200);
    long t0 = System.nanoTime();
    go.countDown();
    for (Thread t : threads) {
      t.join();
    }
    double startAll = (System.nanoTime() - t0) / 1e9;
    if (failure.get() != null) {
      say("    FAILED: %s", failure.get());
      sum("[%s] %d processes, %d clients: FAILED: %s", name, n, k, failure.get());
      http.call("DELETE", "/api/process/kill-all", null);
      http.call("POST", "/api/process/cleanup", null);
      return false;
    }
    Stats st = Stats.of(samples);
    plotStarts(processPlots.get(name), k + " concurrent clients", samples, Svg.COLORS[1]);
    Resp list = http.call("GET", "/api/process/list?status=running", null);
    int running = countOccurrences(list.text(), "\"status\":\"running\"");
    ProcStatus holding = ProcStatus.of(agent.pid);
    long t1 = System.nanoTime();
    Resp kill = http.call("DELETE", "/api/process/kill-all", null);
    double killMs = (System.nanoTime() - t1) / 1e6;
    http.call("POST", "/api/process/cleanup", null);
    say("    start latency: %s; all %d started in %.2f s by %d clients; running %d", st.line(), n, startAll, k, running);
    say("    agent while holding %d: %s; kill-all %.0f ms", n, holding.line(), killMs);
    sum("[%s] %d processes, %d clients: start %s", name, n, k, st.line());
    sum("[%s] %d processes, %d clients: all started in %.2f s, %d running; agent %s", name, n, k, startAll, running,
        holding.line());
    return running == n && kill.status == 200;
  }

  static int countOccurrences(String s, String needle) {
    int count = 0;
    for (int i = s.indexOf(needle); i >= 0; i = s.indexOf(needle, i + needle.length())) {
      count++;
    }
    return count;
  }

  static void deleteTree(Path root) {
    try (Stream<Path> s = Files.walk(root)) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> {
        try {
          Files.deleteIfExists(p);
        } catch (IOException ignored) {
          // best effort
        }
      });
    } catch (IOException ignored) {
      // best effort
    }
  }

  public static void main(String[] args) throws Exception {
    Options o = Options.parse(args);
    if (o.rawSpawnOnly) {
      rawSpawnChild(o);
      return;
    }
    AgentBench bench = new AgentBench(o);
    boolean ok;
    try {
      ok = bench.run();
    } finally {
      bench.cleanUp();
    }
    if (!ok) {
      System.exit(1);
    }
  }
}
