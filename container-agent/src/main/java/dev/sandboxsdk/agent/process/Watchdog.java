package dev.sandboxsdk.agent.process;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A small shell process, in a session of its own, that outlives the agent and cleans up after it
 * if the agent dies without stopping its processes (SIGKILL, the kernel's OOM killer, a JVM
 * crash). It reads the agent's pipe on its standard input: the agent writes {@code +PGID} for
 * every process group it starts and {@code -PGID} once the group is gone; on orderly shutdown it
 * writes {@code q} and the watchdog exits quietly. If the pipe reaches end of file without
 * {@code q}, the agent is gone: the watchdog SIGKILLs every registered group and every process
 * whose environment carries this run's {@link CommandEnvironment#RUN_VAR} marker (found in
 * {@code /proc/<pid>/environ}), three rounds to catch processes forked meanwhile, and exits.
 *
 * <p>With a command user ({@code --command-user}) the watchdog runs as root like the agent,
 * so commands can neither signal nor read it, but it cannot read their environ either (no
 * CAP_DAC_READ_SEARCH): its sweep instead kills every process whose real uid is the command
 * user's, found in {@code /proc/<pid>/status}, which anyone may read.
 *
 * <p>Needs only {@code sh}, {@code grep}, {@code tr}, {@code sleep} (and {@code chmod}, {@code rm} for a directory). The JDK closes every
 * other descriptor in the child, so commands never hold the pipe and cannot keep it open.
 */
final class Watchdog implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Watchdog.class);

  /**
   * $1: the grep pattern matching this run's marker in an environ file; $2: the command user's
   * uid, or empty to sweep by marker; $3: a directory of the agent's to remove after the sweep
   * (an isolated sandbox's {@code /tmp}), or empty.
   */
  static final String SCRIPT = String.join("\n",
      "trap '' HUP INT TERM PIPE",
      "groups=' '",
      "while IFS= read -r line; do",
      "  case $line in",
      "    q) exit 0 ;;",
      "    +*) groups=\"$groups${line#+} \" ;;",
      "    -*) rest=' '; for g in $groups; do [ \"$g\" = \"${line#-}\" ] || rest=\"$rest$g \"; done; groups=$rest ;;",
      "  esac",
      "done",
      "for round in 1 2 3; do",
      "  for g in $groups; do kill -KILL -\"$g\" 2>/dev/null; done",
      "  if [ -n \"$2\" ]; then",
      "    pids=$(grep -l -E \"^Uid:[[:space:]]+$2[[:space:]]\" /proc/[0-9]*/status 2>/dev/null)",
      "  else",
      "    pids=$(grep -lz -e \"$1\" /proc/[0-9]*/environ 2>/dev/null | tr '\\000' ' ')",
      "  fi",
      "  for f in $pids; do p=${f#/proc/}; p=${p%/*}; [ \"$p\" -gt 1 ] && kill -KILL \"$p\" 2>/dev/null; done",
      "  sleep 0.1",
      "done",
      "if [ -n \"$3\" ]; then chmod -R u+rwx -- \"$3\" 2>/dev/null; rm -rf -- \"$3\"; fi",
      "");

  private final Process process;
  private final OutputStream pipe;
  /**
   * Lines for the watchdog, written by one thread of their own: a watchdog that stops reading
   * (a command could SIGSTOP it: it runs as the same user) must never block a spawn.
   */
  private final java.util.concurrent.BlockingQueue<String> lines = new java.util.concurrent.LinkedBlockingQueue<>(MAX_QUEUED);
  /**
   * Lines waiting for a watchdog that does not read (stopped, or gone without the pipe breaking):
   * past this many the agent gives it up rather than hold every spawn's line in memory for ever.
   */
  private static final int MAX_QUEUED = 100_000;
  private volatile boolean givenUp;
  private static final String CLOSE = "q\n";

  private Watchdog(Process process) {
    this.process = process;
    this.pipe = process.getOutputStream();
    Thread writer = new Thread(this::writeLines, "agent-watchdog-writer");
    writer.setDaemon(true);
    writer.start();
  }

  /**
   * Starts the watchdog for the run {@code runId}, or returns null (with a warning) if it cannot
   * be started: the agent then works as before, without a backstop for its own death.
   */
  static Watchdog start(String setsid, String runId, String path, CommandUser commandUser, java.nio.file.Path scratch) {
    String pattern = "^" + CommandEnvironment.RUN_VAR + "=" + runId + "\\.";
    String uid = commandUser == null ? "" : String.valueOf(commandUser.uid());
    ProcessBuilder pb = new ProcessBuilder(setsid, "/bin/sh", "-c", SCRIPT, "sandbox-agent-watchdog", pattern, uid,
        scratch == null ? "" : scratch.toString())
        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .redirectError(ProcessBuilder.Redirect.DISCARD)
        .directory(new File("/"));
    Map<String, String> env = pb.environment();
    env.clear();
    env.put("PATH", path == null ? ProcessGroups.DEFAULT_PATH : path);
    env.put("LC_ALL", "C");
    try {
      Watchdog w = new Watchdog(pb.start());
      log.debug("watchdog pid {} guards run {}", w.process.pid(), runId);
      return w;
    } catch (IOException e) {
      log.warn("cannot start the watchdog that stops commands if the agent is killed: {}", e.toString());
      return null;
    }
  }

  /** Tells the watchdog about a new process group. */
  void register(long pgid) {
    send("+" + pgid + "\n");
  }

  /** Tells the watchdog a process group is gone (its number may be reused by a stranger). */
  void forget(long pgid) {
    send("-" + pgid + "\n");
  }

  private void send(String line) {
    if (givenUp) {
      return;
    }
    if (!lines.offer(line)) {
      givenUp = true;
      lines.clear();
      log.warn("the watchdog (pid {}) has not read {} lines; giving it up: commands are not stopped"
          + " if the agent is killed", process.pid(), MAX_QUEUED);
      process.destroyForcibly();
      lines.offer(CLOSE); // ends the writer thread
    }
  }

  private void writeLines() {
    boolean broken = false;
    while (true) {
      String line;
      try {
        line = lines.take();
      } catch (InterruptedException e) {
        return;
      }
      if (!broken) {
        try {
          pipe.write(line.getBytes(StandardCharsets.US_ASCII));
          pipe.flush();
        } catch (IOException e) {
          broken = true;
          log.warn("the watchdog (pid {}) is gone; commands are not stopped if the agent is killed: {}",
              process.pid(), e.toString());
        }
      }
      if (line.equals(CLOSE)) {
        try {
          pipe.close();
        } catch (IOException ignored) {
          // it is gone already
        }
        return;
      }
    }
  }

  /**
   * Orderly shutdown: the agent has stopped its processes itself; the watchdog exits without a
   * sweep. Waits up to 2 s for the line to be written.
   */
  @Override
  public void close() {
    send(CLOSE);
    try {
      process.waitFor(2, java.util.concurrent.TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
