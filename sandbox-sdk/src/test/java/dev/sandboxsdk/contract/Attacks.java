package dev.sandboxsdk.contract;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.Sandbox;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What the providers' attack suites (ContainerAttackIT, KubernetesAttackIT) share: running an
 * attack as a command and printing what it got for the docs' tables, the agent's pid as commands
 * see it, and a listener on the host that counts the connections that reached it.
 */
public final class Attacks {
  private Attacks() {}

  /** Runs an attack with a 30 s timeout; see {@link #run(Sandbox, String, String, ExecOptions)}. */
  public static ExecResult sh(Sandbox sandbox, String token, String command) {
    return run(sandbox, token, command, ExecOptions.builder().timeout(Duration.ofSeconds(30)).build());
  }

  /** Runs an attack and prints what it got (with the token masked), for the attack tables in the docs. */
  public static ExecResult run(Sandbox sandbox, String token, String command, ExecOptions options) {
    ExecResult r = sandbox.exec(Command.shell(command), options);
    System.out.printf("ATTACK %s%n  -> exit %d%s, stdout %s, stderr %s%n", command.replace(token, "<token>"), r.exitCode(),
        r.timedOut() ? " (timed out)" : "", firstLine(r.stdout()), firstLine(r.stderr()));
    return r;
  }

  private static String firstLine(String s) {
    String line = s.lines().findFirst().orElse("");
    return "'" + (line.length() > 100 ? line.substring(0, 100) + "..." : line) + "'" + (s.lines().count() > 1 ? " ..." : "");
  }

  /** The pid of the agent's JVM, as commands see it. */
  public static String agentPid(Sandbox sandbox, String token) {
    String pid = sh(sandbox, token, "pgrep -x java").stdout().strip();
    assertThat(pid).as("the agent's pid").matches("\\d+");
    return pid;
  }

  /** A TCP listener on every address of this host, counting the connections it accepts. */
  public static final class Listener implements AutoCloseable {
    private final ServerSocket server;
    private final AtomicInteger accepted = new AtomicInteger();

    /** Listens on a free port of every address. */
    public Listener() throws IOException {
      server = new ServerSocket(0, 50, InetAddress.getByName("0.0.0.0"));
      server.setSoTimeout(200);
      Thread thread = new Thread(() -> {
        while (!server.isClosed()) {
          try (Socket s = server.accept()) {
            accepted.incrementAndGet();
          } catch (SocketTimeoutException e) {
            // check whether closed
          } catch (IOException e) {
            return;
          }
        }
      }, "attack-listener");
      thread.setDaemon(true);
      thread.start();
    }

    public int port() {
      return server.getLocalPort();
    }

    public int accepted() {
      return accepted.get();
    }

    /** Waits up to {@code timeout} for a first connection; returns how many arrived. */
    public int awaitAccepted(Duration timeout) throws InterruptedException {
      Await.await(timeout, () -> accepted.get() > 0);
      return accepted.get();
    }

    @Override
    public void close() throws IOException {
      server.close();
    }
  }
}
