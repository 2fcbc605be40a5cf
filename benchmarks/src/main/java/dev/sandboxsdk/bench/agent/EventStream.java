package dev.sandboxsdk.bench.agent;

import static dev.sandboxsdk.bench.JsonBytes.ascii;
import static dev.sandboxsdk.bench.JsonBytes.indexOf;
import static dev.sandboxsdk.bench.JsonBytes.parseLongAfter;

import dev.sandboxsdk.bench.ChunkedIn;
import dev.sandboxsdk.bench.JsonBytes;
import dev.sandboxsdk.bench.RawHttp;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.zip.CRC32;

/**
 * Reads one {@code POST /api/execute/stream} response of the agent the way {@link AgentBench}'s
 * verifying client does: de-chunks HTTP, parses SSE, decodes base64 or JSON strings, and checks
 * byte count, offsets and CRC-32 ({@link #run}); or only de-chunks and counts ({@link #drain}).
 */
final class EventStream {
  static final byte[] K_TYPE = ascii("\"type\":\"");
  static final byte[] K_DATA = ascii("\"data\":\"");
  static final byte[] K_OFFSET = ascii("\"offset\":");
  static final byte[] K_BYTES = ascii("\"bytes\":");
  static final byte[] K_EXIT = ascii("\"exitCode\":");
  static final byte[] K_COMPLETE = ascii("\"type\":\"complete\"");

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

  private final StreamResult r = new StreamResult();
  private final boolean base64;
  private final CRC32 crc = new CRC32();
  private final Base64.Decoder dec = Base64.getDecoder();
  private byte[] text = new byte[1 << 20];

  private EventStream(boolean base64) {
    this.base64 = base64;
  }

  /** Streams {@code bodyJson}'s command and verifies its output; CPU times of the agent (pid) and this JVM. */
  static StreamResult run(RawHttp http, long agentPid, String label, String bodyJson, boolean base64, long expectedBytes,
      long expectedCrc) throws IOException {
    EventStream es = new EventStream(base64);
    StreamResult r = es.r;
    r.label = label;
    r.expectedBytes = expectedBytes;
    r.expectedCrc = expectedCrc;
    double agentCpu0 = ProcStatus.cpuSeconds(agentPid, false);
    double childCpu0 = ProcStatus.cpuSeconds(agentPid, true);
    double clientCpu0 = ProcStatus.selfCpuSeconds();
    long t0 = System.nanoTime();
    int[] status = new int[1];
    ChunkedIn body = http.stream("POST", "/api/execute/stream", bodyJson.getBytes(StandardCharsets.UTF_8), status);
    if (status[0] != 200) {
      throw new IOException(label + ": HTTP " + status[0] + ": " + new String(body.readAllBytes(), StandardCharsets.UTF_8));
    }
    Lines lines = new Lines(body);
    int end;
    while ((end = lines.next()) >= 0) {
      es.line(lines.buf, lines.start, end);
    }
    r.seconds = (System.nanoTime() - t0) / 1e9;
    r.clientCpu = ProcStatus.selfCpuSeconds() - clientCpu0;
    r.agentCpu = ProcStatus.cpuSeconds(agentPid, false) - agentCpu0;
    r.childCpu = ProcStatus.cpuSeconds(agentPid, true) - childCpu0;
    r.wireBytes = body.payloadBytes;
    r.chunks = body.chunks;
    r.crc = es.crc.getValue();
    return r;
  }

  /** One SSE line, a[s..end). */
  private void line(byte[] a, int s, int end) throws IOException {
    if (end == s) {
      return; // event separator
    }
    if (a[s] == ':') {
      r.keepAlives++;
      return;
    }
    if (end - s < 6 || a[s] != 'd' || a[s + 5] != ' ') {
      return; // other SSE fields are not used by the agent
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
      output(a, ts, end, isStdout);
    } else if (c0 == 'c') { // complete
      long exit = parseLongAfter(a, js, end, K_EXIT);
      r.exitCode = exit == Long.MIN_VALUE ? Integer.MIN_VALUE : (int) exit;
    }
  }

  /** A stdout or stderr event whose type ends at ts: decodes and counts its data, checks its offset. */
  private void output(byte[] a, int ts, int end, boolean isStdout) {
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
      len = JsonBytes.unescapeJsonString(a, ds, end, text, close);
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
  }

  /** Reads a stream response de-chunking only; returns {seconds, wire bytes, 0 if it ended with complete/exit 0}. */
  static double[] drain(RawHttp http, String bodyJson) throws IOException {
    long t0 = System.nanoTime();
    int[] status = new int[1];
    ChunkedIn body = http.stream("POST", "/api/execute/stream", bodyJson.getBytes(StandardCharsets.UTF_8), status);
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
}
