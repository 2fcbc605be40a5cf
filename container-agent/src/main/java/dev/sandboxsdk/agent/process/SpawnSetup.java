package dev.sandboxsdk.agent.process;

import dev.sandboxsdk.agent.AgentConfig;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides, once at start-up, how commands will be spawned: the command user, bubblewrap
 * isolation, the native spawner, and the launcher prefix every command gets. Each probe either
 * answers or fails the start with a one-line reason (or, where a fallback is allowed, warns once).
 */
final class SpawnSetup {
  /** Logs as ProcessManager did before the split, so filters and the documented log lines hold. */
  private static final Logger log = LoggerFactory.getLogger(ProcessManager.class);
  private static final Path PASSWD = Path.of("/etc/passwd");

  private SpawnSetup() {
  }

  /**
   * Resolves {@code --command-user}, checks that the agent can switch to it (the way every
   * command will, including env's change of directory) and that it can use the workspace.
   *
   * @throws IllegalStateException with a one-line reason
   */
  static CommandUser commandUser(AgentConfig config, String path, String env, boolean workspaceCreated) {
    CommandUser user = CommandUser.resolve(config.commandUser(), PASSWD, ProcessGroups.which("setpriv", path));
    String grep = ProcessGroups.which("grep", path);
    if (env == null || grep == null) {
      throw new IllegalStateException("--command-user needs env(1) and grep(1) on the agent's PATH"
          + " (Debian/Ubuntu: coreutils, grep)");
    }
    user.probe(List.of(env, "--chdir=/"), grep);
    Path ws = config.workspace();
    if (workspaceCreated) {
      user.adopt(ws);
    }
    if (!user.canWrite(ws)) {
      log.warn("--command-user {}: that user cannot write the workspace {}; commands that write there will fail"
          + " (give it to them: chown {}:{} {})", user, ws, user.uid(), user.gid(), ws);
    }
    log.info("commands run as {}, without capabilities", user);
    return user;
  }

  /**
   * The bubblewrap sandbox for {@code --isolation bwrap} (which fails the start if it cannot run)
   * and {@code auto} (which falls back to none with one warning, telling {@code unavailable}
   * why, where bwrap is missing or cannot work here; but fails the start when bwrap merely started
   * too slowly), or null.
   */
  static Bubblewrap bubblewrap(AgentConfig config, String path, Consumer<String> unavailable) {
    switch (config.isolation()) {
      case "bwrap": {
        Bubblewrap b;
        try {
          b = Bubblewrap.probe(path, config.workspace(), config.isolationNetwork());
        } catch (IllegalStateException e) {
          throw new IllegalStateException("--isolation bwrap: " + e.getMessage(), e);
        }
        log.info("commands run isolated by {}", b);
        return b;
      }
      case "auto":
        try {
          Bubblewrap b = Bubblewrap.probe(path, config.workspace(), config.isolationNetwork());
          log.info("commands run isolated by {}", b);
          return b;
        } catch (Bubblewrap.SlowStartException e) {
          throw new IllegalStateException("--isolation auto: " + e.getMessage() + " (bwrap works here but started"
              + " too slowly, which does not make no isolation acceptable: start again, or ask for --isolation none)",
              e);
        } catch (IllegalStateException e) {
          log.warn("--isolation auto: {}; commands run without isolation", e.getMessage());
          unavailable.accept(e.getMessage());
          return null;
        }
      default:
        return null;
    }
  }

  /** The native spawner for {@code --spawn auto|native}, or null for the JDK's. */
  static NativeSpawner nativeSpawner(String mode) {
    if (mode.equals("jdk")) {
      log.info("commands are started by the JDK (--spawn jdk)");
      return null;
    }
    try {
      NativeSpawner s = NativeSpawner.start();
      log.info("commands are started by posix_spawn (native spawn)");
      return s;
    } catch (IllegalStateException | LinkageError e) { // LinkageError: JNA is not on the classpath
      String why = e instanceof LinkageError ? "native spawn is unavailable: " + e : e.getMessage();
      if (mode.equals("native")) {
        throw new IllegalStateException("--spawn native: " + why, e);
      }
      log.warn("{}; commands are started by the JDK", why);
      return null;
    }
  }

  /**
   * Children inherit ignored signals (an agent started from a script with {@code &} ignores
   * SIGINT, and so would every command). If any standard signal is ignored, commands are started
   * through {@code env --default-signal}, which restores default handling before the exec.
   */
  static List<String> launcher(String setsid, String env) {
    long ignored = ProcessGroups.ignoredSignals() & 0x7FFFFFFFL; // signals 1..31 are bits 0..30
    if (ignored == 0) {
      return List.of(setsid);
    }
    if (env != null) {
      try {
        Process probe = new ProcessBuilder(env, "--default-signal", "true")
            .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        if (probe.waitFor(5, TimeUnit.SECONDS) && probe.exitValue() == 0) {
          log.info("the agent was started with ignored signals (mask {}); commands get default signal handling back",
              Long.toHexString(ignored));
          return List.of(setsid, env, "--default-signal");
        }
      } catch (IOException e) {
        // fall through to the warning
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    log.warn("the agent was started with ignored signals (mask {}) and env(1) cannot reset them;"
        + " commands inherit them", Long.toHexString(ignored));
    return List.of(setsid);
  }
}
