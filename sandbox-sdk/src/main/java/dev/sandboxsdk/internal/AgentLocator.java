package dev.sandboxsdk.internal;

import dev.sandboxsdk.SandboxException;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds what {@link AgentLauncher} runs: the java executable, and the agent's classpath (an
 * explicit jar, one named by a system property or environment variable, the agent's classes on
 * this class loader, or a jar next to the SDK's).
 */
final class AgentLocator {
  // The launcher's logger, as before this class was split from it.
  private static final Logger log = LoggerFactory.getLogger("dev.sandboxsdk.local.LocalSandbox.agent");
  private static final String JAR_PROPERTY = "sandbox.agent.jar";
  private static final String JAR_ENV = "SANDBOX_AGENT_JAR";

  private AgentLocator() {}

  static Path currentJava() {
    Path home = Path.of(System.getProperty("java.home"));
    Path java = home.resolve("bin").resolve("java");
    if (Files.isExecutable(java)) {
      return java;
    }
    String fromHandle = ProcessHandle.current().info().command().orElse(null);
    if (fromHandle != null && Files.isExecutable(Path.of(fromHandle))) {
      return Path.of(fromHandle);
    }
    throw new SandboxException("cannot find a java executable to run the local agent (looked in " + home
        + "/bin); set LocalSandbox.builder().javaExecutable(path)", null);
  }

  static Path checkJava(Path java) {
    if (!Files.isExecutable(java)) {
      throw new SandboxException("the java executable " + java + " does not exist or is not executable", null);
    }
    return java;
  }

  /** The classpath of the agent's JVM. */
  static String classpath(Path explicitJar) {
    if (explicitJar != null) {
      return checkJar(explicitJar, "agentJar");
    }
    String configured = System.getProperty(JAR_PROPERTY);
    if (configured == null || configured.isBlank()) {
      configured = System.getenv(JAR_ENV);
    }
    if (configured != null && !configured.isBlank()) {
      return checkJar(Path.of(configured), configured.equals(System.getProperty(JAR_PROPERTY))
          ? "system property " + JAR_PROPERTY : "environment variable " + JAR_ENV);
    }
    ClassLoader loader = AgentLauncher.class.getClassLoader();
    Path agent = location(loader, AgentLauncher.AGENT_MAIN);
    if (agent != null) {
      // The agent's own classes plus its dependencies, wherever this class loader has them
      // (one fat jar, or separate jars from Maven).
      Set<String> parts = new LinkedHashSet<>();
      parts.add(agent.toString());
      for (String dep : List.of("com.fasterxml.jackson.databind.ObjectMapper", "com.fasterxml.jackson.core.JsonFactory",
          "com.fasterxml.jackson.annotation.JsonProperty", "org.slf4j.LoggerFactory",
          "org.slf4j.simple.SimpleServiceProvider", "com.sun.jna.Native")) { // JNA: the agent's native spawn
        Path p = location(loader, dep);
        if (p != null) {
          parts.add(p.toString());
        }
      }
      return String.join(File.pathSeparator, parts);
    }
    Path beside = besideSdk();
    if (beside != null) {
      return beside.toString();
    }
    throw new SandboxException("cannot find the container agent: add the dependency dev.sandboxsdk:container-agent"
        + " (runtime scope is enough), put container-agent.jar next to the sandbox-sdk jar, or name the jar with"
        + " LocalSandbox.builder().agentJar(path), -D" + JAR_PROPERTY + "=path or " + JAR_ENV + "=path", null);
  }

  private static String checkJar(Path jar, String source) {
    if (!Files.isRegularFile(jar)) {
      throw new SandboxException("the agent jar " + jar + " (from " + source + ") does not exist", null);
    }
    return jar.toAbsolutePath().toString();
  }

  /** The jar or directory a class is loaded from, or null if the class is not there. */
  private static Path location(ClassLoader loader, String className) {
    URL url = loader == null ? null : loader.getResource(className.replace('.', '/') + ".class");
    if (url == null) {
      return null;
    }
    try {
      String s = url.toString();
      if (s.startsWith("jar:")) {
        return Path.of(new URI(s.substring(4, s.indexOf("!/"))));
      }
      if (s.startsWith("file:")) {
        Path file = Path.of(url.toURI());
        int depth = className.split("\\.").length;
        Path root = file;
        for (int i = 0; i < depth; i++) {
          root = root.getParent();
        }
        return root;
      }
    } catch (URISyntaxException | IllegalArgumentException e) {
      log.debug("cannot turn {} into a path", url, e);
    }
    return null;
  }

  /** container-agent*.jar in the directory of the SDK's jar, or the build output in a source checkout. */
  private static Path besideSdk() {
    Path sdk = location(AgentLauncher.class.getClassLoader(), AgentLauncher.class.getName());
    if (sdk == null) {
      return null;
    }
    Path dir = Files.isDirectory(sdk) ? sdk : sdk.getParent();
    List<Path> candidates = new ArrayList<>();
    if (dir != null) {
      try (Stream<Path> files = Files.list(dir)) {
        files.filter(p -> {
          String n = p.getFileName().toString();
          return n.startsWith("container-agent") && n.endsWith(".jar") && !n.endsWith("-sources.jar")
              && !n.endsWith("-javadoc.jar");
        }).sorted().forEach(candidates::add);
      } catch (IOException ignored) {
        // unreadable directory: nothing beside the SDK
      }
      // A source checkout: sandbox-sdk/target/classes -> container-agent/target/container-agent.jar
      for (Path p = dir; p != null; p = p.getParent()) {
        Path built = p.resolve("container-agent").resolve("target").resolve("container-agent.jar");
        if (Files.isRegularFile(built)) {
          candidates.add(built);
          break;
        }
      }
    }
    return candidates.isEmpty() ? null : candidates.get(0);
  }
}
