package dev.sandboxsdk.bench.sdk;

import static dev.sandboxsdk.bench.sdk.SdkStreams.matchesGenerator;

import dev.sandboxsdk.bench.JsonBytes;
import java.io.BufferedInputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;

/**
 * The agent's own rate: a raw HTTP/1.1 client that sends {@code POST /api/execute/stream}, undoes
 * the chunked framing and splits the event lines, and per stdout event only reads the
 * {@code "offset"} and {@code "bytes"} numbers near the line's end, without decoding the JSON
 * (with {@code verify}, it decodes {@code data} and checks it against the generator).
 */
final class RawStream {
  private final InputStream in;
  private byte[] line = new byte[1 << 16];
  private int lineLength;
  private long next; // expected offset of the next stdout event
  private long events;
  private boolean complete;
  private final boolean verify;

  private RawStream(InputStream in, boolean verify) {
    this.in = in;
    this.verify = verify;
  }

  /** Bytes received on the wire and stdout events; throws unless stdout added up to exactly {@code total}. */
  static long[] run(int port, String command, long total, boolean verify) throws IOException {
    try (Socket socket = new Socket("127.0.0.1", port)) {
      socket.setTcpNoDelay(true);
      socket.setReceiveBufferSize(1 << 20);
      byte[] body = ("{\"command\":\"" + command.replace("\\", "\\\\").replace("\"", "\\\"") + "\"}")
          .getBytes(StandardCharsets.UTF_8);
      OutputStream out = socket.getOutputStream();
      out.write(("POST /api/execute/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + SdkBench.TOKEN + "\r\n"
          + "Accept: text/event-stream\r\nContent-Type: application/json\r\nConnection: close\r\n"
          + "Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      out.write(body);
      out.flush();
      CountingStream counted = new CountingStream(socket.getInputStream());
      InputStream in = new BufferedInputStream(counted, 1 << 16);
      String status = headerLine(in);
      if (!status.startsWith("HTTP/1.1 200")) {
        throw new IOException("unexpected status: " + status);
      }
      boolean chunked = false;
      for (String h; !(h = headerLine(in)).isEmpty(); ) {
        chunked |= h.toLowerCase(Locale.ROOT).replace(" ", "").equals("transfer-encoding:chunked");
      }
      if (!chunked) {
        throw new IOException("expected a chunked event stream");
      }
      RawStream r = new RawStream(in, verify);
      r.read();
      if (r.next != total) {
        throw new IllegalStateException("the raw client counted " + r.next + " bytes, not " + total);
      }
      return new long[] {counted.count, r.events};
    }
  }

  private void read() throws IOException {
    byte[] chunk = new byte[1 << 16];
    while (!complete) {
      int size = Integer.parseInt(headerLine(in).split(";")[0].trim(), 16);
      if (size == 0) {
        throw new IOException("the stream ended before its complete event");
      }
      while (size > 0) {
        int n = in.read(chunk, 0, Math.min(size, chunk.length));
        if (n < 0) {
          throw new IOException("connection closed inside a chunk");
        }
        size -= n;
        feed(chunk, n);
      }
      if (!headerLine(in).isEmpty()) {
        throw new IOException("bad chunk framing");
      }
    }
  }

  private void feed(byte[] b, int n) throws IOException {
    int from = 0;
    for (int i = 0; i < n; i++) {
      if (b[i] == '\n') {
        append(b, from, i - from);
        event();
        lineLength = 0;
        from = i + 1;
      }
    }
    append(b, from, n - from);
  }

  private void append(byte[] b, int from, int n) {
    if (lineLength + n > line.length) {
      line = Arrays.copyOf(line, Math.max(line.length * 2, lineLength + n));
    }
    System.arraycopy(b, from, line, lineLength, n);
    lineLength += n;
  }

  private static final byte[] STDOUT = "data: {\"type\":\"stdout\"".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] COMPLETE = "data: {\"type\":\"complete\"".getBytes(StandardCharsets.US_ASCII);

  private void event() throws IOException {
    if (startsWith(STDOUT)) {
      long offset = number(",\"offset\":");
      long bytes = number(",\"bytes\":");
      if (offset != next) {
        throw new IOException("stdout event at offset " + offset + ", expected " + next);
      }
      if (verify) {
        String data = decodeData();
        if (data.length() != bytes || !matchesGenerator(data, offset)) {
          throw new IOException("stdout event at offset " + offset + " is not the generator's text");
        }
      }
      next += bytes;
      events++;
    } else if (startsWith(COMPLETE)) {
      complete = true;
    }
  }

  private boolean startsWith(byte[] prefix) {
    if (lineLength < prefix.length) {
      return false;
    }
    for (int i = 0; i < prefix.length; i++) {
      if (line[i] != prefix[i]) {
        return false;
      }
    }
    return true;
  }

  /** The integer after the last {@code key} in the line, searched from its end (the numbers follow data). */
  private long number(String key) throws IOException {
    byte[] k = key.getBytes(StandardCharsets.US_ASCII);
    int at = JsonBytes.lastIndexOf(line, 0, lineLength, k);
    if (at < 0) {
      throw new IOException("no " + key + " in an event");
    }
    long v = 0;
    for (int i = at + k.length; i < lineLength && line[i] >= '0' && line[i] <= '9'; i++) {
      v = v * 10 + (line[i] - '0');
    }
    return v;
  }

  /** The {@code data} string of a stdout event, unescaped (the generator's text needs only \\n). */
  private String decodeData() throws IOException {
    String json = new String(line, 0, lineLength, StandardCharsets.UTF_8);
    int start = json.indexOf("\"data\":\"") + 8;
    StringBuilder sb = new StringBuilder();
    for (int i = start; ; i++) {
      char c = json.charAt(i);
      if (c == '"') {
        return sb.toString();
      }
      if (c == '\\') {
        char e = json.charAt(++i);
        switch (e) {
          case 'n': sb.append('\n'); break;
          case '"': case '\\': case '/': sb.append(e); break;
          case 'u': sb.append((char) Integer.parseInt(json.substring(i + 1, i + 5), 16)); i += 4; break;
          default: throw new IOException("unexpected escape \\" + e);
        }
      } else {
        sb.append(c);
      }
    }
  }

  private static String headerLine(InputStream in) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int c; (c = in.read()) != '\n'; ) {
      if (c < 0) {
        throw new IOException("connection closed");
      }
      if (c != '\r') {
        sb.append((char) c);
      }
    }
    return sb.toString();
  }
}

/** Counts the bytes read from the socket. */
final class CountingStream extends FilterInputStream {
  long count;

  CountingStream(InputStream in) {
    super(in);
  }

  @Override
  public int read() throws IOException {
    int c = super.read();
    count += c < 0 ? 0 : 1;
    return c;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    int n = super.read(b, off, len);
    count += Math.max(n, 0);
    return n;
  }
}
