package dev.sandboxsdk.agent.process;

import com.sun.jna.Memory;
import com.sun.jna.StringArray;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts commands with glibc's {@code posix_spawn} as leaders of their own session and process
 * group ({@code POSIX_SPAWN_SETSID}), so no {@code setsid(1)} has to be executed first: one
 * {@code execve} per command instead of two. glibc spawns with {@code clone(CLONE_VM|CLONE_VFORK)}
 * (no copy of the JVM's page tables), closes the agent's descriptors with one
 * {@code close_range} instead of the JDK's one-by-one loop, and restores default handling of
 * every signal and an empty signal mask in the child ({@code env --default-signal} did that
 * before).
 *
 * <p>Each process is reaped by the {@link EventLoop} through its pidfd, so neither a reaper
 * thread per process (the JDK's way) nor a SIGCHLD handler is needed. Thread-safe.
 */
final class NativeSpawner {
  private static final Logger log = LoggerFactory.getLogger(NativeSpawner.class);

  private final EventLoop loop;

  private NativeSpawner(EventLoop loop) {
    this.loop = loop;
  }

  /**
   * Loads the native functions, starts the event loop and spawns {@code true} as a self-test.
   *
   * @throws IllegalStateException with the reason when the native spawn cannot be used here
   */
  static NativeSpawner start() {
    String why = Libc.load();
    if (why != null) {
      throw new IllegalStateException(why);
    }
    EventLoop loop = new EventLoop();
    NativeSpawner spawner = new NativeSpawner(loop);
    try {
      Path root = Path.of("/");
      Process p = spawner.spawn(List.of("true"), Map.of("PATH", ProcessGroups.DEFAULT_PATH), root, false,
          Path.of("/dev/null"), Path.of("/dev/null"));
      if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException("the native spawn's self-test ('true') did not exit with 0");
      }
      return spawner;
    } catch (IOException | RuntimeException e) {
      loop.close();
      throw new IllegalStateException("the native spawn's self-test failed: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      loop.close();
      throw new IllegalStateException("interrupted during the native spawn's self-test", e);
    }
  }

  EventLoop loop() {
    return loop;
  }

  /**
   * Starts {@code argv} in {@code cwd} with exactly {@code env}, stdout and stderr opened on the
   * given paths (FIFOs the agent holds open, so the opens do not block) and stdin a pipe or
   * /dev/null. The program is looked up in the command's own PATH, as {@code setsid(1)}'s
   * execvp did, and a file without a {@code #!} line is run by /bin/sh, as execvp does.
   *
   * @throws IOException "Cannot run program ...: error=N, reason", the JDK's wording
   */
  NativeProcess spawn(List<String> argv, Map<String, String> env, Path cwd, boolean stdinPipe, Path stdout,
      Path stderr) throws IOException {
    return spawn(argv, env, cwd, stdinPipe, stdout, stderr, null);
  }

  /**
   * Starts {@code argv} on the terminal whose slave is {@code tty}: stdin, stdout and stderr are the
   * slave, and since glibc's child calls setsid before it runs the file actions, opening the slave
   * (without O_NOCTTY) makes it the new session's controlling terminal, with the process's group
   * in the foreground.
   */
  NativeProcess spawnOnTerminal(List<String> argv, Map<String, String> env, Path cwd, String tty) throws IOException {
    return spawn(argv, env, cwd, false, null, null, tty);
  }

  private NativeProcess spawn(List<String> argv, Map<String, String> env, Path cwd, boolean stdinPipe, Path stdout,
      Path stderr, String tty) throws IOException {
    String program = argv.get(0);
    String path = resolve(program, cwd, env.get("PATH"));
    String[] envp = new String[env.size()];
    int i = 0;
    for (Map.Entry<String, String> e : env.entrySet()) {
      envp[i++] = e.getKey() + "=" + e.getValue();
    }
    int[] stdinFds = {-1, -1};
    if (stdinPipe && Libc.pipe2(stdinFds, Libc.O_CLOEXEC) != 0) {
      throw new IOException("Cannot run program \"" + program + "\": error=" + Libc.errno() + ", "
          + Libc.strerror(Libc.errno()));
    }
    int[] pid = new int[1];
    int rc;
    try (Memory actions = new Memory(Libc.OPAQUE_SIZE);
        Memory attr = new Memory(Libc.OPAQUE_SIZE);
        Memory sigs = new Memory(Libc.OPAQUE_SIZE)) {
      check(Libc.posix_spawn_file_actions_init(actions), "posix_spawn_file_actions_init");
      check(Libc.posix_spawnattr_init(attr), "posix_spawnattr_init");
      try {
        if (tty != null) {
          check(Libc.posix_spawn_file_actions_addopen(actions, 0, tty, Libc.O_RDWR, 0), "addopen");
          check(Libc.posix_spawn_file_actions_adddup2(actions, 0, 1), "adddup2");
          check(Libc.posix_spawn_file_actions_adddup2(actions, 0, 2), "adddup2");
        } else {
          if (stdinPipe) {
            check(Libc.posix_spawn_file_actions_adddup2(actions, stdinFds[0], 0), "adddup2");
          } else {
            check(Libc.posix_spawn_file_actions_addopen(actions, 0, "/dev/null", Libc.O_RDONLY, 0), "addopen");
          }
          check(Libc.posix_spawn_file_actions_addopen(actions, 1, stdout.toString(), Libc.O_WRONLY, 0), "addopen");
          check(Libc.posix_spawn_file_actions_addopen(actions, 2, stderr.toString(), Libc.O_WRONLY, 0), "addopen");
        }
        check(Libc.posix_spawn_file_actions_addchdir_np(actions, cwd.toString()), "addchdir_np");
        check(Libc.posix_spawn_file_actions_addclosefrom_np(actions, 3), "addclosefrom_np");
        check(Libc.posix_spawnattr_setflags(attr,
            (short) (Libc.POSIX_SPAWN_SETSID | Libc.POSIX_SPAWN_SETSIGMASK | Libc.POSIX_SPAWN_SETSIGDEF)), "setflags");
        Libc.sigemptyset(sigs);
        check(Libc.posix_spawnattr_setsigmask(attr, sigs), "setsigmask");
        Libc.sigfillset(sigs);
        check(Libc.posix_spawnattr_setsigdefault(attr, sigs), "setsigdefault");
        StringArray cArgv = new StringArray(argv.toArray(new String[0]), "UTF-8");
        StringArray cEnvp = new StringArray(envp, "UTF-8");
        rc = Libc.posix_spawn(pid, path, actions, attr, cArgv, cEnvp);
        if (rc == Libc.ENOEXEC) {
          List<String> sh = new ArrayList<>(argv.size() + 1);
          sh.add("/bin/sh");
          sh.add(path);
          sh.addAll(argv.subList(1, argv.size()));
          rc = Libc.posix_spawn(pid, "/bin/sh", actions, attr, new StringArray(sh.toArray(new String[0]), "UTF-8"),
              cEnvp);
        }
      } finally {
        Libc.posix_spawn_file_actions_destroy(actions);
        Libc.posix_spawnattr_destroy(attr);
        if (stdinPipe) {
          Libc.close(stdinFds[0]);
        }
      }
    } catch (IOException | RuntimeException e) {
      if (stdinPipe) {
        Libc.close(stdinFds[1]);
      }
      throw e;
    }
    if (rc != 0) {
      if (stdinPipe) {
        Libc.close(stdinFds[1]);
      }
      throw new IOException("Cannot run program \"" + program + "\": error=" + rc + ", " + Libc.strerror(rc));
    }
    NativeProcess process = new NativeProcess(pid[0], stdinFds[1]);
    watchExit(process);
    return process;
  }

  /** Reaps the process as soon as it exits: its pidfd becomes readable then. */
  private void watchExit(NativeProcess process) {
    int pid = (int) process.pid();
    int pidfd = (int) Libc.syscall(Libc.SYS_PIDFD_OPEN, pid, 0);
    if (pidfd < 0) {
      // Not expected on the kernels glibc 2.34 runs on (5.3+); wait the blocking way instead.
      log.warn("pidfd_open({}) failed: {}; waiting for it on a thread", pid, Libc.strerror(Libc.errno()));
      reapOnThread(process);
      return;
    }
    long[] key = new long[1];
    synchronized (key) { // the handler may run before add() has returned the key
      try {
        key[0] = loop.add(pidfd, events -> {
          synchronized (key) {
            if (reap(process, Libc.WNOHANG)) {
              loop.remove(key[0], pidfd);
              Libc.close(pidfd);
            }
          }
        });
      } catch (IllegalStateException e) { // epoll_ctl refused (ENOMEM, ENOSPC): never leave a process unwatched
        Libc.close(pidfd);
        log.warn("{}; waiting for process {} on a thread", e.getMessage(), pid);
        reapOnThread(process);
      }
    }
  }

  /** The fallback without a pidfd in the loop: one small thread blocked in waitpid. */
  private void reapOnThread(NativeProcess process) {
    Thread t = new Thread(null, () -> reap(process, 0), "agent-reap-" + process.pid(), 64 * 1024);
    t.setDaemon(true);
    t.start();
  }

  /** Collects the exit status; false if the process has not exited after all (WNOHANG). */
  private static boolean reap(NativeProcess process, int options) {
    int[] status = new int[1];
    while (true) {
      int r = Libc.waitpid((int) process.pid(), status, options);
      if (r > 0) {
        process.exited(status[0]);
        return true;
      }
      if (r == 0) {
        return false;
      }
      int errno = Libc.errno();
      if (errno != Libc.EINTR) {
        // ECHILD: someone else reaped it. Its status is lost; report the way a shell reports a
        // process it cannot account for.
        log.warn("waitpid({}) failed: {}", process.pid(), Libc.strerror(errno));
        process.exited(255 << 8);
        return true;
      }
    }
  }

  /**
   * The file execvp would run for {@code program}: itself if it names a path, else the first
   * executable regular file of that name in {@code pathVar} (directories relative to {@code cwd}),
   * else the bare name, which then fails with ENOENT.
   */
  static String resolve(String program, Path cwd, String pathVar) {
    if (program.contains("/") || program.isEmpty()) {
      return program;
    }
    for (String dir : (pathVar == null ? ProcessGroups.DEFAULT_PATH : pathVar).split(":", -1)) {
      Path p = cwd.resolve(dir.isEmpty() ? "." : dir).resolve(program);
      if (Files.isRegularFile(p) && Files.isExecutable(p)) {
        return p.toString();
      }
    }
    return program;
  }

  private static void check(int rc, String what) throws IOException {
    if (rc != 0) {
      throw new IOException("Cannot run program: error=" + rc + ", " + what + ": " + Libc.strerror(rc));
    }
  }
}
