package dev.sandboxsdk.agent.process;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One network namespace (loopback only) for all of a sandbox's isolated commands, so that a
 * server one command starts is reachable from the next, as on a machine or in a container.
 *
 * <p>A holder process ({@code bwrap --unshare-net ... sleep infinity}) keeps the namespace alive;
 * bwrap brings its loopback up. Each command enters it with {@code nsenter --net} before its own
 * bwrap builds the command's mounts and PID namespace. An agent that is not root gets a user
 * namespace with the holder (bwrap makes one), which {@code nsenter} joins first, keeping the
 * agent's uid ({@code --preserve-credentials}); the command's bwrap then drops whatever that gave.
 *
 * <p>The holder is started, and waited for, by one thread of its own that lives as long as it:
 * {@code --die-with-parent} is a {@code PR_SET_PDEATHSIG}, which the kernel fires when the
 * <em>thread</em> that forked the process ends, not the JVM. If the holder dies anyway (only a
 * host process could kill it: commands cannot see it), the thread starts another one; commands
 * already running keep the old namespace.
 */
final class SharedNetwork implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(SharedNetwork.class);
  private static final Pattern CHILD_PID = Pattern.compile("\"child-pid\"\\s*:\\s*(\\d+)");
  private static final long START_TIMEOUT_MS = 10_000;

  private final List<String> holderCommand;
  private final String nsenter;
  private final Thread keeper;
  private volatile Holder current;
  private volatile boolean closed;

  /** A running holder: the pid whose namespaces commands enter, and whether a user namespace comes with it. */
  private record Holder(Process process, long nsPid, boolean ownUserNamespace) { }

  private SharedNetwork(String bwrap, String sleep, String nsenter) {
    this.holderCommand = List.of(bwrap, "--die-with-parent", "--unshare-net", "--dev-bind", "/", "/",
        "--info-fd", "1", "--", sleep, "infinity");
    this.nsenter = nsenter;
    CompletableFuture<Holder> first = new CompletableFuture<>();
    this.keeper = new Thread(() -> keep(first), "agent-netns");
    keeper.setDaemon(true);
    keeper.start();
    try {
      current = first.get(START_TIMEOUT_MS + 1_000, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      closed = true;
      Throwable cause = e.getCause();
      throw cause instanceof IllegalStateException ? (IllegalStateException) cause
          : new IllegalStateException(String.valueOf(cause.getMessage()), cause);
    } catch (TimeoutException e) {
      closed = true;
      keeper.interrupt();
      throw new Bubblewrap.SlowStartException("the network namespace's holder did not start within "
          + START_TIMEOUT_MS + " ms");
    } catch (InterruptedException e) {
      closed = true;
      keeper.interrupt();
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while starting the network namespace's holder", e);
    }
  }

  /**
   * Starts the holder and returns once commands can enter its namespace.
   *
   * @throws IllegalStateException with a one-line reason if a tool is missing or the holder cannot start
   */
  static SharedNetwork start(String bwrap, String path) {
    String nsenter = ProcessGroups.which("nsenter", path);
    String sleep = ProcessGroups.which("sleep", path);
    if (nsenter == null || sleep == null) {
      throw new IllegalStateException("isolation without network needs nsenter(1) and sleep(1) on the agent's PATH"
          + " (Debian/Ubuntu: util-linux, coreutils)");
    }
    return new SharedNetwork(bwrap, sleep, nsenter);
  }

  /** What goes before the command's own bwrap: enter the shared network namespace, exec in place. */
  List<String> prefix() {
    Holder h = current;
    List<String> cmd = new ArrayList<>(List.of(nsenter, "--target", Long.toString(h.nsPid())));
    if (h.ownUserNamespace()) {
      cmd.add("--user");
      cmd.add("--preserve-credentials");
    }
    cmd.add("--net");
    cmd.add("--");
    return cmd;
  }

  /** The pid whose network namespace commands enter now; another one after the holder was restarted. */
  long holderPid() {
    return current.nsPid();
  }

  /** Runs on the keeper thread: starts holders, one after another, until closed. */
  private void keep(CompletableFuture<Holder> first) {
    long backoffMs = 100;
    while (!closed) {
      Holder h;
      try {
        h = startHolder();
      } catch (IllegalStateException e) {
        if (first.completeExceptionally(e)) {
          return;
        }
        log.warn("cannot restart the network namespace's holder: {}; retrying in {} ms", e.getMessage(), backoffMs);
        if (!sleepQuietly(backoffMs)) {
          return;
        }
        backoffMs = Math.min(backoffMs * 2, 10_000);
        continue;
      }
      backoffMs = 100;
      current = h;
      first.complete(h);
      try {
        int status = h.process().waitFor();
        if (!closed) {
          log.warn("the network namespace's holder (pid {}) ended with status {}; starting another",
              h.process().pid(), status);
        }
      } catch (InterruptedException e) {
        h.process().destroyForcibly();
        return;
      }
    }
  }

  private Holder startHolder() {
    Process p;
    try {
      p = new ProcessBuilder(holderCommand).directory(Path.of("/").toFile())
          .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
          .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    } catch (IOException e) {
      throw new IllegalStateException("cannot start the network namespace's holder: " + e.getMessage(), e);
    }
    try {
      long pid = readChildPid(p.getInputStream());
      if (pid <= 0) {
        p.destroyForcibly();
        throw new IllegalStateException("bwrap --unshare-net did not start (exit "
            + (p.waitFor(1, TimeUnit.SECONDS) ? p.exitValue() : -1) + ")");
      }
      boolean ownUserNs = !Files.readSymbolicLink(Path.of("/proc", Long.toString(pid), "ns", "user"))
          .equals(Files.readSymbolicLink(Path.of("/proc/self/ns/user")));
      return new Holder(p, pid, ownUserNs);
    } catch (IOException e) {
      p.destroyForcibly();
      throw new IllegalStateException("cannot read the network namespace's holder: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while starting the network namespace's holder", e);
    }
  }

  /** Reads bwrap's {@code --info-fd} JSON up to its closing brace; -1 at end of file. */
  private static long readChildPid(InputStream in) throws IOException {
    StringBuilder json = new StringBuilder();
    int c;
    while (json.length() < 4096 && (c = in.read()) != -1) {
      json.append((char) c);
      if (c == '}') {
        Matcher m = CHILD_PID.matcher(json);
        return m.find() ? Long.parseLong(m.group(1)) : -1;
      }
    }
    return -1;
  }

  private static boolean sleepQuietly(long ms) {
    try {
      Thread.sleep(ms);
      return true;
    } catch (InterruptedException e) {
      return false;
    }
  }

  @Override
  public void close() {
    closed = true;
    keeper.interrupt();
    Holder h = current;
    if (h != null) {
      h.process().destroyForcibly();
    }
  }

  @Override
  public String toString() {
    Holder h = current;
    return "shared network namespace (holder pid " + (h == null ? "-" : h.process().pid()) + ")";
  }
}
