package dev.sandboxsdk.mcp.internal;

import java.util.Locale;

/** Where the server's sandboxes run; {@link #wireName()} is the {@code mode} field of a sandbox record. */
public enum SandboxMode {
  /** Each sandbox is a {@code LocalSandbox}: an agent JVM on this machine, as this OS user. */
  LOCAL,
  /** Each sandbox is a container made by the container provider ({@code --provider container}). */
  CONTAINER,
  /** Each sandbox is a pod made by the Kubernetes provider ({@code --provider kubernetes}). */
  KUBERNETES,
  /** One sandbox, {@code default}, on the agent {@code --agent-url} names. */
  REMOTE;

  /**
   * The name in tool results and on the command line: {@code local}, {@code container},
   * {@code kubernetes}, {@code remote}.
   */
  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }
}
