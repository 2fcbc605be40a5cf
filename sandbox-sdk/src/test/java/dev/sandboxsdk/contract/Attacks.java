package dev.sandboxsdk.contract;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.testkit.Await;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What the providers' attack suites (ContainerAttackIT, KubernetesAttackIT) share: attacks run as
 * commands in one sandbox, printed for the docs' tables with its token masked, the attacks whose
 * outcome is the same for every provider, and a listener on the host that counts the connections
 * that reached it.
 */
public final class Attacks {
  private final Sandbox sandbox;
  private final String token;

  /** Attacks on {@code sandbox}, whose agent's token is {@code token} (masked in what is printed, looked for in what commands get). */
  public Attacks(Sandbox sandbox, String token) {
    this.sandbox = sandbox;
    this.token = token;
  }

  /** Runs an attack with a 30 s timeout; see {@link #run(String, ExecOptions)}. */
  public ExecResult sh(String command) {
    return run(command, ExecOptions.builder().timeout(Duration.ofSeconds(30)).build());
  }

  /** Runs an attack and prints what it got (with the token masked), for the attack tables in the docs. */
  public ExecResult run(String command, ExecOptions options) {
    ExecResult r = sandbox.exec(Command.shell(command), options);
    System.out.printf("ATTACK %s%n  -> exit %d%s, stdout %s, stderr %s%n", command.replace(token, "<token>"), r.exitCode(),
        r.timedOut() ? " (timed out)" : "", firstLine(r.stdout()), firstLine(r.stderr()));
    return r;
  }

  private static String firstLine(String s) {
    String line = s.lines().findFirst().orElse("");
    return "'" + (line.length() > 100 ? line.substring(0, 100) + "..." : line) + "'" + (s.lines().count() > 1 ? " ..." : "");
  }

  /** The classic fork bomb, as the start of a shell command (an exec's timeout ends it). */
  public static final String FORK_BOMB = "bomb() { bomb | bomb & }; bomb; ";

  /**
   * A background fork bomb that keeps what it took and takes every process slot that frees within
   * 10 ms, so the pids limit stays full (perl is in every Debian image, perl-base being essential).
   */
  public static final String SLOT_HOLDING_BOMB = "perl -e 'while (1) { my $p = fork;"
      + " if (!defined $p) { select(undef, undef, undef, 0.01) } elsif ($p == 0) { sleep 600; exit } }'";

  /**
   * A command that tries TCP to {@code port} at the sandbox's default gateway (read from
   * {@code /proc/net/route}; none when the route has no gateway) and at each of {@code addresses},
   * printing "connected ADDRESS" for each that answers and "tried" at the end.
   */
  public static String tryConnect(int port, String... addresses) {
    return "gw=$(awk '$2 == \"00000000\" && $3 != \"00000000\" { g = $3; printf \"%d.%d.%d.%d\", \"0x\" substr(g,7,2),"
        + " \"0x\" substr(g,5,2), \"0x\" substr(g,3,2), \"0x\" substr(g,1,2) }' /proc/net/route);"
        + " for a in \"$gw\" " + String.join(" ", addresses) + "; do"
        + " [ -n \"$a\" ] && timeout 3 bash -c \"echo > /dev/tcp/$a/" + port + "\" 2>/dev/null && echo \"connected $a\"; done;"
        + " echo tried";
  }

  /** The pid of the agent's JVM, as commands see it. */
  public String agentPid() {
    String pid = sh("pgrep -x java").stdout().strip();
    assertThat(pid).as("the agent's pid").matches("\\d+");
    return pid;
  }

  /** Asserts that an attack failed with "Permission denied" and that its output holds no token. */
  public void assertDeniedWithoutToken(ExecResult r) {
    assertThat(r.exitCode()).isNotZero();
    assertThat(r.stderr()).contains("Permission denied");
    assertThat(r.stdout()).doesNotContain(token);
  }

  /** Asserts that the agent still runs commands. */
  public void assertAgentServes() {
    assertThat(sh("echo still serving").stdout()).isEqualTo("still serving\n");
  }

  /** Asserts that no file a command can read, outside /proc, /sys and /dev, holds the token. */
  public void assertNoFileACommandCanReadHoldsTheToken() {
    // The token reaches this command only through its own request's environment, for grep.
    ExecResult r = run("grep -rlsF -e \"$T\" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev; echo done",
        ExecOptions.builder().env(Map.of("T", token)).timeout(Duration.ofSeconds(60)).build());

    assertThat(r.stdout()).isEqualTo("done\n");
  }

  /** Asserts that commands cannot write to the root file system, but can to the workspace, /tmp and their home. */
  public void assertTheRootFileSystemIsReadOnlyWhileWorkspaceTmpAndHomeAreWritable() {
    for (String path : new String[] {"/usr/pwned", "/etc/pwned", "/pwned", "/opt/sandbox-agent/pwned"}) {
      ExecResult r = sh("echo x > " + path);
      assertThat(r.exitCode()).as(path).isNotZero();
      assertThat(r.stderr()).as(path).containsAnyOf("Read-only file system", "Permission denied");
    }
    assertThat(sh("echo w > /workspace/ok && echo t > /tmp/ok && echo h > ~/ok && cat /workspace/ok /tmp/ok ~/ok").stdout())
        .isEqualTo("w\nt\nh\n");
  }

  /** Asserts that a command doubling a string until memory runs out is killed (137), not timed out. */
  public void assertAMemoryHogIsKilled() {
    ExecResult r = run("a=xxxxxxxxxxxxxxxx; while :; do a=$a$a; done",
        ExecOptions.builder().timeout(Duration.ofSeconds(60)).build());

    assertThat(r.exitCode()).as("killed, not finished: " + r).isEqualTo(137);
    assertThat(r.timedOut()).isFalse();
  }

  /** Asserts that a command can neither kill nor stop the agent (nor pid 1), and that the agent serves afterwards. */
  public void assertKillingTheAgentFromACommandFails() {
    String pid = agentPid();
    ExecResult r = sh("kill -9 " + pid + "; kill -9 1; kill -STOP " + pid);

    assertThat(r.exitCode()).isNotZero();
    assertThat(r.stderr()).contains("Operation not permitted");
    assertAgentServes();
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
      Await.until(timeout, () -> accepted.get() > 0);
      return accepted.get();
    }

    @Override
    public void close() throws IOException {
      server.close();
    }
  }
}
