package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.Procs;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The packaged agent as an operator runs it: `java -jar container-agent.jar ...`. */
class AgentProcessIT {
  static final Path JAR = Path.of(System.getProperty("agent.jar", "target/container-agent.jar"));
  static final String TOKEN = "jar-token-abcdef";

  @TempDir Path dir;
  final List<Process> started = new ArrayList<>();
  final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @AfterEach
  void stopAgents() throws InterruptedException {
    for (Process p : started) {
      p.destroy(); // SIGTERM: lets the agent stop its processes and remove its pipe directory
      if (!p.waitFor(15, TimeUnit.SECONDS)) {
        p.destroyForcibly();
      }
    }
  }

  Process launch(Map<String, String> env, String... args) throws IOException {
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-jar", JAR.toString()));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile());
    pb.environment().remove(Main.TOKEN_ENV);
    pb.environment().putAll(env);
    Process p = pb.start();
    started.add(p);
    return p;
  }

  /** Reads stdout up to the ready line and returns its JSON. */
  static JsonNode awaitReady(Process agent) throws IOException {
    BufferedReader out = new BufferedReader(new InputStreamReader(agent.getInputStream(), StandardCharsets.UTF_8));
    String line = out.readLine();
    assertThat(line).as("first stdout line").isNotNull().startsWith(Main.READY_PREFIX);
    return TestAgent.JSON.readTree(line.substring(Main.READY_PREFIX.length()));
  }

