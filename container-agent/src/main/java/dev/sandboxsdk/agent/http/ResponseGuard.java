package dev.sandboxsdk.agent.http;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;

/**
 * The response body as handlers see it; remembers whether any write, flush or close failed.
 * After a failure it does not pass close on: closing the JDK's stream then would still report the
 * response as written and keep the dead connection for reuse.
 */
final class ResponseGuard extends FilterOutputStream {
  private volatile IOException failure;
  private volatile boolean closed;

  ResponseGuard(OutputStream out) {
    super(out);
  }

  IOException failure() {
    return failure;
  }

  @Override
  public void write(int b) throws IOException {
    check();
    try {
      out.write(b);
    } catch (IOException e) {
      throw failed(e);
    }
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    check();
    try {
      out.write(b, off, len);
    } catch (IOException e) {
      throw failed(e);
    }
  }

  @Override
  public void flush() throws IOException {
    check();
    try {
      out.flush();
    } catch (IOException e) {
      throw failed(e);
    }
  }

  @Override
  public void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true; // before closing: the JDK's stream calls back here when it gives up
    check();
    try {
      out.close();
    } catch (IOException e) {
      throw failed(e);
    }
  }

  private void check() throws IOException {
    if (failure != null) {
      throw new IOException("the connection already failed", failure);
    }
  }

  private IOException failed(IOException e) {
    if (failure == null) {
      failure = e;
    }
    return e;
  }
}
