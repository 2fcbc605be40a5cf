package dev.sandboxsdk.local;

import dev.sandboxsdk.Sandbox;
/**
 * How a {@link LocalSandbox}'s commands are kept apart from the host, set with
 * {@link LocalSandbox.Builder#isolation(Isolation)} (default {@link #ISOLATED});
 * {@link LocalSandbox#isolation()} tells which is in force ({@link #ISOLATED} or {@link #NONE}).
 *
 * <p>Isolated, every command runs in its own <a href="https://github.com/containers/bubblewrap">bubblewrap</a>
 * ({@code bwrap}) sandbox: the system directories ({@code /usr}, {@code /etc}, {@code /bin},
 * {@code /lib*}, {@code /opt}) are read-only, the workspace and the sandbox's own {@code /tmp} and
 * {@code /var/tmp} (shared by its commands, removed with it) are writable, and the rest of the
 * host's files (home directories, other workspaces, {@code /root}) do not exist; it has its own
 * PID namespace with a fresh {@code /proc} (it sees its own processes only, not the agent or the
 * host's), its own IPC and UTS namespaces. Without {@link LocalSandbox.Builder#network(boolean)
 * network(true)} the sandbox's commands share one network namespace with only a loopback: a server
 * one command starts (with {@link Sandbox#startProcess}) is reachable from the next on
 * {@code 127.0.0.1}, while the internet and the host's own listeners are not. Commands still run
 * as your OS user, with {@code HOME} set to the workspace. When a command's first process exits,
 * whatever it left running dies with its PID namespace.
 */
public enum Isolation {
  /** Bubblewrap where it works, else no isolation with one warning in the log (the default). */
  ISOLATED,
  /** No isolation: commands see the host's files, processes and network as your JVM does. */
  NONE,
  /** Bubblewrap or nothing: {@link LocalSandbox.Builder#start()} fails if it cannot be used. */
  REQUIRED
}
