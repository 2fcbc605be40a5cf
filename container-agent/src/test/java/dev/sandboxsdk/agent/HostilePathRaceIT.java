package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.HostBait;
import dev.sandboxsdk.testkit.PathSwapper;
import dev.sandboxsdk.testkit.Race;
import java.io.IOException;
import java.io.InputStream;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The race harness: a command swaps workspace directories with symbolic links to a host directory
 * and to {@code /proc/self} as fast as it can ({@code renameat2(RENAME_EXCHANGE)}), while clients
 * use every route that takes a path through the swapped directories. Nothing may leave the
 * workspace: no host byte read, no host file created, changed, deleted or moved, no host name in
 * any answer or watch event, and never a 500.
 */
class HostilePathRaceIT {
  private static final long RACE_MS = 6_000;
  private static final int VICTIMS = 300;
  private static final String SWAPPER = PathSwapper.python("d", "l", "d2", "p");

  @TempDir
  Path tmp;

  @ParameterizedTest(name = "isolation {0}")
  @ValueSource(strings = {"none", "bwrap"})
  void noRouteLeavesTheWorkspaceWhileACommandSwapsLinksIn(String isolation) throws Exception {
    HostBait bait = HostBait.plant(tmp.resolve("host"), VICTIMS);
    Path host = bait.dir();
    try (TestAgent agent = TestAgent.start(b -> b.isolation(isolation))) {
      Path ws = agent.workspace;
      Files.createDirectory(ws.resolve("d"));
      Files.writeString(ws.resolve("d/f"), "inside\n");
      for (int i = 0; i < VICTIMS; i++) {
        Files.writeString(ws.resolve("d/victim-" + i), "inside victim\n");
      }
      Files.createDirectory(ws.resolve("d2"));
      Files.writeString(ws.resolve("d2/environ"), "decoy\n");
      Files.createSymbolicLink(ws.resolve("l"), host);
      Files.createSymbolicLink(ws.resolve("p"), Path.of("/proc/self"));
      Files.writeString(ws.resolve("swapper.py"), SWAPPER);
      JsonNode started = agent.post("/api/process/start", obj("command", "exec python3 swapper.py")).body();
      String swapper = started.path("processId").asText();
      assertThat(swapper).as("swapper started: %s", started).isNotEmpty();
      Await.until(10_000, () -> Files.exists(ws.resolve(PathSwapper.READY)));
      assertThat(ws.resolve(PathSwapper.READY)).exists();

      long fdsBefore = openFds();
      int threadsBefore = Thread.activeCount();
      List<String> escapes = race(agent, host);
      agent.delete("/api/process/" + swapper + "?signal=SIGKILL");
      long settle = System.currentTimeMillis() + 15_000;
      while ((openFds() > fdsBefore + 16 || Thread.activeCount() > threadsBefore + 16)
          && System.currentTimeMillis() < settle) {
        Thread.sleep(100);
      }
      // The agent runs in this JVM: its descriptors (directory walks, held anchors) and threads
      // (watches) must come back after thousands of raced requests.
      assertThat(openFds()).as("descriptors after the race").isLessThanOrEqualTo(fdsBefore + 16);
      assertThat(Thread.activeCount()).as("threads after the race").isLessThanOrEqualTo(threadsBefore + 16);

      assertThat(escapes).as("answers that left the workspace").isEmpty();
      assertThat(bait.changes()).as("what the race did to the host directory's files").isEmpty();
    }
  }

  /** Two clients use every path-taking route until the time is up; returns what escaped. */
  private List<String> race(TestAgent agent, Path host) throws InterruptedException {
    Race.Result r = Race.run(2, RACE_MS, i -> {
      try {
        return oneRequest(agent, host, i);
      } catch (RuntimeException e) {
        return "request failed: " + e;
      }
    });
    System.out.printf("path race: %d requests in %d ms, %d left the workspace %s%n", r.attempts(), RACE_MS,
        r.escapes().size(), r.kinds(" (named|returned|answered|showed|failed|:)"));
    return r.escapes();
  }

