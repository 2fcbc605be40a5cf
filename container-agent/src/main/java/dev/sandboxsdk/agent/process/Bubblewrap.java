package dev.sandboxsdk.agent.process;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs each command in its own bubblewrap ({@code bwrap}) sandbox ({@code --isolation bwrap}): a
 * mount namespace in which the system directories are read-only, the workspace and the sandbox's
 * private {@code /tmp} and {@code /var/tmp} are writable and the rest of the host's files do not
 * exist; new PID, IPC and UTS namespaces with a fresh {@code /proc}. Without network the commands
 * share one network namespace with only a loopback ({@link SharedNetwork}): a server one command
 * starts is reachable from the others, nothing outside is. {@code /tmp} and {@code /var/tmp} are
 * directories of the agent's (under {@code java.io.tmpdir}, mode 700), shared by the sandbox's
 * commands and removed when the agent stops, not memory-backed tmpfs.
 *
 * <p>How it fits the agent's process groups: the command line is
 * {@code setsid env --ignore-signal=... [nsenter --net ...] bwrap ... -- env --default-signal CMD}.
 * The outer {@code bwrap} is the process the agent started ({@code nsenter} execs it in place, so
 * pid == process group id, as without isolation) and stays in that group together with the
 * namespace's init and every process of the command, so a signal to the group reaches the command.
 * The outer {@code bwrap} ignores every signal it can, so that it lives until the command has
 * finished and reports the command's own exit status (128 + signal number when a signal ended it);
 * inside, {@code env --default-signal} gives the command default handling back before it starts.
 * SIGKILL to the group ends the outer {@code bwrap} and the namespace's init, and with it the
 * whole PID namespace.
 *
 * <p>{@code --die-with-parent} is a {@code PR_SET_PDEATHSIG}, which the kernel fires when the
 * <em>thread</em> that started the process ends, not the JVM; the agent's request threads end
 * after a few idle seconds, so isolated commands are started by {@link #spawner()}'s threads,
 * which live as long as the agent. (Without it, bwrap's init would also wait for every process
 * in the namespace instead of ending with the command's first.)
 *
 * <p>When the command's first process exits, the namespace ends and the kernel kills whatever the
 * command left behind in it (daemons started with {@code &}, {@code nohup}, {@code setsid}): a
 * command's processes never outlive it. A long-running server therefore belongs in a background
 * process ({@code startProcess}), which is killed with its namespace.
 */
public final class Bubblewrap {
  private static final Logger log = LoggerFactory.getLogger(Bubblewrap.class);
  /** Top-level host directories made visible read-only, where present. */
  static final List<String> SYSTEM_DIRS = List.of("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
      "/etc", "/opt");
  /**
   * Every catchable signal that would end or stop the outer bwrap: it must outlive the command
   * it reports on. Not SIGCHLD (bwrap waits for its child through it), nor SIGCONT.
   */
  static final String IGNORED = "HUP,INT,QUIT,ILL,TRAP,ABRT,BUS,FPE,USR1,SEGV,USR2,PIPE,ALRM,TERM,STKFLT,"
      + "TSTP,TTIN,TTOU,XCPU,XFSZ,VTALRM,PROF,IO,PWR,SYS";

  private final String bwrap;
  private final String env;
  private final Path workspace;
  private final boolean network;
  /** The network namespace commands share when the network is off, else null. */
  private final SharedNetwork sharedNetwork;
  /** The way into {@link #sharedNetwork} for the agent's proxy, else null. */
  private final NetnsRelay relay;
  /** The agent's directory holding the sandbox's {@code /tmp} and {@code /var/tmp}. */
  private final Path scratch;
  private volatile List<String> mounts;
  /** Threads that start isolated commands and live as long as the agent (see the class comment). */
  private final ExecutorService spawner = Executors.newFixedThreadPool(SPAWN_THREADS,
      ProcessManager.daemonThreads("agent-spawn"));
  private static final int SPAWN_THREADS = 4;

  private Bubblewrap(String bwrap, String env, Path workspace, boolean network, SharedNetwork sharedNetwork,
      Path scratch) {
    this.bwrap = bwrap;
    this.env = env;
    this.workspace = workspace;
    this.network = network;
    this.sharedNetwork = sharedNetwork;
    this.scratch = scratch;
    // The relay's socket is in the agent's directory, not in the sandbox's /tmp below it.
    this.relay = sharedNetwork == null ? null : new NetnsRelay(sharedNetwork, scratch);
    this.mounts = mounts(workspace, network, scratch);
  }

  /**
   * Bubblewrap is there but did not start in time: a fact about the machine's load, not about
   * whether isolation works here, so {@code --isolation auto} must not fall back to none on it (a
   * command that loads the machine would otherwise get the next sandboxes started unisolated).
   */
  public static final class SlowStartException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    /** With a one-line reason. */
    public SlowStartException(String message) {
      super(message);
    }
  }

  /**
   * Finds bwrap on {@code path} and checks that it can create its namespaces here (it cannot in
   * many containers, or where unprivileged user namespaces are disabled).
   *
   * @throws IllegalStateException with a one-line reason if it is missing or does not work; a
   *     {@link SlowStartException} if it did not start in time
   */
  public static Bubblewrap probe(String path, Path workspace, boolean network) {
    String bwrap = ProcessGroups.which("bwrap", path);
    if (bwrap == null) {
      throw new IllegalStateException("bwrap is not on the agent's PATH (Debian/Ubuntu: apt-get install bubblewrap)");
    }
    String env = ProcessGroups.which("env", path);
    if (env == null) {
      throw new IllegalStateException("--isolation bwrap needs env(1) on the agent's PATH (Debian/Ubuntu: coreutils)");
    }
    Path scratch;
    try {
      scratch = Files.createTempDirectory("sandbox-agent-tmp-", PosixFilePermissions.asFileAttribute(
          PosixFilePermissions.fromString("rwx------")));
      Files.createDirectory(scratch.resolve("tmp"));
      Files.createDirectory(scratch.resolve("var-tmp"));
    } catch (IOException e) {
      throw new IllegalStateException("cannot create the sandbox's /tmp under " + System.getProperty("java.io.tmpdir")
          + ": " + e, e);
    }
    SharedNetwork shared = null;
    try {
      shared = network ? null : SharedNetwork.start(bwrap, path);
      Bubblewrap b = new Bubblewrap(bwrap, env, workspace, network, shared, scratch);
      b.check();
      return b;
    } catch (RuntimeException e) {
      if (shared != null) {
        shared.close();
      }
      deleteTree(scratch);
      throw e;
    }
  }

  /** Runs {@code true} the way every command will run. */
  private void check() {
    List<String> cmd = new ArrayList<>(prefix(workspace));
    cmd.add("true");
    try {
      Process p = new ProcessBuilder(cmd).directory(workspace.toFile()).redirectErrorStream(true)
          .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
      byte[] out = p.getInputStream().readNBytes(2048);
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new SlowStartException(bwrap + " did not run 'true' within 10 s");
      }
      if (p.exitValue() != 0) {
        String why = new String(out, StandardCharsets.UTF_8).strip().replace('\n', ' ');
        throw new IllegalStateException(bwrap + " cannot create its sandbox here (exit " + p.exitValue() + ": "
            + (why.isEmpty() ? "no message" : why) + ")");
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot run " + bwrap + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while checking " + bwrap, e);
    }
  }

  /** Whether commands may use the host's network. */
  public boolean network() {
    return network;
  }

  /** How a command sees a path, compared with the host. */
  enum View {
    /** As the host does: the workspace and the system directories bound read-only. */
    HOST,
    /** The sandbox's own: its /tmp, /var/tmp, /proc and /dev. */
    OWN,
    /** Not at all: no file of the host's there, only the directories mounts need. */
    ABSENT
  }

  /**
   * How a command sees {@code p}. The agent answers a caller from what the host holds only for
   * {@link View#HOST}: elsewhere that would tell of host paths the sandbox hides.
   */
  View view(Path p) {
    Path n = p.toAbsolutePath().normalize();
    if (n.startsWith(workspace) || SYSTEM_DIRS.stream().anyMatch(d -> n.startsWith(d))) {
      return View.HOST;
    }
    return OWN_DIRS.stream().anyMatch(d -> n.startsWith(d)) ? View.OWN : View.ABSENT;
  }

  private static final List<String> OWN_DIRS = List.of("/tmp", "/var/tmp", "/proc", "/dev");

  /**
   * Binds a host directory read-only, at its own path, into the sandbox of every command started
   * from now on (the egress CA bundle's directory); it lies over the sandbox's own /tmp.
   */
  synchronized void bindReadOnly(Path dir) {
    List<String> m = new ArrayList<>(mounts);
    m.addAll(List.of("--ro-bind", dir.toString(), dir.toString()));
    mounts = List.copyOf(m);
  }

  /** What goes between {@code setsid} and the command's argv, for a command that starts in {@code cwd}. */
  List<String> prefix(Path cwd) {
    List<String> cmd = new ArrayList<>();
    cmd.add(env);
    cmd.add("--ignore-signal=" + IGNORED);
    if (sharedNetwork != null) {
      relay.ensureEgress(); // the holder may have been replaced: the new namespace needs its proxy port
      cmd.addAll(sharedNetwork.prefix());
    }
    cmd.add(bwrap);
    cmd.addAll(mounts);
    cmd.add("--chdir");
    cmd.add(cwd.toString());
    cmd.add("--");
    cmd.add(env);
    cmd.add("--default-signal");
    return cmd;
  }

  private static List<String> mounts(Path workspace, boolean network, Path scratch) {
    // --cap-drop ALL: an agent running as root would otherwise hand its commands nearly every
    // capability (CAP_MKNOD alone opens the host's disks through a device node in the workspace).
    // No --unshare-net: without network, nsenter has put the command in the shared namespace.
    List<String> args = new ArrayList<>(List.of(
        "--cap-drop", "ALL", "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--hostname", "sandbox"));
    for (String dir : SYSTEM_DIRS) {
      Path p = Path.of(dir);
      if (Files.isSymbolicLink(p)) {
        try {
          args.addAll(List.of("--symlink", Files.readSymbolicLink(p).toString(), dir));
        } catch (IOException e) {
          // unreadable link: leave it out
        }
      } else if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
        args.addAll(List.of("--ro-bind", dir, dir));
      }
    }
    if (network) {
      // /etc/resolv.conf often points into /run (systemd-resolved, resolvconf).
      args.addAll(List.of("--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve",
          "--ro-bind-try", "/run/resolvconf", "/run/resolvconf"));
    }
    args.addAll(List.of("--proc", "/proc", "--dev", "/dev", "--bind", scratch.resolve("tmp").toString(), "/tmp",
        "--bind", scratch.resolve("var-tmp").toString(), "/var/tmp"));
    // After /tmp: a workspace under /tmp is bound on top of the sandbox's own.
    args.addAll(List.of("--bind", workspace.toString(), workspace.toString()));
    return List.copyOf(args);
  }

  /**
   * Starts {@code pb} on one of {@link #spawner}'s threads and waits for it, interruptibly for
   * neither side: a caller interrupted half-way would leave a running process nobody tracks.
   */
  Process start(ProcessBuilder pb) throws IOException {
    return start(pb::start);
  }

  /** Runs a spawn ({@link NativeSpawner} or the JDK's) on one of {@link #spawner}'s threads, as above. */
  Process start(java.util.concurrent.Callable<Process> spawn) throws IOException {
    Future<Process> started;
    try {
      started = spawner.submit(spawn);
    } catch (RejectedExecutionException e) {
      throw new IOException("the agent is shutting down", e);
    }
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return started.get();
        } catch (InterruptedException e) {
          interrupted = true;
        } catch (ExecutionException e) {
          Throwable cause = e.getCause();
          if (cause instanceof IOException) {
            throw (IOException) cause;
          }
          if (cause instanceof RuntimeException) {
            throw (RuntimeException) cause;
          }
          if (cause instanceof Error) {
            throw (Error) cause;
          }
          throw new IOException(cause);
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** The relay into the sandbox's own network namespace, or null when commands use the agent's network. */
  NetnsRelay relay() {
    return relay;
  }

  /** The agent's directory holding the sandbox's {@code /tmp} and {@code /var/tmp}. */
  Path scratch() {
    return scratch;
  }

  /** Stops the shared network's holder and removes the sandbox's {@code /tmp}; commands must have ended. */
  void close() {
    spawner.shutdownNow();
    if (relay != null) {
      relay.close();
    }
    if (sharedNetwork != null) {
      sharedNetwork.close();
    }
    deleteTree(scratch);
  }

  /** Best effort: what commands left in {@code /tmp} may include directories without permissions. */
  private static void deleteTree(Path root) {
    if (!Trees.deleteQuietly(root)) {
      log.debug("could not remove all of {}", root); // left for the host's tmp cleaner
    }
  }

  @Override
  public String toString() {
    return "bwrap(" + bwrap + ", workspace " + workspace + ", /tmp " + scratch.resolve("tmp") + ", network "
        + (network ? "on" : "off, " + sharedNetwork) + ")";
  }
}
