package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How {@link LocalSandbox} finds the agent when nothing is configured, seen from a fresh JVM
 * whose class path holds the packaged SDK jar and its dependencies but not the agent.
 */
class AgentDiscoveryIT {
  static final Path SDK_JAR = Path.of(System.getProperty("sdk.jar", "target/sandbox-sdk.jar"));
  static final Path AGENT_JAR = Path.of(System.getProperty("agent.jar", "../container-agent/target/container-agent.jar"));

  @TempDir Path dir;

  @Test
  void anAgentJarNextToTheSdkJarIsFoundWithoutConfiguration() throws Exception {
    Path lib = Files.createDirectories(dir.resolve("lib"));
    Files.copy(SDK_JAR, lib.resolve("sandbox-sdk.jar"));
    Files.copy(AGENT_JAR, lib.resolve("container-agent.jar"));

    String out = runChild(lib.resolve("sandbox-sdk.jar"));

    assertThat(out).contains("EXEC found the agent");
  }

  @Test
  void withoutAnAgentAnywhereStartSaysWhereItLookedAndHowToFixIt() throws Exception {
    Path lib = Files.createDirectories(dir.resolve("lib"));
    Files.copy(SDK_JAR, lib.resolve("sandbox-sdk.jar"));

    String out = runChild(lib.resolve("sandbox-sdk.jar"));

    assertThat(out).contains("ERROR cannot find the container agent", "dev.sandboxsdk:container-agent",
        "next to the sandbox-sdk jar", "agentJar(path)", "SANDBOX_AGENT_JAR");
  }

  /** Runs {@link ItDiscoveryMain} with the SDK jar, its dependencies and the test classes. */
  private String runChild(Path sdkJar) throws Exception {
    List<String> cp = new ArrayList<>();
    cp.add(sdkJar.toString());
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      String name = Path.of(entry).getFileName().toString();
      boolean dependency = Stream.of("okhttp-", "okio", "kotlin-stdlib", "annotations-", "jackson-", "slf4j-api")
          .anyMatch(name::startsWith);
      if (dependency || entry.endsWith("test-classes")) {
        cp.add(entry);
      }
    }
    ProcessBuilder builder = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", String.join(File.pathSeparator, cp), ItDiscoveryMain.class.getName())
        .directory(dir.toFile())
        .redirectErrorStream(true);
    builder.environment().remove("SANDBOX_AGENT_JAR"); // checked before any discovery
    Process child = builder.start();
    child.getOutputStream().close();
    assertThat(child.waitFor(60, TimeUnit.SECONDS)).as("child JVM finishes").isTrue();
    String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    return out;
  }
}