  /** One request of the rotation; null if its answer stayed inside the workspace, else what leaked. */
  private static String oneRequest(TestAgent agent, Path host, int i) {
    int victim = i % VICTIMS;
    switch (i % 12) {
      case 0:
        return expectContent(agent.post("/api/read", obj("path", "d/f")), "read d/f", "inside\n");
      case 1:
        return rawGet(agent, "d/f");
      case 2:
        return expectContent(agent.post("/api/read", obj("path", "d2/environ")), "read d2/environ", "decoy\n");
      case 3:
        return clean(agent.post("/api/list-files", obj("path", "d")), "list d", host);
      case 4:
        return clean(agent.post("/api/write", obj("path", "d/w-" + i, "content", "x")), "write", host);
      case 5:
        return rawPut(agent, "d/u-" + i, host);
      case 6:
        return clean(agent.post("/api/mkdir", obj("path", "d/m-" + i)), "mkdir", host);
      case 7:
        return clean(agent.post("/api/delete", obj("path", "d/victim-" + victim)), "delete", host);
      case 8:
        return clean(agent.post("/api/rename", obj("oldPath", "d/victim-" + victim, "newPath", "moved-" + i)),
            "rename", host);
      case 9: {
        TestAgent.Response r = agent.post("/api/exists", obj("path", "d/hostonly"));
        if (r.status() == 200 && r.body().path("exists").asBoolean()) {
          return "exists d/hostonly answered true";
        }
        return clean(r, "exists", host);
      }
      case 10: {
        TestAgent.Response r = agent.post("/api/list-files", obj("path", "d2"));
        if (r.status() == 200 && r.body().toString().contains("cmdline")) {
          return "list d2 showed /proc/self";
        }
        return clean(r, "list d2", host);
      }
      default:
        return watch(agent, host);
    }
  }

  private static String expectContent(TestAgent.Response r, String what, String expected) {
    if (r.status() >= 500) {
      return what + ": " + r.status() + " " + r.body();
    }
    if (r.status() == 200 && !r.text("content").equals(expected)) {
      return what + " returned another file: " + r.body();
    }
    return null;
  }

  private static String clean(TestAgent.Response r, String what, Path host) {
    String body = String.valueOf(r.body());
    if (r.status() >= 500) {
      return what + ": " + r.status() + " " + body;
    }
    if (body.contains("hostonly") && !what.startsWith("exists") || body.contains(host.toString())
        || body.contains("HOSTSECRET")) {
      return what + " named the host: " + body;
    }
    return null;
  }

  private static String rawGet(TestAgent agent, String path) {
    try {
      HttpResponse<String> r = agent.http.send(agent.request("/api/files/raw?path=" + enc(path)).GET().build(),
          HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() >= 500) {
        return "raw GET: " + r.statusCode();
      }
      return r.statusCode() == 200 && !r.body().equals("inside\n") ? "raw GET returned another file" : null;
    } catch (IOException e) {
      return null; // a cut connection is allowed (the file changed while it was sent)
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }

  private static String rawPut(TestAgent agent, String path, Path host) {
    TestAgent.Response r = agent.send(agent.request("/api/files/raw?path=" + enc(path))
        .PUT(HttpRequest.BodyPublishers.ofString("x")).build());
    return clean(r, "raw PUT", host);
  }

  /** A short watch of d while the test writes a file into the host directory: no event may name it. */
  private static String watch(TestAgent agent, Path host) {
    try {
      HttpResponse<InputStream> r = agent.http.send(agent.request("/api/watch")
              .header("Content-Type", "application/json")
              .POST(HttpRequest.BodyPublishers.ofString(obj("path", "d", "recursive", true, "timeoutMs", 150))).build(),
          HttpResponse.BodyHandlers.ofInputStream());
      Path touched = host.resolve("hostonly-event");
      Files.writeString(touched, "x");
      Files.delete(touched);
      String body;
      try (InputStream in = r.body()) {
        body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      }
      if (r.statusCode() >= 500 || body.contains("INTERNAL_ERROR")) {
        return "watch: " + r.statusCode() + " " + body;
      }
      if (body.contains("hostonly") || body.contains(host.toString())) {
        return "watch named the host: " + body;
      }
      return null;
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }

  private static long openFds() throws IOException {
    try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
      return s.count();
    }
  }

  private static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }
}
