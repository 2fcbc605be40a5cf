package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.contract.ItEvents;
import dev.sandboxsdk.contract.ItSubscriber;
import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.Procs;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The streams under stress: big output byte for byte, back-pressure from a slow subscriber to
 * the command, connections cut in the middle of a stream (through {@link ItProxy}), and a stream
 * that stays silent for longer than its idle timeout.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class StreamingIT {
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final String LINE = "%07d caf\u00e9 \u20ac \ud83d\ude00 the quick brown fox jumps over the lazy dog\n";
  /** Prints {@code argv[1]} lines of {@link #LINE}, in writes of 1000 lines. */
  private static final String GENERATOR = String.join("\n",
      "import sys",
      "out = sys.stdout.buffer",
      "chunk = []",
      "for i in range(int(sys.argv[1])):",
      "    chunk.append('%07d caf\\u00e9 \\u20ac \\U0001F600 the quick brown fox jumps over the lazy dog\\n' % i)",
      "    if len(chunk) == 1000:",
      "        out.write(''.join(chunk).encode('utf-8'))",
      "        chunk = []",
      "out.write(''.join(chunk).encode('utf-8'))",
      "");
  /** Would print 1 GiB in 64 KiB writes; after each write, records how much it wrote so far. */
  private static final String FLOOD = String.join("\n",
      "import os, sys",
      "progress = sys.argv[1]",
      "out = sys.stdout.buffer",
      "block = b'y' * 65535 + b'\\n'",
      "for n in range(1, 16385):",
      "    out.write(block)",
      "    out.flush()",
      "    with open(progress + '.tmp', 'w') as f:",
      "        f.write(str(n * 65536))",
      "    os.replace(progress + '.tmp', progress)",
      "");
  private static final AtomicInteger IDS = new AtomicInteger();

  private static LocalSandbox sandbox;
  private static ItAgent agent;

  @BeforeAll
  static void start() throws Exception {
    sandbox = LocalSandbox.builder().gracePeriod(Duration.ofMillis(500)).keepAlive(true).start();
    agent = ItAgent.start("--grace-ms", "500");
  }

  @AfterAll
  static void stop() throws Exception {
    if (sandbox != null) {
      sandbox.close();
    }
    if (agent != null) {
      agent.close();
    }
  }

  @Test
  void twentyMegabytesOfMultibyteTextArriveByteForByte() throws Exception {
    int lines = 320_000;
    MessageDigest expected = MessageDigest.getInstance("SHA-256");
    long expectedBytes = 0;
    for (int i = 0; i < lines; i++) {
      byte[] b = String.format(LINE, i).getBytes(StandardCharsets.UTF_8);
      expected.update(b);
      expectedBytes += b.length;
    }
    String expectedHex = HexFormat.of().formatHex(expected.digest());
    writeFile("gen.py", GENERATOR);
    String inSandbox = sandbox.exec("python3 gen.py " + lines + " | sha256sum").requireSuccess().stdout();
    assertThat(inSandbox).as("the generator and its Java twin agree").startsWith(expectedHex);

    MessageDigest received = MessageDigest.getInstance("SHA-256");
    AtomicLong nextOffset = new AtomicLong();
    AtomicLong textBytes = new AtomicLong();
    AtomicInteger chunks = new AtomicInteger();
    List<String> problems = new ArrayList<>();
    List<ExecEvent> others = new ArrayList<>();
    ItSubscriber<ExecEvent> s = ItSubscriber.streaming(16, e -> {
      if (e instanceof ExecEvent.Stdout) {
        ExecEvent.Stdout out = (ExecEvent.Stdout) e;
        if (out.offset() != nextOffset.get() && problems.size() < 10) {
          problems.add("chunk " + chunks.get() + " starts at " + out.offset() + ", expected " + nextOffset.get());
        }
        nextOffset.set(out.offset() + out.bytes());
        byte[] b = out.text().getBytes(StandardCharsets.UTF_8);
        received.update(b);
        textBytes.addAndGet(b.length);
        chunks.incrementAndGet();
      } else {
        others.add(e);
      }
    });
    long t0 = System.nanoTime();

    sandbox.execStream(Command.of("python3", "gen.py", Integer.toString(lines)), ExecOptions.defaults()).subscribe(s);
    s.awaitComplete(Duration.ofSeconds(60));

    long millis = Math.max(1, (System.nanoTime() - t0) / 1_000_000);
    System.out.printf("[it] execStream of %d bytes in %d chunks took %d ms (%.1f MB/s)%n", expectedBytes, chunks.get(),
        millis, expectedBytes / 1e3 / millis);
    assertThat(problems).as("offsets are contiguous").isEmpty();
    assertThat(nextOffset.get()).as("sum of bytes").isEqualTo(expectedBytes);
    assertThat(textBytes.get()).as("UTF-8 bytes of the text").isEqualTo(expectedBytes);
    assertThat(HexFormat.of().formatHex(received.digest())).as("SHA-256 of the text").isEqualTo(expectedHex);
    assertThat(others).hasSize(2);
    assertThat(others.get(0)).isInstanceOf(ExecEvent.Start.class);
    assertThat(others.get(1)).isInstanceOfSatisfying(ExecEvent.Complete.class,
        done -> assertThat(done.exitCode()).isZero());
    assertThat(chunks.get()).as("no chunk is bigger than 64 KiB + 3 bytes").isGreaterThanOrEqualTo(
        (int) (expectedBytes / (64 * 1024 + 3)));
  }

  @Test
  void aSlowSubscriberSlowsTheCommandDownAndMemoryStaysBounded() throws Exception {
    writeFile("flood.py", FLOOD);
    String progress = "flood-" + IDS.incrementAndGet() + ".progress";
    Path progressFile = sandbox.workspace().resolve(progress);
    long heapBefore = usedHeapAfterGc();
    SlowSubscriber slow = new SlowSubscriber(40, 50);
    long t0 = System.nanoTime();

    sandbox.execStream(Command.of("python3", "flood.py", progress), ExecOptions.defaults()).subscribe(slow);
    assertThat(slow.quotaReached.await(30, TimeUnit.SECONDS)).as("40 chunks arrived").isTrue();
    Thread.sleep(500); // the command has every chance to run ahead now, if it could

    long elapsed = (System.nanoTime() - t0) / 1_000_000;
    long produced = readLong(progressFile);
    Thread.sleep(500);
    long producedLater = readLong(progressFile);
    long delivered = slow.delivered.get();
    long heapGrowth = usedHeapAfterGc() - heapBefore;
    long pgid = slow.pid;
    assertThat(Procs.groupMembers(pgid)).as("the command is still there, blocked on its output").isNotEmpty();
    System.out.printf("[it] slow subscriber: after %d ms, %d bytes delivered, the command wrote %d bytes "
        + "(%d bytes 500 ms later); heap growth %d KiB%n", elapsed, delivered, produced, producedLater,
        heapGrowth / 1024);
    long t1 = System.nanoTime();

    slow.subscription.cancel();

    boolean gone = Await.until(Duration.ofSeconds(6), () -> Procs.groupMembers(pgid).isEmpty());
    System.out.printf("[it] execStream cancel: the command was gone after %d ms%n", (System.nanoTime() - t1) / 1_000_000);
    assertThat(slow.unrequested).as("onNext calls beyond what the subscriber requested").hasValue(0);
    assertThat(producedLater).as("the command wrote nothing more while nobody asked for its output")
        .isEqualTo(produced);
    assertThat(produced).as("the command was held back: it would write 1 GiB at full speed").isLessThan(32L << 20);
    assertThat(heapGrowth).as("used heap growth").isLessThan(64L << 20);
    assertThat(gone).as("the command (group %d) is gone within 6 s of cancel()", pgid).isTrue();
    Thread.sleep(200);
    assertThat(slow.unrequested).as("onNext calls beyond what the subscriber requested, after cancel").hasValue(0);
    assertThat(slow.error).as("no signal after cancel").isNull();
    assertThat(slow.completed).isFalse();
  }

  @Test
  void aProcessLogStreamResumesAfterCutConnectionsAndDeliversEveryLineOnceInOrder() throws Exception {
    try (ItProxy proxy = new ItProxy(agent.url()); Sandbox client = agent.connect(proxy.uri())) {
      SandboxProcess p = client.startProcess(Command.shell("for i in $(seq 1 200); do echo \"line $i\"; sleep 0.02; done"),
          ProcessOptions.builder().processId("resume-" + IDS.incrementAndGet()).build());
      ItSubscriber<LogEvent> s = ItSubscriber.unbounded();
      client.streamProcessLogs(p.id()).subscribe(s);

      awaitStdout(s, "line 50\n");
      int cutFirst = proxy.cutAll(true);
      awaitStdout(s, "line 120\n");
      int cutSecond = proxy.cutAll(false);
      List<LogEvent> events = s.awaitComplete(Duration.ofSeconds(30));

      String expected = IntStream.rangeClosed(1, 200).mapToObj(i -> "line " + i + "\n").collect(Collectors.joining());
      assertThat(cutFirst).as("connections cut the first time").isPositive();
      assertThat(cutSecond).as("connections cut the second time").isPositive();
      assertThat(ItEvents.logText(events, StdStream.STDOUT)).isEqualTo(expected);
      assertThat(events.get(0)).isInstanceOf(LogEvent.Info.class);
      assertThat(events.get(events.size() - 1)).isInstanceOfSatisfying(LogEvent.Exit.class, exit -> {
        assertThat(exit.status()).isEqualTo(ProcessStatus.COMPLETED);
        assertThat(exit.exitCode()).isZero();
      });
      assertThat(events).filteredOn(e -> e instanceof LogEvent.Info).hasSize(1);
      assertThat(events).filteredOn(e -> e instanceof LogEvent.Exit).hasSize(1);
      assertThat(events).noneMatch(e -> e instanceof LogEvent.Truncated);
      assertThat(s.completions()).isEqualTo(1);
      assertThat(s.errors()).isZero();
    }
  }

  @Test
  void aCutOnAQuietLogStreamCostsExactlyOneReconnectAndRepeatsNothing() throws Exception {
    try (ItProxy proxy = new ItProxy(agent.url()); Sandbox client = agent.connect(proxy.uri())) {
      SandboxProcess p = client.startProcess(Command.shell("echo before; sleep 2; echo after"),
          ProcessOptions.builder().processId("once-" + IDS.incrementAndGet()).build());
      ItSubscriber<LogEvent> s = ItSubscriber.unbounded();
      client.streamProcessLogs(p.id()).subscribe(s);
      awaitStdout(s, "before\n");
      int acceptedBefore = proxy.accepted();

      int cut = proxy.cutAll(false); // while the process is silent: no event is lost or in flight
      List<LogEvent> events = s.awaitComplete(Duration.ofSeconds(30));

      int reconnects = proxy.accepted() - acceptedBefore;
      System.out.printf("[it] quiet log stream cut: %d connection(s) cut, %d reconnect(s)%n", cut, reconnects);
      assertThat(cut).as("the stream's connection was cut").isPositive();
      assertThat(reconnects).as("the stream resumed exactly once").isEqualTo(1);
      assertThat(ItEvents.logText(events, StdStream.STDOUT)).isEqualTo("before\nafter\n");
      assertThat(events).filteredOn(e -> e instanceof LogEvent.Info).hasSize(1);
      assertThat(events).filteredOn(e -> e instanceof LogEvent.Exit).hasSize(1);
      assertThat(s.errors()).isZero();
      assertThat(s.completions()).isEqualTo(1);
    }
  }

  @Test
  void aProcessLogStreamSurvivesAShortOutageWhileItReconnects() throws Exception {
    try (ItProxy proxy = new ItProxy(agent.url()); Sandbox client = agent.connect(proxy.uri())) {
      SandboxProcess p = client.startProcess(Command.shell("for i in $(seq 1 100); do echo \"line $i\"; sleep 0.02; done"),
          ProcessOptions.builder().processId("outage-" + IDS.incrementAndGet()).build());
      ItSubscriber<LogEvent> s = ItSubscriber.unbounded();
      client.streamProcessLogs(p.id()).subscribe(s);
      awaitStdout(s, "line 20\n");

      // The agent is unreachable for 600 ms: well within "a few reconnects, with backoff"
      // (LogCursor: 5 retries, 100 ms doubling, i.e. about 3 s).
      proxy.refuse(true);
      int cut = proxy.cutAll(true);
      int acceptedAtCut = proxy.accepted();
      Thread.sleep(600);
      int acceptedInOutage = proxy.accepted() - acceptedAtCut;
      proxy.refuse(false);

      List<LogEvent> events = s.awaitComplete(Duration.ofSeconds(30));
      int acceptedSinceCut = proxy.accepted() - acceptedAtCut;
      System.out.printf("[it] outage: %d connection(s) cut, %d accepted (and refused) in 600 ms, %d since the cut%n",
          cut, acceptedInOutage, acceptedSinceCut);
      String expected = IntStream.rangeClosed(1, 100).mapToObj(i -> "line " + i + "\n").collect(Collectors.joining());
      assertThat(cut).as("the stream's connection was cut").isPositive();
      assertThat(acceptedInOutage).as("reconnects refused while the agent was unreachable").isPositive();
      assertThat(acceptedSinceCut).as("connections since the cut: refused ones, then the one that resumed")
          .isGreaterThanOrEqualTo(2);
      assertThat(ItEvents.logText(events, StdStream.STDOUT)).isEqualTo(expected);
      assertThat(events.get(events.size() - 1)).isInstanceOf(LogEvent.Exit.class);
    }
  }

  @Test
  void aStreamSilentForLongerThanItsIdleTimeoutEndsWithSandboxTimeoutException() throws Exception {
    // The agent sends a keep-alive every 2 s; a client that expects one every 700 ms takes the
    // connection for dead.
    try (Sandbox impatient = Sandbox.builder().baseUrl(agent.url()).token(agent.token())
        .streamIdleTimeout(Duration.ofMillis(700)).build()) {
      ItSubscriber<ExecEvent> s = ItSubscriber.unbounded();
      long t0 = System.nanoTime();

      impatient.execStream("sleep 30").subscribe(s);
      ExecEvent.Start start = (ExecEvent.Start) s.awaitItem(e -> e instanceof ExecEvent.Start, WAIT);
      Throwable error = s.awaitError(WAIT);

      assertThat(error).isInstanceOf(SandboxTimeoutException.class);
      assertThat((System.nanoTime() - t0) / 1_000_000).isLessThan(5_000);
      assertThat(Await.until(Duration.ofSeconds(6), () -> Procs.groupMembers(start.pid()).isEmpty()))
          .as("the agent noticed the hang-up and killed the command")
          .isTrue();
    }
  }

  @ParameterizedTest(name = "reset={0}")
  @ValueSource(booleans = {true, false})
  void anExecStreamWhoseConnectionIsCutEndsWithSandboxConnectionExceptionNeverComplete(boolean reset)
      throws Exception {
    try (ItProxy proxy = new ItProxy(agent.url()); Sandbox client = agent.connect(proxy.uri())) {
      ItSubscriber<ExecEvent> s = ItSubscriber.unbounded();
      client.execStream("for i in $(seq 1 500); do echo $i; sleep 0.02; done").subscribe(s);
      ExecEvent.Start start = (ExecEvent.Start) s.awaitItem(e -> e instanceof ExecEvent.Start, WAIT);
      s.awaitCount(5, WAIT);

      assertThat(proxy.cutAll(reset)).isPositive();

      Throwable error = s.awaitError(WAIT);
      assertThat(error).isInstanceOf(SandboxConnectionException.class);
      assertThat(s.completions()).isZero();
      assertThat(s.items()).noneMatch(e -> e instanceof ExecEvent.Complete);
      assertThat(Await.until(Duration.ofSeconds(6), () -> Procs.groupMembers(start.pid()).isEmpty()))
          .as("the agent noticed the hang-up and killed the command")
          .isTrue();
      Thread.sleep(200);
      assertThat(s.violations()).isEmpty();
    }
  }

  @Test
  void aStreamOnASilentCommandStaysOpenThanksToKeepAlivesAndCompletes() throws Exception {
    // A keep-alive every 250 ms: the client derives a stream idle timeout of 2 x 250 + 1000 ms,
    // so a command silent for 3 s outlives it only through the keep-alives.
    try (LocalSandbox brisk = LocalSandbox.builder().gracePeriod(Duration.ofMillis(500)).keepAlive(true)
        .agentArgument("--keep-alive-ms=250").start()) {
      ItSubscriber<ExecEvent> s = ItSubscriber.unbounded();
      long t0 = System.nanoTime();

      brisk.execStream("sleep 3; echo woke").subscribe(s);
      List<ExecEvent> events = s.awaitComplete(Duration.ofSeconds(30));

      assertThat((System.nanoTime() - t0) / 1_000_000).isGreaterThanOrEqualTo(2_900);
      assertThat(events).hasSize(3);
      assertThat(events.get(0)).isInstanceOf(ExecEvent.Start.class);
      assertThat(events.get(1)).isInstanceOfSatisfying(ExecEvent.Stdout.class,
          out -> assertThat(out.text()).isEqualTo("woke\n"));
      assertThat(events.get(2)).isInstanceOfSatisfying(ExecEvent.Complete.class,
          done -> assertThat(done.exitCode()).isZero());
    }
  }

  // ---- helpers

  /**
   * Requests one event at a time and pauses after each output chunk, up to a quota; then stops
   * asking. Counts the events it got without having asked for them.
   */
  private static final class SlowSubscriber implements Flow.Subscriber<ExecEvent> {
    final int quota;
    final long pauseMillis;
    final AtomicLong delivered = new AtomicLong();
    final AtomicLong unrequested = new AtomicLong();
    final CountDownLatch quotaReached = new CountDownLatch(1);
    private final AtomicLong requested = new AtomicLong();
    private final AtomicLong received = new AtomicLong();
    volatile Flow.Subscription subscription;
    volatile long pid;
    volatile Throwable error;
    volatile boolean completed;
    private int chunks;

    SlowSubscriber(int quota, long pauseMillis) {
      this.quota = quota;
      this.pauseMillis = pauseMillis;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription = s;
      requestOne();
    }

    /** Counts the demand before signalling it, so an event it brings can never look unrequested. */
    private void requestOne() {
      requested.incrementAndGet();
      subscription.request(1);
    }

    @Override
    public void onNext(ExecEvent e) {
      if (received.incrementAndGet() > requested.get()) {
        unrequested.incrementAndGet();
      }
      if (e instanceof ExecEvent.Start) {
        pid = ((ExecEvent.Start) e).pid();
      } else if (e instanceof ExecEvent.Stdout) {
        delivered.addAndGet(((ExecEvent.Stdout) e).bytes());
        if (++chunks >= quota) {
          quotaReached.countDown();
          return; // stop asking
        }
        try {
          Thread.sleep(pauseMillis);
        } catch (InterruptedException ignored) {
          Thread.currentThread().interrupt();
        }
      }
      requestOne();
    }

    @Override
    public void onError(Throwable t) {
      error = t;
    }

    @Override
    public void onComplete() {
      completed = true;
    }
  }

  private static void awaitStdout(ItSubscriber<LogEvent> s, String text) throws InterruptedException {
    boolean seen = Await.until(Duration.ofSeconds(20), () -> {
      StringBuilder out = new StringBuilder();
      for (LogEvent e : s.items()) {
        if (e instanceof LogEvent.Output && ((LogEvent.Output) e).stream() == StdStream.STDOUT) {
          out.append(((LogEvent.Output) e).text());
        }
      }
      return out.indexOf(text) >= 0;
    });
    assertThat(seen).as("the stream delivered %s", text.strip()).isTrue();
  }

  private static void writeFile(String name, String content) {
    sandbox.exec(Command.of("sh", "-c", "cat > \"$0\"", name), ExecOptions.builder().stdin(content).build())
        .requireSuccess();
  }

  private static long readLong(Path file) throws Exception {
    String s = Files.exists(file) ? Files.readString(file).strip() : "";
    return s.isEmpty() ? 0 : Long.parseLong(s);
  }

  private static long usedHeapAfterGc() throws InterruptedException {
    for (int i = 0; i < 2; i++) {
      System.gc();
      Thread.sleep(100);
    }
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }
}
