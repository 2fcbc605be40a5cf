package dev.sandboxsdk.agent;

import static dev.sandboxsdk.agent.TestAgent.obj;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.testkit.Await;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * POST /api/watch against a real agent and real files: the events of creating, changing,
 * renaming and deleting, directories made after the watch began, filters, the workspace boundary
 * (links included), the input errors, and that a client who hangs up leaves no inotify
 * descriptor and no thread behind.
 */
class WatchIT {
  /** A short keep-alive, so the agent finds a hung-up client soon. */
  @RegisterExtension static final TestAgent agent = new TestAgent(b -> b.keepAliveMs(200));

  @AfterEach
  void emptyTheWorkspace() throws IOException {
    try (var files = Files.list(agent.workspace)) {
      for (Path p : (Iterable<Path>) files::iterator) {
        FilesIT.deleteTree(p);
      }
    }
  }

  /** Opens a watch and reads its {@code watching} event. */
  private static SseReader watch(String json) throws Exception {
    SseReader sse = agent.stream("/api/watch", json);
    assertThat(sse.status()).as("status; body: %s", sse.status() == 200 ? "" : sse.errorBody()).isEqualTo(200);
    JsonNode first = next(sse);
    assertThat(first.get("type").asText()).isEqualTo("watching");
    return sse;
  }

  private static JsonNode next(SseReader sse) throws Exception {
    JsonNode e = CompletableFuture.supplyAsync(sse::next).get(30, TimeUnit.SECONDS);
    assertThat(e).as("the stream ended").isNotNull();
    return e;
  }

  /** Reads events until one matches; returns all read, the match last. */
  private static List<JsonNode> until(SseReader sse, Predicate<JsonNode> match) throws Exception {
    List<JsonNode> seen = new ArrayList<>();
    for (;;) {
      JsonNode e = next(sse);
      seen.add(e);
      if (match.test(e)) {
        return seen;
      }
    }
  }

  /** Reads events until one matches and returns it. */
  private static JsonNode first(SseReader sse, Predicate<JsonNode> match) throws Exception {
    List<JsonNode> seen = until(sse, match);
    return seen.get(seen.size() - 1);
  }

  private static Predicate<JsonNode> event(String type, Path p) {
    return e -> e.path("eventType").asText().equals(type) && e.path("path").asText().equals(p.toString());
  }

  private Path real(String rel) throws IOException {
    return agent.workspace.toRealPath().resolve(rel);
  }

  @Test
  void aRecursiveWatchOfATreeDeeperThanTheCapIsRefusedAndHoldsNoDescriptors() throws Exception {
    Path d = agent.workspace.resolve("deep");
    Files.createDirectory(d);
    for (int i = 0; i < 600; i++) {
      d = Files.createDirectory(d.resolve("d"));
    }
    long before = openFds();
    for (int i = 0; i < 4; i++) {
      TestAgent.Response r = agent.post("/api/watch", obj("path", "deep", "recursive", true));
      assertThat(r.status()).as("%s", r.body()).isEqualTo(413);
      assertThat(r.body().path("context").path("maxDepth").asInt()).isEqualTo(512);
    }
    assertThat(openFds()).as("descriptors after four refused deep watches").isLessThanOrEqualTo(before + 8);
    try (SseReader shallow = watch(obj("path", "deep", "recursive", false))) {
      assertThat(shallow.status()).isEqualTo(200); // a watch of its top alone still works
    }
  }

  private static long openFds() throws IOException {
    try (var s = Files.list(Path.of("/proc/self/fd"))) {
      return s.count();
    }
  }

  @Test
  void createModifyDeleteAndRenameOfAFileAreReported() throws Exception {
    Files.createDirectories(agent.workspace.resolve("w"));
    Path f = real("w/a.txt");
    Path g = real("w/b.txt");
    try (SseReader sse = watch(obj("path", "w"))) {
      Files.writeString(f, "one");
      JsonNode created = first(sse, event("create", f));
      assertThat(created.get("type").asText()).isEqualTo("event");
      assertThat(created.get("isDirectory").asBoolean()).isFalse();
      assertThat(created.has("timestamp")).isTrue();
      Files.writeString(f, "two", java.nio.file.StandardOpenOption.APPEND);
      until(sse, event("modify", f));
      Files.move(f, g);
      // inotify through the JDK pairs nothing: a rename is the old name deleted, the new one created
      List<JsonNode> renamed = until(sse, event("create", g));
      assertThat(renamed).anyMatch(event("delete", f));
      Files.delete(g);
      until(sse, event("delete", g));
    }
  }

