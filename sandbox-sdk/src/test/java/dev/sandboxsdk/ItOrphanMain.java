package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Run by {@link LocalSandboxIT} in a child JVM: starts a local sandbox and a background
 * {@code sleep 300}, prints one line {@code ORPHAN agentPid=<pid> sleepPid=<pid> workspace=<dir>},
 * then either sleeps until it is killed ({@code kill}, the default) or exits at once without
 * closing the sandbox ({@code exit}). A second argument is a workspace to use instead of a
 * temporary one.
 */
final class ItOrphanMain {
  private ItOrphanMain() {}

  public static void main(String[] args) throws Exception {
    LocalSandbox.Builder builder = LocalSandbox.builder().gracePeriod(Duration.ofMillis(500)).keepAlive(true);
    if (args.length > 1) {
      builder.workspace(Path.of(args[1]));
    }
    LocalSandbox sandbox = builder.start();
    SandboxProcess sleeper = sandbox.startProcess("sleep 300");
    System.out.println("ORPHAN agentPid=" + sandbox.agentPid() + " sleepPid=" + sleeper.pid()
        + " workspace=" + sandbox.workspace());
    System.out.flush();
    if (args.length > 0 && args[0].equals("exit")) {
      System.exit(0); // no close(): the shutdown hook must clean up
    }
    Thread.sleep(Long.MAX_VALUE);
  }
}
