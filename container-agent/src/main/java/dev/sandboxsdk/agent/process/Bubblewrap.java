package dev.sandboxsdk.agent.process;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs each command in its own bubblewrap ({@code bwrap}) sandbox ({@code --isolation bwrap}): a
 * mount namespace in which the system directories are read-only, the workspace and a private
 * {@code /tmp} are writable and the rest of the host's files do not exist; new PID, IPC and UTS
 * namespaces with a fresh {@code /proc}; a new network namespace (loopback only) unless the
 * network is on.
 *
 * <p>How it fits the agent's process groups: the command line is
 * {@code setsid env --ignore-signal=... bwrap ... -- env --default-signal CMD}. The outer
 * {@code bwrap} is the process the agent started (pid == process group id, as without
 * isolation) and stays in that group together with the namespace's init and every process of the
 * command, so a signal to the group reaches the command. The outer {@code bwrap} ignores every
 * signal it can, so that it lives until the command has finished and reports the command's own
 * exit status (128 + signal number when a signal ended it); inside, {@code env --default-signal}
 * gives the command default handling back before it starts. SIGKILL ends the outer {@code bwrap}
 * and, through {@code --die-with-parent}, the whole namespace.
 *
 * <p>When the command's first process exits, the namespace ends and the kernel kills whatever the
 * command left behind in it (daemons started with {@code &}, {@code nohup}, {@code setsid}): a
 * command's processes never outlive it. A long-running server therefore belongs in a background
 * process ({@code startProcess}), which is killed with its namespace.
 */
public final class Bubblewrap {
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
  private final List<String> mounts;

  private Bubblewrap(String bwrap, String env, Path workspace, boolean network) {
    this.bwrap = bwrap;
    this.env = env;
    this.workspace = workspace;
    this.network = network;
    this.mounts = mounts(workspace, network);
  }

  /**
   * Finds bwrap on {@code path} and checks that it can create its namespaces here (it cannot in
   * many containers, or where unprivileged user namespaces are disabled).
   *
   * @throws IllegalStateException with a one-line reason if it is missing or does not work
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
    Bubblewrap b = new Bubblewrap(bwrap, env, workspace, network);
    List<String> cmd = new ArrayList<>(b.prefix(workspace));
    cmd.add("true");
    try {
      Process p = new ProcessBuilder(cmd).directory(workspace.toFile()).redirectErrorStream(true)
          .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
      byte[] out = p.getInputStream().readNBytes(2048);
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException(bwrap + " did not run 'true' within 10 s");
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
    return b;
  }

  /** Whether commands may use the host's network. */
  public boolean network() {
    return network;
  }

  /** What goes between {@code setsid} and the command's argv, for a command that starts in {@code cwd}. */
  List<String> prefix(Path cwd) {
    List<String> cmd = new ArrayList<>();
    cmd.add(env);
    cmd.add("--ignore-signal=" + IGNORED);
    cmd.add(bwrap);
    cmd.addAll(mounts);
    cmd.add("--chdir");
    cmd.add(cwd.toString());
    cmd.add("--");
    cmd.add(env);
    cmd.add("--default-signal");
    return cmd;
  }

  private static List<String> mounts(Path workspace, boolean network) {
    // --cap-drop ALL: an agent running as root would otherwise hand its commands nearly every
    // capability (CAP_MKNOD alone opens the host's disks through a device node in the workspace).
    List<String> args = new ArrayList<>(List.of(
        "--cap-drop", "ALL", "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--hostname", "sandbox"));
    if (!network) {
      args.add("--unshare-net");
    }
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
    args.addAll(List.of("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp"));
    // After /tmp: a workspace under /tmp is bound on top of the private tmpfs.
    args.addAll(List.of("--bind", workspace.toString(), workspace.toString()));
    return List.copyOf(args);
  }

  @Override
  public String toString() {
    return "bwrap(" + bwrap + ", workspace " + workspace + ", network " + (network ? "on" : "off") + ")";
  }
}