  @Test
  void aDirectoryMadeAfterTheStartIsWatchedAndWhatWasAlreadyInItIsReported() throws Exception {
    Files.createDirectories(agent.workspace.resolve("tree"));
    try (SseReader sse = watch(obj("path", "tree", "recursive", true))) {
      // Made in one go, so the file usually exists before the agent registers the new directories.
      Process p = new ProcessBuilder("sh", "-c", "mkdir -p sub/deeper && echo x > sub/deeper/early.txt")
          .directory(agent.workspace.resolve("tree").toFile()).start();
      assertThat(p.waitFor()).isZero();
      List<JsonNode> seen = until(sse, event("create", real("tree/sub/deeper/early.txt")));
      Predicate<JsonNode> sub = event("create", real("tree/sub"));
      assertThat(seen).anyMatch(e -> sub.test(e) && e.get("isDirectory").asBoolean());
      assertThat(seen).anyMatch(event("create", real("tree/sub/deeper")));
      Files.writeString(agent.workspace.resolve("tree/sub/deeper/late.txt"), "y");
      until(sse, event("create", real("tree/sub/deeper/late.txt")));
      FilesIT.deleteTree(agent.workspace.resolve("tree/sub"));
      JsonNode gone = first(sse, event("delete", real("tree/sub")));
      assertThat(gone.get("isDirectory").asBoolean()).as("a deleted directory is still reported as one").isTrue();
    }
  }

  @Test
  void withoutRecursionOnlyTheDirectoryItselfIsWatched() throws Exception {
    Files.createDirectories(agent.workspace.resolve("flat/sub"));
    try (SseReader sse = watch(obj("path", "flat", "recursive", false))) {
      Files.writeString(agent.workspace.resolve("flat/sub/hidden.txt"), "x");
      Files.writeString(agent.workspace.resolve("flat/top.txt"), "x");
      List<JsonNode> seen = until(sse, event("create", real("flat/top.txt")));
      assertThat(seen).noneMatch(e -> e.path("path").asText().endsWith("hidden.txt"));
    }
  }

  @Test
  void includeAndTheDefaultExclusionsFilterEvents() throws Exception {
    Files.createDirectories(agent.workspace.resolve("f/node_modules"));
    try (SseReader sse = watch(obj("path", "f"))) {
      Files.writeString(agent.workspace.resolve("f/node_modules/dep.js"), "x"); // excluded by default
      Files.writeString(agent.workspace.resolve("f/app.js"), "x");
      List<JsonNode> seen = until(sse, event("create", real("f/app.js")));
      assertThat(seen).noneMatch(e -> e.path("path").asText().contains("node_modules"));
    }
    try (SseReader sse = watch(obj("path", "f", "include", List.of("*.txt"), "events", List.of("create")))) {
      Files.writeString(agent.workspace.resolve("f/skip.log"), "x");
      Files.writeString(agent.workspace.resolve("f/app.js"), "changed");
      Files.writeString(agent.workspace.resolve("f/keep.txt"), "x");
      List<JsonNode> seen = until(sse, event("create", real("f/keep.txt")));
      assertThat(seen).hasSize(1);
    }
  }

  @Test
  void deletingTheWatchedDirectoryEndsTheStreamWithStopped() throws Exception {
    Files.createDirectories(agent.workspace.resolve("doomed"));
    try (SseReader sse = watch(obj("path", "doomed"))) {
      Files.delete(agent.workspace.resolve("doomed"));
      JsonNode last = first(sse, e -> e.get("type").asText().equals("stopped"));
      assertThat(last.get("reason").asText()).contains("deleted");
      assertThat(CompletableFuture.supplyAsync(sse::next).get(30, TimeUnit.SECONDS)).isNull();
    }
  }

