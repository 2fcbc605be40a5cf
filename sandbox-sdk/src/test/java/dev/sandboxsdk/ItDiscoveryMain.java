package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
/**
 * Run by {@link AgentDiscoveryIT} in a child JVM whose class path has the SDK jar but not the
 * agent: starts a local sandbox with no configuration and prints what an exec in it printed,
 * or the error.
 */
final class ItDiscoveryMain {
  private ItDiscoveryMain() {}

  public static void main(String[] args) {
    try (LocalSandbox sandbox = LocalSandbox.start()) {
      System.out.println("EXEC " + sandbox.exec("echo found the agent").stdout().strip());
    } catch (SandboxException e) {
      System.out.println("ERROR " + e.getMessage());
    }
  }
}