  JsonNode call(String method, URI uri, String body) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(uri).header("Authorization", "Bearer " + TOKEN).timeout(Duration.ofSeconds(30));
    b = body == null ? b.method(method, HttpRequest.BodyPublishers.noBody())
        : b.method(method, HttpRequest.BodyPublishers.ofString(body));
    HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    JsonNode json = TestAgent.JSON.readTree(r.body());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return json;
  }

  @Test
  void printsAMachineReadableReadyLineAndServesWithATokenFromTheEnvironment() throws Exception {
    Process agent = launch(Map.of(Main.TOKEN_ENV, TOKEN), "--port", "0", "--bind", "127.0.0.1", "--workspace", "ws");
    JsonNode ready = awaitReady(agent);

    assertThat(ready.get("protocol").asInt()).isEqualTo(1);
    assertThat(ready.get("pid").asLong()).isEqualTo(agent.pid());
    URI url = URI.create(ready.get("url").asText());
    assertThat(url.getPort()).isEqualTo(ready.get("port").asInt()).isPositive();
    assertThat(Files.isDirectory(dir.resolve("ws"))).isTrue();
    JsonNode exec = call("POST", url.resolve("/api/execute"), "{\"command\":\"pwd; echo ${SANDBOX_AGENT_TOKEN:-no-token}\"}");
    assertThat(exec.get("stdout").asText()).isEqualTo(dir.resolve("ws").toRealPath() + "\nno-token\n");
  }

  @Test
  void refusesToStartWithoutATokenAndSaysHowToFixIt() throws Exception {
    Process agent = launch(Map.of(), "--port", "0");
    assertThat(agent.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(agent.exitValue()).isEqualTo(2);
    String err = new String(agent.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(err).contains("--token-file").contains(Main.TOKEN_ENV).contains("--insecure-no-auth");
    assertThat(agent.getInputStream().readAllBytes()).as("nothing on stdout").isEmpty();
  }

  @Test
  void helpDocumentsEveryOption() throws Exception {
    Process agent = launch(Map.of(), "--help");
    assertThat(agent.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(agent.exitValue()).isZero();
    String help = new String(agent.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(help).contains("--port", "--bind", "--workspace", "--token-file", "--max-processes",
        "--insecure-no-auth", "--grace-ms", "--keep-alive-ms", "--max-body-bytes", "--log-window-bytes",
        "--max-output-bytes", "--auto-cleanup-delay-ms", "--exit-on-stdin-eof", "--idle-timeout-ms", "--command-user",
        "SANDBOX_AGENT_TOKEN", "SANDBOX_AGENT_READY");
  }

  @Test
  void leavesNoZombieChildrenWhileRunning() throws Exception {
    Files.writeString(dir.resolve("token"), TOKEN + "\n");
    Process agent = launch(Map.of(), "--port", "0", "--bind", "127.0.0.1", "--token-file", "token", "--workspace", "ws");
    URI url = URI.create(awaitReady(agent).get("url").asText());
    for (int i = 0; i < 20; i++) {
      call("POST", url.resolve("/api/execute"), "{\"command\":\"exit " + (i % 3) + "\"}");
      call("POST", url.resolve("/api/process/start"), "{\"argv\":[\"true\"]}");
    }
    Thread.sleep(500);
    assertThat(zombieChildrenOf(agent.pid())).isEmpty();
  }

  @Test
  void sigtermStopsTheAgentAndLeavesNoChildAlive() throws Exception {
    Files.writeString(dir.resolve("token"), TOKEN);
    Process agent = launch(Map.of(), "--port", "0", "--bind", "127.0.0.1", "--token-file", "token", "--grace-ms", "1000",
        "--workspace", dir.toString());
    URI url = URI.create(awaitReady(agent).get("url").asText());
    List<Long> groups = new ArrayList<>();
    for (String cmd : List.of("sleep 300", "trap '' TERM; sleep 300", "sleep 300 & sleep 300 & wait")) {
      String body = TestAgent.JSON.createObjectNode().put("command", cmd).toString();
      groups.add(call("POST", url.resolve("/api/process/start"), body).get("pid").asLong());
    }
    // Children left behind by an exec and by a background process whose record was dropped.
    groups.add(call("POST", url.resolve("/api/execute"), "{\"command\":\"sleep 300 & echo x\"}").get("pid").asLong());
    groups.add(call("POST", url.resolve("/api/process/start"), "{\"command\":\"sleep 300 & echo y\"}").get("pid").asLong());
    Thread.sleep(300);
    call("POST", url.resolve("/api/process/cleanup"), null);
    // A foreground exec in flight counts too (the agent workspace is `dir`, its working directory).
    Thread execCaller = new Thread(() -> {
      try {
        call("POST", url.resolve("/api/execute"), "{\"command\":\"echo $$ > inflight.pid; exec sleep 300\"}");
      } catch (Exception expected) {
        // the agent goes away mid-call
      }
    });
    execCaller.start();
    long inflight = readPid(dir.resolve("inflight.pid"));
    assertThat(Await.until(5000, () -> commandOf(inflight).equals("sleep")))
        .as("the in-flight exec %d became sleep", inflight).isTrue();
    groups.add(inflight);
    Thread.sleep(300);
    List<Long> everyone = new ArrayList<>();
    for (long g : groups) {
      everyone.addAll(Procs.groupMembers(g));
    }
    assertThat(everyone).contains(inflight).hasSizeGreaterThanOrEqualTo(8);

    agent.destroy(); // SIGTERM
    assertThat(agent.waitFor(20, TimeUnit.SECONDS)).as("agent exits").isTrue();
    assertThat(Await.until(5000, () -> everyone.stream().noneMatch(Procs::alive)))
        .as("every process the agent started is gone").isTrue();
    for (long g : groups) {
      assertThat(Procs.groupMembers(g)).isEmpty();
    }
    execCaller.join(10_000);
  }

  @Test
  void withExitOnStdinEofTheAgentStopsEverythingWhenItsParentGoesAway() throws Exception {
    Files.writeString(dir.resolve("token"), TOKEN);
    Process agent = launch(Map.of(), "--port", "0", "--bind", "127.0.0.1", "--token-file", "token", "--grace-ms", "500",
        "--exit-on-stdin-eof", "--workspace", "ws");
    URI url = URI.create(awaitReady(agent).get("url").asText());
    long group = call("POST", url.resolve("/api/process/start"), "{\"command\":\"sleep 300 & sleep 300 & wait\"}")
        .get("pid").asLong();
    Thread.sleep(200);
    List<Long> members = Procs.groupMembers(group);
    assertThat(members).hasSizeGreaterThanOrEqualTo(3);
    assertThat(agent.isAlive()).isTrue();

    agent.getOutputStream().close(); // what the OS does when the parent dies, even by SIGKILL

    assertThat(agent.waitFor(20, TimeUnit.SECONDS)).as("agent exits").isTrue();
    assertThat(agent.exitValue()).isZero();
    assertThat(Await.until(5000, () -> members.stream().noneMatch(Procs::alive))).as("its processes are gone").isTrue();
  }

  /** Waits for a command to write its pid to {@code file}. */
  static long readPid(Path file) throws Exception {
    String[] text = {""};
    boolean written = Await.until(10_000, () -> {
      try {
        text[0] = Files.exists(file) ? Files.readString(file).strip() : "";
      } catch (IOException notYet) {
        return false;
      }
      return !text[0].isEmpty();
    });
    assertThat(written).as("a pid in %s", file).isTrue();
    return Long.parseLong(text[0]);
  }

  /** The command name of a process ({@code comm}), or "" when it is gone. */
  static String commandOf(long pid) {
    try {
      return Files.readString(Path.of("/proc", Long.toString(pid), "comm")).strip();
    } catch (IOException gone) {
      return "";
    }
  }

  static List<Long> zombieChildrenOf(long parent) throws IOException {
    List<Long> zombies = new ArrayList<>();
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
      for (Path d : dirs) {
        try {
          String stat = Files.readString(d.resolve("stat"));
          String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
          if (f[0].equals("Z") && Long.parseLong(f[1]) == parent) {
            zombies.add(Long.parseLong(d.getFileName().toString()));
          }
        } catch (IOException gone) {
          // exited while we looked
        }
      }
    }
    return zombies;
  }
}