  @Test
  void timeoutMsEndsTheStreamWithStopped() throws Exception {
    Files.createDirectories(agent.workspace.resolve("brief"));
    try (SseReader sse = watch(obj("path", "brief", "timeoutMs", 300))) {
      List<JsonNode> rest = CompletableFuture.supplyAsync(sse::rest).get(30, TimeUnit.SECONDS);
      assertThat(rest).hasSize(1);
      assertThat(rest.get(0).get("type").asText()).isEqualTo("stopped");
      assertThat(rest.get(0).get("reason").asText()).contains("timeoutMs");
    }
  }

  @Test
  void pathsOutsideTheWorkspaceAreRefusedLinksIncludedAndLinksInsideAreNotFollowed() throws Exception {
    Path outside = Files.createTempDirectory("watch-outside");
    try {
      Files.createDirectories(agent.workspace.resolve("in"));
      Files.createSymbolicLink(agent.workspace.resolve("escape"), outside);
      Files.createSymbolicLink(agent.workspace.resolve("in/escape"), outside);
      for (String path : List.of("..", "/etc", "escape", outside.toString())) {
        TestAgent.Response r = agent.post("/api/watch", obj("path", path));
        assertThat(r.status()).as(path).isEqualTo(403);
        assertThat(r.body().get("code").asText()).isEqualTo("PERMISSION_DENIED");
      }
      try (SseReader sse = watch(obj("path", "in"))) {
        Files.writeString(outside.resolve("secret.txt"), "x");
        Files.writeString(agent.workspace.resolve("in/marker.txt"), "x");
        List<JsonNode> seen = until(sse, event("create", real("in/marker.txt")));
        assertThat(seen).noneMatch(e -> e.path("path").asText().contains("secret"));
      }
    } finally {
      FilesIT.deleteTree(outside);
    }
  }

  @Test
  void badRequestsGetClearErrors() throws Exception {
    Files.writeString(agent.workspace.resolve("plain.txt"), "x");
    Files.createDirectories(agent.workspace.resolve("d"));
    record Case(String body, int status, String code) { }
    for (Case c : List.of(
        new Case("{}", 400, "VALIDATION_FAILED"),
        new Case(obj("path", "missing"), 404, "FILE_NOT_FOUND"),
        new Case(obj("path", "plain.txt"), 400, "NOT_DIRECTORY"),
        new Case(obj("path", "d", "include", List.of("*.js"), "exclude", List.of("*.log")), 400, "VALIDATION_FAILED"),
        new Case(obj("path", "d", "include", List.of("[ab].js")), 400, "VALIDATION_FAILED"),
        new Case(obj("path", "d", "events", List.of("attrib")), 400, "VALIDATION_FAILED"),
        new Case(obj("path", "d", "recursive", "yes"), 400, "VALIDATION_FAILED"),
        new Case(obj("path", "d", "bogus", 1), 400, "VALIDATION_FAILED"),
        new Case("{\"path\":", 400, "VALIDATION_FAILED"))) {
      TestAgent.Response r = agent.post("/api/watch", c.body());
      assertThat(r.status()).as(c.body()).isEqualTo(c.status());
      assertThat(r.body().get("code").asText()).as(c.body()).isEqualTo(c.code());
    }
    assertThat(agent.get("/api/watch").status()).isEqualTo(405);
  }

  /**
   * The largest include a request may hold (32 globs of 256 characters, all stars) on names as
   * long as the file system allows: a name that almost matches is passed over at once and one
   * that matches is reported. As regular expressions, the first name kept the watch's thread
   * backtracking for ever, and no event came.
   */
  @Test
  void theLargestGlobsOnTheLongestNamesDelayNoEvent() throws Exception {
    Files.createDirectories(agent.workspace.resolve("long"));
    List<String> globs = java.util.Collections.nCopies(32, "*a".repeat(127) + "*b");
    try (SseReader sse = watch(obj("path", "long", "include", globs))) {
      Files.writeString(agent.workspace.resolve("long").resolve("a".repeat(255)), "almost");
      Path match = real("long").resolve("a".repeat(254) + "b");
      Files.writeString(match, "match");
      List<JsonNode> seen = until(sse, event("create", match));
      assertThat(seen).as("only the matching name is reported").allMatch(e -> e.path("path").asText().equals(match.toString()));
    }
  }

