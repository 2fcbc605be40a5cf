package dev.sandboxsdk.agent.process;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.net.StandardProtocolFamily;
import java.net.URISyntaxException;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The way from the agent's JVM to a server inside the sandbox's own network namespace, which the
 * JVM cannot enter: one small relay process ({@link RelayMain}, a JVM with a 16 MiB heap) that
 * runs inside the namespace ({@code nsenter --net}, as commands enter it) and listens on a
 * Unix-domain socket in the agent's private directory. Unix sockets are files, not bound to a
 * network namespace, so the agent connects to it from outside, names the port, and gets a byte
 * stream to {@code 127.0.0.1:port} inside.
 *
 * <p>Started on first use. A relay that died, or that lives in a namespace the holder no longer
 * keeps (the holder was restarted, so new commands are elsewhere), is replaced on the next use.
 * It ends with the agent: it exits when its standard input, a pipe the agent holds, reaches end
 * of file, and {@link #close()} kills it. Commands cannot reach its socket: the agent's private
 * directory is not mounted in their sandboxes. Thread-safe.
 */
public final class NetnsRelay implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(NetnsRelay.class);
  /** Small heap, no optimizing compiler, small stacks: the relay only copies bytes. */
  static final List<String> JVM_FLAGS = List.of("-Xmx16m", "-Xss256k", "-XX:TieredStopAtLevel=1",
      "-XX:+UseSerialGC", "-XX:-UsePerfData", "-Xshare:auto");
  private static final long START_TIMEOUT_MS = 15_000;

  private final SharedNetwork network;
  private final Path socket;
  /** The egress proxy's Unix-domain socket the relay forwards to, or null without egress. */
  private Path egressSocket;
  /** The relay's egress port in the namespace: 0 until the first relay picked one, then always that one. */
  private int egressPort;
  private Running current;
  private boolean closed;

  private record Running(Process process, long holderPid) { }

  NetnsRelay(SharedNetwork network, Path dir) {
    this.network = network;
    this.socket = dir.resolve("relay.sock");
  }

  /**
   * A connected byte stream to {@code port} on the sandbox's loopback (127.0.0.1, else ::1).
   *
   * @throws ConnectException if nothing listens there
   * @throws SocketTimeoutException if the connection attempt timed out
   * @throws IOException if the relay cannot be started or reached
   */
  public SocketChannel connect(int port) throws IOException {
    ensureRunning();
    SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
    try {
      ch.connect(UnixDomainSocketAddress.of(socket));
      ByteBuffer header = ByteBuffer.allocate(2).putShort((short) port).flip();
      while (header.hasRemaining()) {
        ch.write(header);
      }
      ByteBuffer status = ByteBuffer.allocate(1);
      while (status.hasRemaining()) {
        if (ch.read(status) < 0) {
          throw new IOException("the relay closed the connection before it answered");
        }
      }
      switch (status.get(0)) {
        case RelayMain.OK:
          return ch;
        case RelayMain.TIMED_OUT:
          throw new SocketTimeoutException("connecting to port " + port + " in the sandbox timed out");
        default:
          throw new ConnectException("nothing listens on port " + port + " in the sandbox");
      }
    } catch (IOException | RuntimeException e) {
      ch.close();
      throw e;
    }
  }

  /**
   * Makes the relay also listen on {@code 127.0.0.1} inside the namespace and forward to the egress
   * proxy at {@code proxySocket}; starts it now, and returns the port commands reach the proxy on.
   * Every relay started later (after the holder was replaced) listens on the same port.
   */
  synchronized int forwardEgress(Path proxySocket) throws IOException {
    egressSocket = proxySocket;
    if (current != null) {
      current.process().destroyForcibly();
      current = null;
    }
    ensureRunning();
    return egressPort;
  }

  /**
   * With egress, makes sure a relay runs in the namespace new commands enter, so that their proxy
   * port answers; a failure is logged (those commands then have no way out at all).
   */
  void ensureEgress() {
    synchronized (this) {
      if (egressSocket == null) {
        return;
      }
    }
    try {
      ensureRunning();
    } catch (IOException e) {
      log.warn("cannot start the network relay, so commands cannot reach the egress proxy: {}", e.getMessage());
    }
  }

  /** The relay's pid, or -1 if none runs (for tests and diagnostics). */
  public synchronized long pid() {
    return current != null && current.process().isAlive() ? current.process().pid() : -1;
  }

  private synchronized void ensureRunning() throws IOException {
    if (closed) {
      throw new IOException("the agent is shutting down");
    }
    long holder = network.holderPid();
    if (current != null) {
      if (current.process().isAlive() && current.holderPid() == holder) {
        return;
      }
      log.info("restarting the network relay ({})", current.process().isAlive()
          ? "the network namespace's holder was replaced" : "it ended with status " + current.process().exitValue());
      current.process().destroyForcibly();
      current = null;
    }
    current = new Running(start(), holder);
  }

  private Process start() throws IOException {
    List<String> cmd = new ArrayList<>(network.prefix());
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(JVM_FLAGS);
    cmd.add("-cp");
    cmd.add(codeSource());
    cmd.add(RelayMain.class.getName());
    cmd.add(socket.toString());
    if (egressSocket != null) {
      cmd.add(egressSocket.toString());
      cmd.add(Integer.toString(egressPort));
    }
    long t0 = System.nanoTime();
    Process p = new ProcessBuilder(cmd).directory(socket.getParent().toFile())
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    // Reading the ready line on a thread of its own keeps the wait bounded.
    CompletableFuture<String> ready = CompletableFuture.supplyAsync(() -> {
      try {
        return new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)).readLine();
      } catch (IOException e) {
        return null;
      }
    });
    try {
      String line = ready.get(START_TIMEOUT_MS, TimeUnit.MILLISECONDS);
      if (line == null || !(line.equals(RelayMain.READY) || line.startsWith(RelayMain.READY + " "))) {
        p.destroyForcibly();
        throw new IOException("the network relay did not start (exit "
            + (p.waitFor(1, TimeUnit.SECONDS) ? p.exitValue() : -1) + "; see the agent's log)");
      }
    } catch (TimeoutException | ExecutionException e) {
      p.destroyForcibly();
      throw new IOException("the network relay did not start within " + START_TIMEOUT_MS + " ms", e);
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while starting the network relay", e);
    }
    if (egressSocket != null) {
      egressPort = Integer.parseInt(ready.getNow("").substring(RelayMain.READY.length()).strip());
    }
    log.info("network relay started (pid {}, {} ms, socket {})", p.pid(),
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0), socket);
    return p;
  }

  /** The jar (or class directory) this class came from: the relay needs nothing else. */
  private static String codeSource() throws IOException {
    try {
      return Path.of(RelayMain.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    } catch (URISyntaxException | RuntimeException e) {
      throw new IOException("cannot find the agent's own classes for the network relay: " + e, e);
    }
  }

  @Override
  public synchronized void close() {
    closed = true;
    if (current != null) {
      current.process().destroyForcibly();
      current = null;
    }
    try {
      Files.deleteIfExists(socket);
    } catch (IOException e) {
      // its directory goes with the agent's
    }
  }
}
