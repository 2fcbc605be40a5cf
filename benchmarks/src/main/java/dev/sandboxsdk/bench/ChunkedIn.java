package dev.sandboxsdk.bench;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;

/** Decodes HTTP/1.1 chunked transfer encoding; counts payload bytes and chunks. */
public final class ChunkedIn extends InputStream {
  final FastIn in;
  long remaining;
  boolean eof;
  boolean first = true;
  public long payloadBytes;
  public long chunks;

  ChunkedIn(FastIn in) {
    this.in = in;
  }

  private boolean nextChunk() throws IOException {
    if (!first) {
      String crlf = in.readLine();
      if (crlf == null || !crlf.isEmpty()) {
        throw new IOException("bad chunk terminator: " + crlf);
      }
    }
    first = false;
    String line = in.readLine();
    if (line == null) {
      throw new EOFException("connection closed inside a chunked body");
    }
    int semi = line.indexOf(';');
    long size = Long.parseLong((semi >= 0 ? line.substring(0, semi) : line).trim(), 16);
    if (size == 0) {
      String trailer;
      while ((trailer = in.readLine()) != null && !trailer.isEmpty()) {
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
