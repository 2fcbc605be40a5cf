package dev.sandboxsdk;

/**
 * How a {@link LocalSandbox}'s commands are kept apart from the host, set with
 * {@link LocalSandbox.Builder#isolation(Isolation)}; {@link LocalSandbox#isolation()} tells which
 * is in force ({@link #ISOLATED} or {@link #NONE}).
 *
 * <p>Isolated, every command runs in its own <a href="https://github.com/containers/bubblewrap">bubblewrap</a>
 * ({@code bwrap}) sandbox: the system directories ({@code /usr}, {@code /etc}, {@code /bin},
 * {@code /lib*}, {@code /opt}) are read-only, the workspace and a private {@code /tmp} are
 * writable, and the rest of the host's files (home directories, other workspaces, {@code /root})
 * do not exist; it has its own PID namespace with a fresh {@code /proc} (it sees its own processes
 * only, not the agent or the host's), its own IPC and UTS namespaces, and no network unless
 * {@link LocalSandbox.Builder#network(boolean) network(true)}. Commands still run as your OS user,
 * with {@code HOME} set to the workspace. When a command's first process exits, whatever it left
 * running dies with its namespace, and each command has its own loopback: a server started by
 * one command is not reachable from another.
 */
public enum Isolation {
  /** Bubblewrap where it works, else no isolation with one warning in the log. */
  ISOLATED,
  /**
   * No isolation: commands see the host's files, processes and network as your JVM does (the
   * default for now: isolated, each command has a network namespace of its own, so a server one
   * command starts cannot be reached from another command; docs/user-guide.md, section 12).
   */
  NONE,
  /** Bubblewrap or nothing: {@link LocalSandbox.Builder#start()} fails if it cannot be used. */
  REQUIRED
}