  @Test
  void clientsThatHangUpLeaveNoInotifyDescriptorOrThreadBehind() throws Exception {
    Files.createDirectories(agent.workspace.resolve("h/a/b"));
    awaitEarlierWatchesReleased();
    long baseFds = inotifyFds();
    long baseThreads = watchThreads();
    List<SseReader> open = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      open.add(watch(obj("path", "h")));
    }
    assertThat(inotifyFds()).isEqualTo(baseFds + 3);
    assertThat(watchThreads()).isEqualTo(baseThreads + 6); // ours and the JDK's poller, per watch
    for (SseReader sse : open) {
      sse.close(); // hangs up without a word; the agent finds out at its next keep-alive
    }
    boolean released = Await.until(30_000, () -> inotifyFds() == baseFds && watchThreads() == baseThreads);
    assertThat(released).as("inotify fds %d (baseline %d), watch threads %d (baseline %d)", inotifyFds(), baseFds,
        watchThreads(), baseThreads).isTrue();
  }

  @Test
  void aBoundedNumberOfWatchesMayBeOpenAtOnce() throws Exception {
    Files.createDirectories(agent.workspace.resolve("many"));
    awaitEarlierWatchesReleased();
    long baseFds = inotifyFds();
    long baseThreads = watchThreads();
    List<SseReader> open = new ArrayList<>();
    try {
      for (int i = 0; i < 16; i++) {
        open.add(watch(obj("path", "many", "recursive", false)));
      }
      TestAgent.Response refused = agent.post("/api/watch", obj("path", "many"));
      assertThat(refused.status()).isEqualTo(429);
      assertThat(refused.body().get("code").asText()).isEqualTo("TOO_MANY_WATCHES");
    } finally {
      open.forEach(SseReader::close);
    }
    // Once the agent noticed the hang-ups, a new watch is accepted again.
    assertThat(Await.until(30_000, () -> inotifyFds() == baseFds && watchThreads() == baseThreads)).isTrue();
    watch(obj("path", "many")).close();
  }

  @Test
  void aTreeWithMoreDirectoriesThanTheCapIsRefusedBeforeOrEndedWithAnErrorAfterTheStart() throws Exception {
    // 8191 subdirectories and the root: exactly the cap of 8192 directories.
    Path big = Files.createDirectories(agent.workspace.resolve("big"));
    for (int i = 0; i < 8191; i++) {
      Files.createDirectory(big.resolve("d" + i));
    }
    try (SseReader sse = agent.stream("/api/watch", obj("path", "big"))) {
      assertThat(sse.status()).isEqualTo(200);
      JsonNode watching = next(sse);
      assertThat(watching.get("directories").asInt()).isEqualTo(8192);
      Files.createDirectory(big.resolve("one-too-many"));
      JsonNode end = first(sse, e -> e.get("type").asText().equals("error"));
      assertThat(end.get("code").asText()).isEqualTo("TOO_MANY_WATCHES");
      assertThat(CompletableFuture.supplyAsync(sse::next).get(30, TimeUnit.SECONDS)).isNull();
    }
    TestAgent.Response refused = agent.post("/api/watch", obj("path", "big"));
    assertThat(refused.status()).isEqualTo(429);
    assertThat(refused.body().get("code").asText()).isEqualTo("TOO_MANY_WATCHES");
    assertThat(refused.body().get("message").asText()).contains("8192 directories");
    try (SseReader sse = watch(obj("path", "big", "exclude", List.of("d1*")))) {
      assertThat(sse.status()).as("excluded directories are not watched").isEqualTo(200);
    }
  }

  /** Watches of earlier tests end once the agent notices their hang-up; counts are taken after that. */
  private static void awaitEarlierWatchesReleased() throws InterruptedException {
    assertThat(Await.until(30_000, () -> watchThreads() == 0)).as("watch threads of earlier tests: %d", watchThreads())
        .isTrue();
  }

  /** Inotify instances open in this JVM (the agent runs in it). */
  static long inotifyFds() {
    try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
      return fds.filter(fd -> {
        try {
          return Files.readSymbolicLink(fd).toString().contains("inotify");
        } catch (IOException e) {
          return false; // closed while listing
        }
      }).count();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** The agent's watch threads and the JDK's poller threads of watch services. */
  static long watchThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().startsWith("watch-") || t.getName().startsWith("FileSystemWatch"))
        .count();
  }
}
