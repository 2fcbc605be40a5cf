package dev.sandboxsdk.agent.egress;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.SocketChannel;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;

/**
 * TLS over a blocking {@link SocketChannel} (TCP or Unix-domain) through an {@link SSLEngine}, so
 * that the proxy's watchdog still ends a blocked read by closing the channel. One thread may read
 * while another writes (the relay's two pumps); writes, and the engine's own answers to what a
 * read brought (a key update), go out under one lock.
 */
final class TlsChannel implements ByteChannel {
  /** No buffer grows past this (a TLS record is at most 16 KiB plus its overhead). */
  private static final int MAX_BUFFER = 128 * 1024;
  private final SocketChannel channel;
  private final SSLEngine engine;
  private final Object writeLock = new Object();
  /** Received and not yet unwrapped; in write mode. */
  private ByteBuffer netIn;
  /** Unwrapped and not yet read; in write mode. */
  private ByteBuffer appIn;
  /** Wrapped and not yet sent; used under the write lock. */
  private ByteBuffer netOut;
  private boolean inboundDone;

  /**
   * @param received bytes already read from the channel that belong to the TLS stream
   */
  TlsChannel(SocketChannel channel, SSLEngine engine, byte[] received) {
    this.channel = channel;
    this.engine = engine;
    int packet = engine.getSession().getPacketBufferSize();
    this.netIn = ByteBuffer.allocate(Math.max(packet, received.length));
    this.netIn.put(received);
    this.appIn = ByteBuffer.allocate(engine.getSession().getApplicationBufferSize());
    this.netOut = ByteBuffer.allocate(packet);
  }

  SSLEngine engine() {
    return engine;
  }

  /** Whether bytes were received that no read has taken yet (then the stream is not at a boundary). */
  boolean hasBuffered() {
    return netIn.position() > 0 || appIn.position() > 0;
  }

  /** Runs the handshake to its end. */
  void handshake() throws IOException {
    engine.beginHandshake();
    while (true) {
      switch (engine.getHandshakeStatus()) {
        case NEED_WRAP:
          synchronized (writeLock) {
            wrap(ByteBuffer.allocate(0));
          }
          break;
        case NEED_UNWRAP:
        case NEED_UNWRAP_AGAIN:
          if (!unwrapOnce()) {
            throw new EOFException("the peer closed during the TLS handshake");
          }
          break;
        case NEED_TASK:
          runTasks();
          break;
        default: // FINISHED, NOT_HANDSHAKING
          return;
      }
    }
  }

  @Override
  public int read(ByteBuffer dst) throws IOException {
    while (appIn.position() == 0) {
      if (inboundDone || !unwrapOnce()) {
        return -1;
      }
      answerIfNeeded();
    }
    appIn.flip();
    int n = Math.min(dst.remaining(), appIn.remaining());
    ByteBuffer slice = appIn.slice();
    slice.limit(n);
    dst.put(slice);
    appIn.position(appIn.position() + n);
    appIn.compact();
    return n;
  }

  @Override
  public int write(ByteBuffer src) throws IOException {
    int n = src.remaining();
    synchronized (writeLock) {
      while (src.hasRemaining()) {
        wrap(src);
      }
    }
    return n;
  }

  /** Sends close_notify and shuts the channel's output; reading stays possible. */
  void shutdownOutput() throws IOException {
    synchronized (writeLock) {
      engine.closeOutbound();
      while (!engine.isOutboundDone()) {
        wrap(ByteBuffer.allocate(0));
      }
    }
    channel.shutdownOutput();
  }

  @Override
  public boolean isOpen() {
    return channel.isOpen();
  }

  @Override
  public void close() throws IOException {
    channel.close();
  }

  /**
   * Unwraps one record (reading from the channel as needed) into {@link #appIn}; false at the end
   * of the stream (close_notify, or the channel's end outside a handshake).
   */
  private boolean unwrapOnce() throws IOException {
    while (true) {
      netIn.flip();
      SSLEngineResult r;
      try {
        r = engine.unwrap(netIn, appIn);
      } finally {
        netIn.compact();
      }
      switch (r.getStatus()) {
        case OK:
          if (r.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_TASK) {
            runTasks();
          }
          return true;
        case CLOSED:
          inboundDone = true;
          return false;
        case BUFFER_OVERFLOW:
          appIn = grow(appIn, engine.getSession().getApplicationBufferSize());
          break;
        default: // BUFFER_UNDERFLOW
          if (!netIn.hasRemaining()) {
            netIn = grow(netIn, engine.getSession().getPacketBufferSize());
          }
          if (channel.read(netIn) < 0) {
            if (engine.isInboundDone() || engine.getHandshakeStatus() != SSLEngineResult.HandshakeStatus.NOT_HANDSHAKING) {
              throw new EOFException("the peer closed mid-record");
            }
            try {
              engine.closeInbound(); // no close_notify: a truncation, which HTTP's framing still tells
            } catch (SSLException e) {
              // expected without close_notify
            }
            inboundDone = true;
            return false;
          }
      }
    }
  }

  /** Answers what the peer sent after the handshake when the engine wants to (TLS 1.3 key update). */
  private void answerIfNeeded() throws IOException {
    SSLEngineResult.HandshakeStatus hs = engine.getHandshakeStatus();
    if (hs == SSLEngineResult.HandshakeStatus.NEED_TASK) {
      runTasks();
      hs = engine.getHandshakeStatus();
    }
    if (hs == SSLEngineResult.HandshakeStatus.NEED_WRAP) {
      synchronized (writeLock) {
        if (engine.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_WRAP) {
          wrap(ByteBuffer.allocate(0));
        }
      }
    }
  }

  /** Wraps once from {@code src} and sends what it made; under the write lock. */
  private void wrap(ByteBuffer src) throws IOException {
    while (true) {
      netOut.clear();
      SSLEngineResult r = engine.wrap(src, netOut);
      if (r.getStatus() == SSLEngineResult.Status.BUFFER_OVERFLOW) {
        netOut = grow(netOut, engine.getSession().getPacketBufferSize());
        continue;
      }
      netOut.flip();
      while (netOut.hasRemaining()) {
        channel.write(netOut);
      }
      if (r.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_TASK) {
        runTasks();
      }
      if (r.getStatus() == SSLEngineResult.Status.CLOSED && src.hasRemaining()) {
        throw new SSLException("TLS connection closed");
      }
      return;
    }
  }

  private void runTasks() {
    Runnable task;
    while ((task = engine.getDelegatedTask()) != null) {
      task.run();
    }
  }

  /** Grows a buffer; a record or message past {@value #MAX_BUFFER} bytes is refused. */
  private static ByteBuffer grow(ByteBuffer b, int atLeast) throws SSLException {
    if (b.capacity() >= MAX_BUFFER) {
      throw new SSLException("TLS record too large");
    }
    ByteBuffer bigger = ByteBuffer.allocate(Math.max(b.capacity() * 2, atLeast));
    b.flip();
    bigger.put(b);
    return bigger;
  }
}
