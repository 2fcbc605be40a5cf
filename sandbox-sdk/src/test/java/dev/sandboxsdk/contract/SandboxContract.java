package dev.sandboxsdk.contract;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sandboxsdk.Checkpoint;
import dev.sandboxsdk.Command;
import dev.sandboxsdk.CommandFailedException;
import dev.sandboxsdk.ExecEvent;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.ExposedPort;
import dev.sandboxsdk.FileEntry;
import dev.sandboxsdk.FileEvent;
import dev.sandboxsdk.FileEventType;
import dev.sandboxsdk.FileType;
import dev.sandboxsdk.GitCheckout;
import dev.sandboxsdk.GitCheckoutOptions;
import dev.sandboxsdk.LogEvent;
import dev.sandboxsdk.LogMatch;
import dev.sandboxsdk.LogRange;
import dev.sandboxsdk.OutputListener;
import dev.sandboxsdk.PortWaitOptions;
import dev.sandboxsdk.ProcessExitedException;
import dev.sandboxsdk.ProcessInfo;
import dev.sandboxsdk.ProcessLogs;
import dev.sandboxsdk.ProcessNotFoundException;
import dev.sandboxsdk.ProcessOptions;
import dev.sandboxsdk.ProcessStatus;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxAuthException;
import dev.sandboxsdk.SandboxConflictException;
import dev.sandboxsdk.SandboxConnectionException;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxFileNotFoundException;
import dev.sandboxsdk.SandboxFiles;
import dev.sandboxsdk.SandboxInvalidRequestException;
import dev.sandboxsdk.SandboxNotFoundException;
import dev.sandboxsdk.SandboxPermissionException;
import dev.sandboxsdk.SandboxProcess;
import dev.sandboxsdk.SandboxTimeoutException;
import dev.sandboxsdk.Signal;
import dev.sandboxsdk.StdStream;
import dev.sandboxsdk.Terminal;
import dev.sandboxsdk.TerminalOptions;
import dev.sandboxsdk.TerminalOutput;
import dev.sandboxsdk.WatchOptions;
import dev.sandboxsdk.testkit.Await;
import java.net.CookieManager;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * Every {@link Sandbox} method against a real agent: what a user of the SDK relies on, checked
 * against real processes and files where the promise is about them. Provider-neutral: a subclass
 * supplies the running sandbox as a {@link SandboxTarget}, and the suite looks at processes and
 * files only through the target's {@link SandboxProbe}, in the sandbox's own pids and paths.
 *
 * <p><b>Plugging in a provider.</b> Depend on this test-jar
 * ({@code dev.sandboxsdk:sandbox-sdk:${project.version}} with {@code <type>test-jar</type>} and
 * {@code <scope>test</scope>}) and on {@code junit-jupiter} and {@code assertj-core} in test scope
 * (a test-jar brings no dependencies of its own), let failsafe run {@code *IT}, and start the
 * agent with {@link #agentArguments()}, since the expectations depend on them:
 *
 * <pre>{@code
 * class ContainerSandboxContractIT extends SandboxContract {
 *   @Override
 *   protected SandboxTarget startTarget() {
 *     AgentContainer c = AgentContainer.start(agentArguments());  // your container; you know its token
 *     Sandbox sandbox = Sandbox.connect(c.baseUrl(), c.token());   // or your own Sandbox implementation
 *     // "/workspace": as commands in the container see it; pids and files are looked at through sandbox.exec(...)
 *     return SandboxTarget.of(sandbox, c.baseUrl(), "/workspace",
 *         () -> OwnAgent.connect(c.baseUrl(), c.token(), "/workspace", () -> { }),
 *         () -> { sandbox.close(); c.stop(); });
 *     // or implement SandboxTarget yourself, e.g. to look from the host with a probe() of your own
 *   }
 * }
 * }</pre>
 *
 * <p>The suite starts the target once for all its tests ({@link TestInstance.Lifecycle#PER_CLASS})
 * and runs them one at a time; each test kills what it starts. Tests that close or destroy a
 * client do that to a client of their own ({@link SandboxTarget#startOwnAgent()}), never to
 * {@link SandboxTarget#sandbox()}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
public abstract class SandboxContract {
  /** Time between SIGTERM and SIGKILL ({@code --grace-ms}) that the suite's timings assume. */
  public static final Duration GRACE_PERIOD = Duration.ofMillis(500);

  /** The agent's log window ({@code --log-window-bytes}) that the truncation tests assume. */
  public static final int LOG_WINDOW_BYTES = 4096;

  /**
   * The agent options other than the grace period that the suite depends on, as container-agent
   * arguments: records of auto-cleanup processes are dropped 300 ms after the end, so that can be
   * watched; a {@value #LOG_WINDOW_BYTES}-byte log window, so truncation can be watched; keep-alive
   * bytes every 300 ms, so the agent notices hung-up clients within 0.6 s, not 4 s.
   */
  public static final List<String> AGENT_OPTIONS = List.of(
      "--auto-cleanup-delay-ms=300",
      "--log-window-bytes=" + LOG_WINDOW_BYTES,
      "--keep-alive-ms=300");

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final AtomicInteger IDS = new AtomicInteger();
  private static final int WINDOW = LOG_WINDOW_BYTES;

  private SandboxTarget target;
  private Sandbox sandbox;
  private SandboxProbe probe;
  private String ws;

  /**
   * Every agent argument the suite depends on: {@code --grace-ms} for {@link #GRACE_PERIOD}, then
   * {@link #AGENT_OPTIONS}. The agents a target starts get these.
   */
  public static List<String> agentArguments() {
    return Stream.concat(Stream.of("--grace-ms=" + GRACE_PERIOD.toMillis()), AGENT_OPTIONS.stream())
        .collect(Collectors.toUnmodifiableList());
  }

  /**
   * Starts the sandbox under test: its agent runs with {@link #agentArguments()} and is not stopped
   * for idleness during the run. Called once, before the first test; the suite closes the target
   * after the last one.
   */
  protected abstract SandboxTarget startTarget() throws Exception;

  /**
   * Whether a process that a command leaves running (started with {@code &}) lives on after the
   * command has finished, until kill-all or shutdown stops it. True for the agent's default; false
   * where each command has a PID namespace of its own that ends with it (a local sandbox isolated by
   * bubblewrap), where such a process is already gone and {@code $!} is not a host pid.
   */
  protected boolean leftoversOutliveTheirCommand() {
    return true;
  }

  /**
   * How many processes the sandbox puts in each command's process group besides the command's
   * own: 0 for the agent's default, where the reported pid is the command's; 2 for a local sandbox
   * isolated by bubblewrap (its outer process, which has the reported pid, and the namespace's
   * init).
   */
  protected int wrappersPerCommand() {
    return 0;
  }

  @BeforeAll
  final void startSandbox() throws Exception {
    target = startTarget();
    sandbox = target.sandbox();
    ws = target.workspace();
    probe = target.probe();
    System.out.printf("[it] contract target %s, workspace %s, probe %s%n", target, ws, probe);
  }

  @AfterAll
  final void closeSandbox() throws Exception {
    if (target != null) {
      target.close();
    }
  }

  // ---- exec

  @Test
  void execRunsAShellCommandLineAndCapturesBothStreams() {
    ExecResult r = sandbox.exec("echo hello; echo oops >&2");

    assertThat(r.exitCode()).isZero();
    assertThat(r.isSuccess()).isTrue();
    assertThat(r.stdout()).isEqualTo("hello\n");
    assertThat(r.stderr()).isEqualTo("oops\n");
    assertThat(r.command()).isEqualTo("echo hello; echo oops >&2");
    assertThat(r.timedOut()).isFalse();
    assertThat(r.truncated()).isFalse();
    assertThat(r.signal()).isNull();
    assertThat(r.pid()).isPositive();
    assertThat(r.duration().isNegative()).isFalse();
    assertThat(r.requireSuccess()).isSameAs(r);
  }

  @Test
  void execRunsAnArgvCommandWithoutAShellSoNothingIsInterpreted() {
    ExecResult r = sandbox.exec(Command.of("printf", "%s|", "two words", "$HOME", "; echo injected", "*", "`id`"), ExecOptions.defaults());

    assertThat(r.exitCode()).isZero();
    assertThat(r.stdout()).isEqualTo("two words|$HOME|; echo injected|*|`id`|");
    assertThat(r.command()).as("argv rendered with shell quoting").startsWith("printf ").contains("'two words'");
  }

  @Test
  void execSetsAndUnsetsEnvironmentVariables() {
    // env(1) prints the environment exactly as the command got it (a shell would invent a default PATH)
    Command env = Command.of("/usr/bin/env");
    List<String> plain = sandbox.exec(env, ExecOptions.defaults()).stdout().lines().collect(Collectors.toList());
    assertThat(plain).anyMatch(line -> line.startsWith("PATH=")).noneMatch(line -> line.startsWith("IT_GREETING="));

    ExecOptions options = ExecOptions.builder()
        .env("IT_GREETING", "h\u00e9llo w\u00f6rld $x 'q'")
        .unsetEnv("PATH")
        .build();
    ExecResult changed = sandbox.exec(env, options);

    assertThat(changed.exitCode()).isZero();
    assertThat(changed.stdout().lines())
        .contains("IT_GREETING=h\u00e9llo w\u00f6rld $x 'q'")
        .noneMatch(line -> line.startsWith("PATH="));
    assertThat(sandbox.exec(Command.shell("echo \"$IT_GREETING\""), options).stdout()).isEqualTo("h\u00e9llo w\u00f6rld $x 'q'\n");
  }

  @Test
  void execRunsInAWorkingDirectoryRelativeToTheWorkspaceOrAbsolute() {
    sandbox.exec("mkdir -p sub/dir").requireSuccess();
    String real = probe.realPath(ws);

    assertThat(sandbox.exec("pwd -P").stdout()).isEqualTo(real + "\n");
    assertThat(sandbox.exec(Command.shell("pwd -P"), ExecOptions.builder().cwd("sub/dir").build()).stdout())
        .isEqualTo(real + "/sub/dir\n");
    assertThat(sandbox.exec(Command.shell("pwd -P"), ExecOptions.builder().cwd("/tmp").build()).stdout())
        .isEqualTo(probe.realPath("/tmp") + "\n");
  }

  @Test
  void execWritesStdinToTheCommandAndThenClosesIt() {
    String text = "first line\nzweite Zeile \u00e9\u20ac\ud83d\ude00\nno newline at the end";

    ExecResult fed = sandbox.exec(Command.of("cat"), ExecOptions.builder().stdin(text).build());
    ExecResult counted = sandbox.exec(Command.of("wc", "-c"), ExecOptions.builder().stdin(text).build());
    ExecResult none = sandbox.exec(Command.of("cat"), ExecOptions.builder().timeout(Duration.ofSeconds(5)).build());

    assertThat(fed.stdout()).isEqualTo(text);
    assertThat(counted.stdout().strip()).isEqualTo(Integer.toString(text.getBytes(StandardCharsets.UTF_8).length));
    assertThat(none.timedOut()).as("without stdin, cat sees end of file at once").isFalse();
    assertThat(none.stdout()).isEmpty();
  }

  @Test
  void aNonZeroExitIsDataAndRequireSuccessTurnsItIntoCommandFailedException() {
    ExecResult r = sandbox.exec("echo partial; echo broken >&2; exit 3");

    assertThat(r.exitCode()).isEqualTo(3);
    assertThat(r.isSuccess()).isFalse();
    assertThat(r.stdout()).isEqualTo("partial\n");
    assertThatThrownBy(r::requireSuccess).isInstanceOfSatisfying(CommandFailedException.class, e -> {
      assertThat(e.result()).isSameAs(r);
      assertThat(e.code()).isEqualTo("COMMAND_FAILED");
      assertThat(e.getMessage()).contains("exited with 3").contains("broken");
    });
    assertThat(sandbox.exec("no-such-program-" + unique("x")).exitCode())
        .as("a shell reports a missing program as exit code 127, not as an exception")
        .isEqualTo(127);
  }

  @Test
  void execTimeoutKillsTheCommandAndItsChildrenAndReports124() throws Exception {
    String tag = unique("timeout");
    long t0 = System.nanoTime();

    ExecResult r = sandbox.exec(Command.shell("sleep 300 & echo $! > " + tag + ".child; echo $$ > " + tag + ".shell; echo before; wait"),
        ExecOptions.builder().timeout(Duration.ofMillis(700)).build());

    long took = millisSince(t0);
    assertThat(r.timedOut()).isTrue();
    assertThat(r.exitCode()).isEqualTo(124);
    assertThat(r.isSuccess()).isFalse();
    assertThat(r.stdout()).as("output produced before the timeout is kept").isEqualTo("before\n");
    assertThat(took).isBetween(600L, 10_000L);
    assertThatThrownBy(r::requireSuccess).isInstanceOf(CommandFailedException.class).hasMessageContaining("timed out");
    long shell = probe.readPid(tag + ".shell", WAIT);
    long child = probe.readPid(tag + ".child", WAIT);
    if (wrappersPerCommand() == 0) {
      assertThat(shell).as("ExecResult.pid is the command's pid").isEqualTo(r.pid());
    }
    assertThat(await(Duration.ofSeconds(3), () -> probe.aliveAmong(List.of(shell, child)).isEmpty()))
        .as("shell %d and its child %d are gone after the timeout", shell, child)
        .isTrue();
  }

  @Test
  void execKeepsAtMostMaxOutputBytesPerStreamAndSaysItTruncated() {
    ExecResult big = sandbox.exec(Command.shell("head -c 100000 /dev/zero | tr '\\0' x; echo done >&2"),
        ExecOptions.builder().maxOutputBytes(1000).build());
    ExecResult fits = sandbox.exec(Command.shell("printf 12345"), ExecOptions.builder().maxOutputBytes(5).build());

    assertThat(big.exitCode()).isZero();
    assertThat(big.truncated()).isTrue();
    assertThat(big.stdout()).hasSize(1000).matches("x{1000}");
    assertThat(big.stderr()).isEqualTo("done\n");
    assertThat(fits.truncated()).isFalse();
    assertThat(fits.stdout()).isEqualTo("12345");
  }

  @Test
  void execOfAnArgvProgramThatDoesNotExistThrowsSandboxNotFoundException() {
    assertThatThrownBy(() -> sandbox.exec(Command.of("no-such-program-" + unique("x"), "arg"), ExecOptions.defaults()))
        .isInstanceOfSatisfying(SandboxNotFoundException.class, e -> {
          assertThat(e).isNotInstanceOf(ProcessNotFoundException.class);
          assertThat(e.code()).isEqualTo("COMMAND_NOT_FOUND");
          assertThat(e.httpStatus()).isEqualTo(404);
        });
  }

  @Test
  void execInAWorkingDirectoryThatDoesNotExistThrowsSandboxInvalidRequestException() {
    assertThatThrownBy(() -> sandbox.exec(Command.shell("pwd"), ExecOptions.builder().cwd("no/such/dir").build()))
        .isInstanceOfSatisfying(SandboxInvalidRequestException.class, e -> {
          assertThat(e.code()).isEqualTo("VALIDATION_FAILED");
          assertThat(e.httpStatus()).isEqualTo(400);
        });
  }

  @Test
  void execHandsOutputToTheListenerInOrderAndTheResultHoldsTheSame() {
    List<String> chunks = Collections.synchronizedList(new ArrayList<>());
    StringBuilder out = new StringBuilder();
    StringBuilder err = new StringBuilder();
    OutputListener listener = (stream, text) -> {
      chunks.add(text);
      (stream == StdStream.STDOUT ? out : err).append(text);
    };

    ExecResult r = sandbox.exec(Command.shell("for i in $(seq 1 40); do echo out $i; echo err $i >&2; sleep 0.01; done; exit 2"),
        ExecOptions.builder().onOutput(listener).build());

    String expectedOut = IntStream.rangeClosed(1, 40).mapToObj(i -> "out " + i + "\n").collect(Collectors.joining());
    String expectedErr = IntStream.rangeClosed(1, 40).mapToObj(i -> "err " + i + "\n").collect(Collectors.joining());
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(out).hasToString(expectedOut);
    assertThat(err).hasToString(expectedErr);
    assertThat(r.stdout()).isEqualTo(expectedOut);
    assertThat(r.stderr()).isEqualTo(expectedErr);
    assertThat(chunks).as("the output arrived in several chunks while the command ran").hasSizeGreaterThan(2);
    assertThat(r.pid()).isPositive();
  }

  @Test
  void execWithAListenerStillTruncatesTheResultButTheListenerSeesEverything() {
    StringBuilder seen = new StringBuilder();

    ExecResult r = sandbox.exec(Command.shell("head -c 100000 /dev/zero | tr '\\0' x"),
        ExecOptions.builder().maxOutputBytes(1000).onOutput((s, text) -> seen.append(text)).build());

    assertThat(seen.length()).isEqualTo(100_000);
    assertThat(r.stdout()).hasSize(1000);
    assertThat(r.truncated()).isTrue();
  }

  @Test
  void aListenerThatThrowsAbortsExecAndTheCommandIsKilled() throws Exception {
    String tag = unique("listener");
    IllegalStateException boom = new IllegalStateException("the listener says no");
    long t0 = System.nanoTime();

    assertThatThrownBy(() -> sandbox.exec(Command.shell("echo $$ > " + tag + ".pid; echo first; sleep 300"),
        ExecOptions.builder().onOutput((s, text) -> {
          throw boom;
        }).build()))
        .isInstanceOf(SandboxException.class)
        .satisfies(e -> assertThat(e.getCause()).isSameAs(boom));

    assertThat(millisSince(t0)).isLessThan(10_000);
    long pid = probe.readPid(tag + ".pid", WAIT);
    assertThat(await(Duration.ofSeconds(6), () -> probe.groupMembers(pid).isEmpty()))
        .as("the command (group %d) is killed after the listener threw", pid)
        .isTrue();
  }

  @Test
  void interruptingABlockedExecThrowsRestoresTheFlagAndKillsTheCommand() throws Exception {
    String tag = unique("interrupt");
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    AtomicBoolean flagRestored = new AtomicBoolean();
    Thread caller = new Thread(() -> {
      try {
        sandbox.exec("echo $$ > " + tag + ".pid; sleep 300");
      } catch (Throwable e) {
        thrown.set(e);
        flagRestored.set(Thread.currentThread().isInterrupted());
      }
    }, "it-interrupted-exec");
    caller.start();
    long pid = probe.readPid(tag + ".pid", WAIT);
    long t0 = System.nanoTime();

    caller.interrupt();
    caller.join(10_000);

    long returned = millisSince(t0);
    assertThat(caller.isAlive()).as("exec returned within 10 s of the interrupt").isFalse();
    assertThat(thrown.get()).isInstanceOf(SandboxException.class);
    assertThat(flagRestored).as("the interrupt flag is restored").isTrue();
    assertThat(await(Duration.ofSeconds(9), () -> probe.groupMembers(pid).isEmpty()))
        .as("the command (group %d) is killed after the interrupt", pid)
        .isTrue();
    System.out.printf("[it] interrupted exec returned after %d ms, command gone after %d ms%n", returned,
        millisSince(t0));
  }

  // ---- execAsync

  @Test
  void execAsyncCompletesWithTheResult() throws Exception {
    CompletableFuture<ExecResult> f = sandbox.execAsync("sleep 0.2; echo async");

    ExecResult r = f.get(10, TimeUnit.SECONDS);

    assertThat(r.exitCode()).isZero();
    assertThat(r.stdout()).isEqualTo("async\n");
  }

  @Test
  void execAsyncOfAMissingProgramCompletesExceptionally() {
    CompletableFuture<ExecResult> f = sandbox.execAsync(Command.of("no-such-program-" + unique("x")), ExecOptions.defaults());

    assertThatThrownBy(() -> f.get(10, TimeUnit.SECONDS))
        .isInstanceOf(ExecutionException.class)
        .cause()
        .isInstanceOf(SandboxNotFoundException.class);
  }

  @Test
  void twentyConcurrentExecAsyncCallsAllSucceedAndRunAtTheSameTime() throws Exception {
    long t0 = System.nanoTime();
    List<CompletableFuture<ExecResult>> futures = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      futures.add(sandbox.execAsync("sleep 1; echo job " + i));
    }

    CompletableFuture.allOf(futures.toArray(new CompletableFuture<?>[0])).get(30, TimeUnit.SECONDS);

    long took = millisSince(t0);
    Set<Long> pids = new HashSet<>();
    for (int i = 0; i < 20; i++) {
      ExecResult r = futures.get(i).join();
      assertThat(r.exitCode()).isZero();
      assertThat(r.stdout()).isEqualTo("job " + i + "\n");
      pids.add(r.pid());
    }
    assertThat(pids).hasSize(20);
    // One after another would take 20 s; OkHttp's default limit of 5 calls per host, about 4 s.
    assertThat(took).as("20 commands of 1 s ran concurrently, not one after another").isLessThan(3_000);
    System.out.printf("[it] 20 concurrent execAsync of 'sleep 1' took %d ms%n", took);
  }

  @Test
  void cancellingExecAsyncKillsTheRemoteProcess() throws Exception {
    String tag = unique("cancel");
    CompletableFuture<ExecResult> f =
        sandbox.execAsync("sleep 300 & echo $! > " + tag + ".child; echo $$ > " + tag + ".shell; wait");
    long shell = probe.readPid(tag + ".shell", WAIT);
    long child = probe.readPid(tag + ".child", WAIT);
    assertThat(probe.alive(shell)).isTrue();
    long t0 = System.nanoTime();

    assertThat(f.cancel(true)).isTrue();

    assertThat(f).isCancelled();
    assertThatThrownBy(f::join).isInstanceOf(CancellationException.class);
    boolean gone = await(Duration.ofSeconds(6), () -> probe.aliveAmong(List.of(shell, child)).isEmpty());
    long took = millisSince(t0);
    System.out.printf("[it] execAsync cancel(true): remote shell and child gone after %d ms%n", took);
    assertThat(gone).as("shell %d and child %d are gone within 6 s of cancel", shell, child).isTrue();
  }

  @Test
  void cancellingExecAsyncWithAListenerKillsTheRemoteProcess() throws Exception {
    String tag = unique("cancel-listener");
    List<String> seen = Collections.synchronizedList(new ArrayList<>());
    CompletableFuture<ExecResult> f = sandbox.execAsync(Command.shell("echo $$ > " + tag + ".pid; echo hi; sleep 300"),
        ExecOptions.builder().onOutput((s, text) -> seen.add(text)).build());
    long pid = probe.readPid(tag + ".pid", WAIT);
    assertThat(await(WAIT, () -> !seen.isEmpty())).isTrue();
    long t0 = System.nanoTime();

    assertThat(f.cancel(true)).isTrue();

    boolean gone = await(Duration.ofSeconds(6), () -> probe.groupMembers(pid).isEmpty());
    System.out.printf("[it] execAsync (with listener) cancel: remote process gone after %d ms%n", millisSince(t0));
    assertThat(gone).as("the command (group %d) is gone within 6 s of cancel", pid).isTrue();
  }

  // ---- execStream

  @Test
  void execStreamPublishesStartThenContiguousOutputThenComplete() throws Exception {
    String command = "echo one; echo two >&2; sleep 0.1; echo 'caf\u00e9 \u20ac \ud83d\ude00'; echo three; exit 3";
    ItSubscriber<ExecEvent> s = ItSubscriber.oneByOne();

    sandbox.execStream(command).subscribe(s);
    List<ExecEvent> events = s.awaitComplete(WAIT);

    assertThat(events.get(0)).isInstanceOfSatisfying(ExecEvent.Start.class, start -> {
      assertThat(start.pid()).isPositive();
      assertThat(start.command()).isEqualTo(command);
    });
    assertThat(events.get(events.size() - 1)).isInstanceOfSatisfying(ExecEvent.Complete.class, done -> {
      assertThat(done.exitCode()).isEqualTo(3);
      assertThat(done.isSuccess()).isFalse();
      assertThat(done.timedOut()).isFalse();
      assertThat(done.signal()).isNull();
    });
    List<ExecEvent> middle = events.subList(1, events.size() - 1);
    assertThat(middle).allMatch(e -> e instanceof ExecEvent.Stdout || e instanceof ExecEvent.Stderr);
    String out = checkContiguous(middle, ExecEvent.Stdout.class);
    String err = checkContiguous(middle, ExecEvent.Stderr.class);
    assertThat(out).isEqualTo("one\ncaf\u00e9 \u20ac \ud83d\ude00\nthree\n");
    assertThat(err).isEqualTo("two\n");
  }

  @Test
  void execStreamReportsATimeoutInItsCompleteEvent() throws Exception {
    ItSubscriber<ExecEvent> s = ItSubscriber.unbounded();

    sandbox.execStream(Command.shell("sleep 300"), ExecOptions.builder().timeout(Duration.ofMillis(500)).build())
        .subscribe(s);
    List<ExecEvent> events = s.awaitComplete(WAIT);

    assertThat(events.get(events.size() - 1)).isInstanceOfSatisfying(ExecEvent.Complete.class, done -> {
      assertThat(done.timedOut()).isTrue();
      assertThat(done.exitCode()).isEqualTo(124);
    });
  }

  @Test
  void execStreamHonoursStdinEnvAndCwd() throws Exception {
    sandbox.exec("mkdir -p streamdir").requireSuccess();
    ItSubscriber<ExecEvent> s = ItSubscriber.unbounded();

    sandbox.execStream(Command.shell("cat; echo \"[$IT_STREAM]\"; pwd -P"),
        ExecOptions.builder().stdin("from stdin\n").env("IT_STREAM", "set").cwd("streamdir").build()).subscribe(s);
    List<ExecEvent> events = s.awaitComplete(WAIT);

    String out = checkContiguous(events, ExecEvent.Stdout.class);
    assertThat(out).isEqualTo("from stdin\n[set]\n" + probe.realPath(ws) + "/streamdir\n");
  }

  @Test
  void invalidUtf8BecomesReplacementCharactersAndOffsetsCountRawBytes() throws Exception {
    ExecResult r = sandbox.exec("printf 'a\\377b\\n'");
    ItSubscriber<ExecEvent> s = ItSubscriber.unbounded();

    sandbox.execStream("printf 'a\\377b\\n'; sleep 0.1; printf 'c\\n'").subscribe(s);
    List<ExecEvent> events = s.awaitComplete(WAIT);

    assertThat(r.stdout()).isEqualTo("a\ufffdb\n");
    StringBuilder text = new StringBuilder();
    long next = 0;
    for (ExecEvent e : events) {
      if (e instanceof ExecEvent.Stdout) {
        ExecEvent.Stdout out = (ExecEvent.Stdout) e;
        assertThat(out.offset()).isEqualTo(next);
        next = out.offset() + out.bytes();
        text.append(out.text());
      }
    }
    assertThat(text).hasToString("a\ufffdb\nc\n");
    assertThat(next).as("raw bytes, not the UTF-8 length of the text").isEqualTo(6);
  }

  @Test
  void execStreamRunsNothingUntilSubscribedAndRefusesASecondSubscriber() throws Exception {
    String marker = unique("lazy");
    Flow.Publisher<ExecEvent> publisher = sandbox.execStream("touch " + marker);
    Thread.sleep(300);
    assertThat(probe.exists(marker)).as("nothing ran before subscribe").isFalse();

    ItSubscriber<ExecEvent> first = ItSubscriber.unbounded();
    publisher.subscribe(first);
    first.awaitComplete(WAIT);
    assertThat(probe.exists(marker)).as("it ran once subscribed").isTrue();

    ItSubscriber<ExecEvent> second = ItSubscriber.unbounded();
    publisher.subscribe(second);
    assertThat(second.awaitError(WAIT)).isInstanceOf(IllegalStateException.class);
    assertThat(second.items()).isEmpty();
  }

  // ---- background processes through the Sandbox

  @Test
  void startProcessReturnsAHandleAndTheAgentListsAndFiltersIt() throws Exception {
    String id = unique("listed");
    SandboxProcess running = sandbox.startProcess(Command.shell("sleep 300"), withId(id));
    try {
      assertThat(running.id()).isEqualTo(id);
      assertThat(running.pid()).isPositive();
      assertThat(running.command()).isEqualTo("sleep 300");
      assertThat(sandbox.getProcess(id)).hasValueSatisfying(info -> {
        assertThat(info.id()).isEqualTo(id);
        assertThat(info.pid()).isEqualTo(running.pid());
        assertThat(info.status()).isEqualTo(ProcessStatus.RUNNING);
        assertThat(info.isRunning()).isTrue();
        assertThat(info.startTime()).isNotNull();
        assertThat(info.endTime()).isNull();
        assertThat(info.exitCode()).isNull();
        assertThat(info.argv()).isEmpty();
      });

      String doneId = unique("listed-done");
      SandboxProcess done = sandbox.startProcess(Command.of("true"), withId(doneId));
      done.waitForExit(WAIT);

      assertThat(ids(sandbox.listProcesses())).as("oldest first").containsSubsequence(id, doneId);
      assertThat(ids(inStatus(ProcessStatus.RUNNING))).contains(id).doesNotContain(doneId);
      assertThat(ids(inStatus(ProcessStatus.COMPLETED))).contains(doneId).doesNotContain(id);
      assertThat(sandbox.getProcess(doneId)).hasValueSatisfying(info -> {
        assertThat(info.status()).isEqualTo(ProcessStatus.COMPLETED);
        assertThat(info.exitCode()).isZero();
        assertThat(info.argv()).containsExactly("true");
        assertThat(info.endTime()).isNotNull();
      });
      assertThat(sandbox.getProcess("no-such-process")).isEmpty();
    } finally {
      running.kill(Signal.SIGKILL);
    }
  }

  @Test
  void attachProcessReturnsAWorkingHandleToAnExistingProcess() throws Exception {
    String id = unique("attach");
    SandboxProcess original = sandbox.startProcess(Command.shell("echo attached-ready; sleep 300"), withId(id));

    SandboxProcess attached = sandbox.attachProcess(id);

    assertThat(attached.id()).isEqualTo(id);
    assertThat(attached.pid()).isEqualTo(original.pid());
    assertThat(attached.command()).isEqualTo(original.command());
    assertThat(attached.waitForLog(Pattern.compile("attached-ready"), WAIT).line()).isEqualTo("attached-ready");
    attached.kill();
    assertThat(original.waitForExit(WAIT).status()).isEqualTo(ProcessStatus.KILLED);
    assertThatThrownBy(() -> sandbox.attachProcess("no-such-process"))
        .isInstanceOfSatisfying(ProcessNotFoundException.class, e -> {
          assertThat(e.code()).isEqualTo("PROCESS_NOT_FOUND");
          assertThat(e.httpStatus()).isEqualTo(404);
        });
  }

  @Test
  void killProcessWithSigkillEndsAProcessThatIgnoresSigterm() throws Exception {
    // It reports a SIGTERM instead of dying of it, so a SIGTERM sent in place of SIGKILL (which the
    // agent would escalate after the grace period, ending the same way) shows.
    SandboxProcess p = sandbox.startProcess(
        Command.shell("trap 'echo got-TERM' TERM; echo ready; while :; do sleep 0.05; done"), withId(unique("kill9")));
    p.waitForLog(Pattern.compile("ready"), WAIT);

    sandbox.killProcess(p.id(), Signal.SIGKILL);
    ProcessInfo end = p.waitForExit(WAIT);

    assertThat(p.logs().stdout()).as("only SIGKILL was sent").doesNotContain("got-TERM");
    assertThat(end.status()).isEqualTo(ProcessStatus.KILLED);
    assertThat(end.exitCode()).isEqualTo(137);
    assertThat(end.signal()).isEqualTo(Signal.SIGKILL);
    assertThat(await(Duration.ofSeconds(2), () -> probe.groupMembers(p.pid()).isEmpty())).isTrue();
    assertThatCode(() -> sandbox.killProcess(p.id(), Signal.SIGKILL))
        .as("killing a finished process succeeds")
        .doesNotThrowAnyException();
    assertThatThrownBy(() -> sandbox.killProcess("no-such-process", Signal.SIGKILL))
        .isInstanceOf(ProcessNotFoundException.class);
  }

  @Test
  void killAllProcessesKillsEveryRunningBackgroundProcessAndCountsThem() throws Exception {
    sandbox.killAllProcesses(); // a clean slate, whatever earlier tests left
    List<SandboxProcess> running = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      running.add(sandbox.startProcess(Command.shell("sleep 300"), withId(unique("killall"))));
    }
    SandboxProcess finished = sandbox.startProcess(Command.shell("true"), withId(unique("killall-done")));
    finished.waitForExit(WAIT);
    long leftover = Long.parseLong(sandbox.exec("sleep 300 > /dev/null 2>&1 & echo $!").stdout().strip());
    if (leftoversOutliveTheirCommand()) {
      assertThat(probe.alive(leftover)).as("exec's leftover child lives on").isTrue();
    }

    int killed = sandbox.killAllProcesses();

    assertThat(killed).isEqualTo(3);
    if (leftoversOutliveTheirCommand()) {
      assertThat(await(Duration.ofSeconds(1), () -> !probe.alive(leftover)))
          .as("the child %d that an exec left behind is killed too", leftover)
          .isTrue();
    }
    for (SandboxProcess p : running) {
      assertThat(p.status()).isEqualTo(ProcessStatus.KILLED);
      assertThat(await(Duration.ofSeconds(1), () -> !probe.alive(p.pid())))
          .as("pid %d is gone once killAllProcesses returned", p.pid())
          .isTrue();
    }
    assertThat(finished.status()).isEqualTo(ProcessStatus.COMPLETED);
    assertThat(inStatus(ProcessStatus.RUNNING)).isEmpty();
  }

  @Test
  void getProcessLogsPagesThroughTheOutputWithLogRanges() throws Exception {
    SandboxProcess p = sandbox.startProcess(
        Command.shell("printf abcdefghijklmnopqrstuvwxyz; printf ERR >&2"), withId(unique("logs")));
    p.waitForExit(WAIT);

    ProcessLogs first = sandbox.getProcessLogs(p.id(), LogRange.all().withMaxBytes(10));
    ProcessLogs second = sandbox.getProcessLogs(p.id(), first.next().withMaxBytes(10));
    ProcessLogs third = sandbox.getProcessLogs(p.id(), second.next().withMaxBytes(10));
    ProcessLogs all = sandbox.getProcessLogs(p.id());

    assertThat(first.processId()).isEqualTo(p.id());
    assertThat(first.stdout()).isEqualTo("abcdefghij");
    assertThat(first.stdoutOffset()).isZero();
    assertThat(first.stdoutNextOffset()).isEqualTo(10);
    assertThat(first.stderr()).isEqualTo("ERR");
    assertThat(first.stderrNextOffset()).isEqualTo(3);
    assertThat(first.complete()).isFalse();
    assertThat(second.stdout()).isEqualTo("klmnopqrst");
    assertThat(second.stdoutOffset()).isEqualTo(10);
    assertThat(second.stderr()).isEmpty();
    assertThat(second.stderrOffset()).isEqualTo(3);
    assertThat(second.complete()).isFalse();
    assertThat(third.stdout()).isEqualTo("uvwxyz");
    assertThat(third.stdoutNextOffset()).isEqualTo(26);
    assertThat(third.complete()).isTrue();
    assertThat(third.truncated()).isFalse();
    assertThat(third.status()).isEqualTo(ProcessStatus.COMPLETED);
    assertThat(all.stdout()).isEqualTo("abcdefghijklmnopqrstuvwxyz");
    assertThat(all.stderr()).isEqualTo("ERR");
    assertThat(all.complete()).isTrue();
    ItSubscriber<LogEvent> rest = ItSubscriber.unbounded();
    sandbox.streamProcessLogs(p.id(), first.next()).subscribe(rest);
    List<LogEvent> afterFirstPage = rest.awaitComplete(WAIT);
    assertThat(ItEvents.logText(afterFirstPage, StdStream.STDOUT)).as("a stream picks up where a page ended")
        .isEqualTo("klmnopqrstuvwxyz");
    assertThat(ItEvents.logText(afterFirstPage, StdStream.STDERR)).isEmpty();
    assertThatThrownBy(() -> sandbox.getProcessLogs(p.id(), LogRange.from(1000, 0)))
        .as("an offset beyond what the stream produced")
        .isInstanceOf(SandboxInvalidRequestException.class);
    assertThatThrownBy(() -> sandbox.getProcessLogs("no-such-process")).isInstanceOf(ProcessNotFoundException.class);
  }

  @Test
  void streamProcessLogsPublishesInfoThenOutputThenExit() throws Exception {
    SandboxProcess p = sandbox.startProcess(
        Command.shell("for i in 1 2 3 4 5; do echo line $i; sleep 0.05; done; echo warn >&2"), withId(unique("stream")));
    ItSubscriber<LogEvent> live = ItSubscriber.inBatchesOf(2);

    sandbox.streamProcessLogs(p.id()).subscribe(live);
    List<LogEvent> events = live.awaitComplete(WAIT);

    assertThat(events.get(0)).isInstanceOfSatisfying(LogEvent.Info.class, info -> {
      assertThat(info.processId()).isEqualTo(p.id());
      assertThat(info.pid()).isEqualTo(p.pid());
      assertThat(info.command()).isEqualTo(p.command());
    });
    assertThat(events.get(events.size() - 1)).isInstanceOfSatisfying(LogEvent.Exit.class, exit -> {
      assertThat(exit.exitCode()).isZero();
      assertThat(exit.status()).isEqualTo(ProcessStatus.COMPLETED);
      assertThat(exit.timedOut()).isFalse();
      assertThat(exit.signal()).isNull();
    });
    assertThat(events).filteredOn(e -> e instanceof LogEvent.Info).hasSize(1);
    assertThat(events).filteredOn(e -> e instanceof LogEvent.Exit).hasSize(1);
    assertThat(ItEvents.logText(events, StdStream.STDOUT)).isEqualTo("line 1\nline 2\nline 3\nline 4\nline 5\n");
    assertThat(ItEvents.logText(events, StdStream.STDERR)).isEqualTo("warn\n");

    ItSubscriber<LogEvent> replay = ItSubscriber.unbounded();
    p.streamLogs().subscribe(replay);
    List<LogEvent> again = replay.awaitComplete(WAIT);
    assertThat(ItEvents.logText(again, StdStream.STDOUT)).as("a finished process's stream replays everything")
        .isEqualTo("line 1\nline 2\nline 3\nline 4\nline 5\n");

    ItSubscriber<LogEvent> tail = ItSubscriber.unbounded();
    sandbox.streamProcessLogs(p.id(), LogRange.from(14, 5)).subscribe(tail);
    List<LogEvent> fromOffset = tail.awaitComplete(WAIT);
    assertThat(ItEvents.logText(fromOffset, StdStream.STDOUT)).as("from byte 14 of stdout").isEqualTo("line 3\nline 4\nline 5\n");
    assertThat(ItEvents.logText(fromOffset, StdStream.STDERR)).as("from the end of stderr (5 bytes)").isEmpty();
  }

  @Test
  void cleanupCompletedProcessesForgetsFinishedProcessesOnly() throws Exception {
    sandbox.killAllProcesses();
    sandbox.cleanupCompletedProcesses();
    String okId = unique("cleanup-ok");
    SandboxProcess ok = sandbox.startProcess(Command.shell("true"), withId(okId));
    SandboxProcess failed = sandbox.startProcess(Command.shell("exit 1"), withId(unique("cleanup-failed")));
    ok.waitForExit(WAIT);
    failed.waitForExit(WAIT);
    SandboxProcess running = sandbox.startProcess(Command.shell("sleep 300"), withId(unique("cleanup-running")));
    try {
      int cleaned = sandbox.cleanupCompletedProcesses();

      assertThat(cleaned).isEqualTo(2);
      assertThat(sandbox.getProcess(ok.id())).isEmpty();
      assertThat(sandbox.getProcess(failed.id())).isEmpty();
      assertThat(sandbox.getProcess(running.id())).isPresent();
      assertThatThrownBy(ok::info).isInstanceOf(ProcessNotFoundException.class);
      SandboxProcess reused = sandbox.startProcess(Command.shell("true"), withId(okId));
      assertThat(reused.waitForExit(WAIT).status()).as("the id is free again").isEqualTo(ProcessStatus.COMPLETED);
    } finally {
      running.kill(Signal.SIGKILL);
    }
  }

  @Test
  void startProcessHonoursEnvCwdAndTimeout() throws Exception {
    sandbox.exec("mkdir -p bgdir").requireSuccess();
    SandboxProcess p = sandbox.startProcess(Command.shell("echo \"[$IT_BG]\"; pwd -P; sleep 300"),
        ProcessOptions.builder().processId(unique("options")).env("IT_BG", "bg value").cwd("bgdir")
            .timeout(Duration.ofMillis(700)).build());

    ProcessInfo end = p.waitForExit(WAIT);

    assertThat(end.status()).isEqualTo(ProcessStatus.KILLED);
    assertThat(end.timedOut()).isTrue();
    assertThat(end.exitCode()).isEqualTo(124);
    assertThat(p.logs().stdout()).isEqualTo("[bg value]\n" + probe.realPath(ws) + "/bgdir\n");
    assertThat(await(Duration.ofSeconds(2), () -> probe.groupMembers(p.pid()).isEmpty())).isTrue();
  }

  @Test
  void anAutoCleanupProcessIsForgottenShortlyAfterItEnds() throws Exception {
    SandboxProcess p = sandbox.startProcess(Command.shell("sleep 0.3; echo bye"),
        ProcessOptions.builder().processId(unique("auto")).autoCleanup(true).build());
    CompletableFuture<ProcessInfo> exit = p.onExit();

    ProcessInfo end = exit.get(10, TimeUnit.SECONDS);

    assertThat(end.status()).isEqualTo(ProcessStatus.COMPLETED);
    assertThat(end.exitCode()).isZero();
    assertThat(await(Duration.ofSeconds(5), () -> sandbox.getProcess(p.id()).isEmpty()))
        .as("the record is dropped after --auto-cleanup-delay-ms")
        .isTrue();
    assertThatThrownBy(() -> p.waitForExit(WAIT)).as("the record is gone, as documented")
        .isInstanceOf(ProcessNotFoundException.class);
  }

  @Test
  void outputBeyondTheRetainedWindowIsReportedAsTruncated() throws Exception {
    // 10000 bytes: 'x' * 9999 and a newline, more than the 4096-byte window
    SandboxProcess p = sandbox.startProcess(Command.shell("head -c 9999 /dev/zero | tr '\\0' x; echo; echo end"),
        withId(unique("window")));
    p.waitForExit(WAIT);
    long total = 10_004;

    ProcessLogs logs = p.logs();
    ItSubscriber<LogEvent> s = ItSubscriber.unbounded();
    p.streamLogs().subscribe(s);
    List<LogEvent> events = s.awaitComplete(WAIT);

    assertThat(logs.truncated()).isTrue();
    assertThat(logs.stdoutOffset()).isEqualTo(total - WINDOW);
    assertThat(logs.stdoutNextOffset()).isEqualTo(total);
    assertThat(logs.stdout()).hasSize(WINDOW).endsWith("x\nend\n");
    assertThat(events.get(1)).isInstanceOfSatisfying(LogEvent.Truncated.class, t -> {
      assertThat(t.stream()).isEqualTo(StdStream.STDOUT);
      assertThat(t.droppedBytes()).isEqualTo(total - WINDOW);
      assertThat(t.offset()).isEqualTo(total - WINDOW);
    });
    assertThat(ItEvents.logText(events, StdStream.STDOUT)).isEqualTo(logs.stdout());
    assertThat(p.waitForLog(Pattern.compile("^end$"), WAIT).line()).isEqualTo("end");
  }

  @Test
  void startProcessWithAnIdInUseThrowsSandboxInvalidRequestException() {
    String id = unique("dup");
    SandboxProcess p = sandbox.startProcess(Command.shell("sleep 300"), withId(id));
    try {
      assertThatThrownBy(() -> sandbox.startProcess(Command.shell("true"), withId(id)))
          .isInstanceOfSatisfying(SandboxInvalidRequestException.class, e -> {
            assertThat(e.code()).isEqualTo("PROCESS_ALREADY_EXISTS");
            assertThat(e.httpStatus()).isEqualTo(409);
          });
    } finally {
      p.kill(Signal.SIGKILL);
    }
  }

  // ---- the SandboxProcess handle

  @Test
  void aHandleReportsInfoStatusLivenessAndLogsThenKillEndsIt() throws Exception {
    SandboxProcess p = sandbox.startProcess(Command.shell("echo started; sleep 300"), withId(unique("handle")));
    p.waitForLog(Pattern.compile("started"), WAIT);

    ProcessInfo info = p.info();
    assertThat(info.id()).isEqualTo(p.id());
    assertThat(info.pid()).isEqualTo(p.pid());
    assertThat(info.status()).isEqualTo(ProcessStatus.RUNNING);
    assertThat(info.stdoutBytes()).isEqualTo(8);
    assertThat(p.status()).isEqualTo(ProcessStatus.RUNNING);
    assertThat(p.isAlive()).isTrue();
    ProcessLogs logs = p.logs();
    assertThat(logs.stdout()).isEqualTo("started\n");
    assertThat(logs.complete()).isFalse();

    p.kill();
    ProcessInfo end = p.waitForExit(WAIT);

    assertThat(end.status()).isEqualTo(ProcessStatus.KILLED);
    assertThat(end.exitCode()).isEqualTo(143);
    assertThat(end.signal()).isEqualTo(Signal.SIGTERM);
    assertThat(end.endTime()).isNotNull();
    assertThat(end.isRunning()).isFalse();
    assertThat(p.isAlive()).isFalse();
    assertThat(p.status()).isEqualTo(ProcessStatus.KILLED);
    assertThat(p.logs().complete()).isTrue();
    assertThat(await(Duration.ofSeconds(2), () -> probe.groupMembers(p.pid()).isEmpty())).isTrue();
  }

  @Test
  void waitsThatTimeOutThrowSandboxTimeoutExceptionAndTheProcessKeepsRunning() throws Exception {
    SandboxProcess p = sandbox.startProcess(Command.shell("sleep 300"), withId(unique("patience")));
    try {
      long t0 = System.nanoTime();
      assertThatThrownBy(() -> p.waitForExit(Duration.ofMillis(700))).isInstanceOf(SandboxTimeoutException.class);
      assertThat(millisSince(t0)).isBetween(600L, 5_000L);
      assertThat(p.isAlive()).isTrue();
      assertThat(probe.alive(p.pid())).isTrue();

      assertThatThrownBy(() -> p.waitForLog(Pattern.compile("never printed"), Duration.ofMillis(500)))
          .isInstanceOf(SandboxTimeoutException.class);
      assertThat(p.isAlive()).isTrue();
      assertThat(probe.alive(p.pid())).isTrue();
    } finally {
      p.kill(Signal.SIGKILL);
    }
  }

  @Test
  void waitForLogFindsALineThatWasAlreadyWritten() throws Exception {
    SandboxProcess p = sandbox.startProcess(Command.shell("echo 'server ready on port 8080'; sleep 300"),
        withId(unique("early")));
    try {
      assertThat(await(WAIT, () -> p.logs().stdout().contains("8080"))).isTrue();

      LogMatch m = p.waitForLog(Pattern.compile("port (\\d+)"), WAIT);

      assertThat(m.stream()).isEqualTo(StdStream.STDOUT);
      assertThat(m.line()).isEqualTo("server ready on port 8080");
      assertThat(m.match()).isEqualTo("port 8080");
      assertThat(m.groups()).containsExactly("port 8080", "8080");
    } finally {
      p.kill(Signal.SIGKILL);
    }
  }

  @Test
  void waitForLogWaitsForALineWrittenLater() {
    SandboxProcess p = sandbox.startProcess(Command.shell("echo early; sleep 1; echo 'late line 42' >&2; sleep 300"),
        withId(unique("late")));
    try {
      long t0 = System.nanoTime();

      LogMatch m = p.waitForLog(Pattern.compile("late line (\\d+)"), WAIT);

      assertThat(millisSince(t0)).isGreaterThan(500);
      assertThat(m.stream()).isEqualTo(StdStream.STDERR);
      assertThat(m.line()).isEqualTo("late line 42");
      assertThat(m.groups()).containsExactly("late line 42", "42");
    } finally {
      p.kill(Signal.SIGKILL);
    }
  }

  @Test
  void waitForLogMatchesWholeLinesEvenWhenWrittenInPiecesOrWithoutANewlineAtTheEnd() {
    SandboxProcess pieces = sandbox.startProcess(Command.shell("printf 'half '; sleep 0.3; echo 'line ready'; sleep 300"),
        withId(unique("pieces")));
    SandboxProcess prompt = sandbox.startProcess(Command.shell("printf 'no newline at the end'"), withId(unique("prompt")));
    try {
      assertThat(pieces.waitForLog(Pattern.compile("^half line ready$"), WAIT).line()).isEqualTo("half line ready");
      assertThat(prompt.waitForLog(Pattern.compile("the end$"), WAIT).line()).isEqualTo("no newline at the end");
    } finally {
      pieces.kill(Signal.SIGKILL);
    }
  }

  @Test
  void waitForLogThrowsProcessExitedExceptionWhenTheProcessEndsWithoutAMatch() {
    SandboxProcess p = sandbox.startProcess(Command.shell("echo nothing to see; exit 4"), withId(unique("nomatch")));

    assertThatThrownBy(() -> p.waitForLog(Pattern.compile("ready"), WAIT))
        .isInstanceOfSatisfying(ProcessExitedException.class, e -> {
          assertThat(e.code()).isEqualTo("PROCESS_EXITED");
          assertThat(e.info()).isNotNull();
          assertThat(e.info().status()).isEqualTo(ProcessStatus.FAILED);
          assertThat(e.info().exitCode()).isEqualTo(4);
        });
  }

  @Test
  void onExitCompletesWithTheFinalStateAndWaitForExitReturnsAtOnceAfterwards() throws Exception {
    SandboxProcess p = sandbox.startProcess(Command.shell("sleep 0.5; exit 5"), withId(unique("onexit")));

    ProcessInfo end = p.onExit().get(10, TimeUnit.SECONDS);

    assertThat(end.status()).isEqualTo(ProcessStatus.FAILED);
    assertThat(end.exitCode()).isEqualTo(5);
    long t0 = System.nanoTime();
    assertThat(p.waitForExit(WAIT).exitCode()).isEqualTo(5);
    assertThat(millisSince(t0)).isLessThan(2_000);
  }

  @Test
  void cancellingTheOnExitFutureDoesNotKillTheProcess() throws Exception {
    SandboxProcess p = sandbox.startProcess(Command.shell("sleep 300"), withId(unique("onexit-cancel")));
    CompletableFuture<ProcessInfo> waiting = p.onExit();
    Thread.sleep(200);

    assertThat(waiting.cancel(true)).isTrue();

    Thread.sleep(500);
    assertThat(p.isAlive()).isTrue();
    assertThat(probe.alive(p.pid())).isTrue();
    CompletableFuture<ProcessInfo> again = p.onExit();
    p.kill();
    assertThat(again.get(10, TimeUnit.SECONDS).status()).isEqualTo(ProcessStatus.KILLED);
  }

  @Test
  void writeStdinFeedsAProcessStartedWithAStdinPipeAndCloseStdinEndsIt() throws Exception {
    SandboxProcess p = sandbox.startProcess(Command.of("cat"),
        ProcessOptions.builder().processId(unique("stdin")).stdinPipe(true).build());

    p.writeStdin("hello\n");
    assertThat(p.waitForLog(Pattern.compile("^hello$"), WAIT).line()).isEqualTo("hello");
    p.writeStdin("w\u00f6rld \u20ac\n");
    p.closeStdin();
    ProcessInfo end = p.waitForExit(WAIT);

    assertThat(end.status()).isEqualTo(ProcessStatus.COMPLETED);
    assertThat(end.exitCode()).isZero();
    assertThat(p.logs().stdout()).isEqualTo("hello\nw\u00f6rld \u20ac\n");
    assertThatThrownBy(() -> p.writeStdin("too late\n")).isInstanceOf(SandboxInvalidRequestException.class);

    SandboxProcess noPipe = sandbox.startProcess(Command.shell("sleep 300"), withId(unique("nopipe")));
    try {
      assertThatThrownBy(() -> noPipe.writeStdin("x")).isInstanceOf(SandboxInvalidRequestException.class);
    } finally {
      noPipe.kill(Signal.SIGKILL);
    }
  }

  @Test
  void killingAProcessAlsoKillsItsChildren() throws Exception {
    SandboxProcess p = sandbox.startProcess(Command.shell("sleep 300 & sleep 300 & wait"), withId(unique("family")));
    assertThat(await(WAIT, () -> probe.groupMembers(p.pid()).size() == 3 + wrappersPerCommand()))
        .as("the shell and its two sleeps are running")
        .isTrue();
    List<Long> members = probe.groupMembers(p.pid());

    p.kill();
    ProcessInfo end = p.waitForExit(WAIT);

    assertThat(end.status()).isEqualTo(ProcessStatus.KILLED);
    assertThat(await(Duration.ofSeconds(3), () -> probe.aliveAmong(members).isEmpty()))
        .as("shell and children %s are gone", members)
        .isTrue();
  }

  // ---- files

  @Test
  void filesWrittenThroughTheSdkAreTheCommandsFilesByteForByteAndBack() {
    String dir = "contract-files-" + IDS.incrementAndGet();
    byte[] all = new byte[256];
    for (int i = 0; i < all.length; i++) {
      all[i] = (byte) i;
    }
    SandboxFiles files = sandbox.files();

    files.writeBytes(dir + "/all.bin", all);
    files.writeString(dir + "/note ü.txt", "from files()\n");

    assertThat(files.readBytes(dir + "/all.bin")).isEqualTo(all);
    assertThat(sandbox.exec(Command.of("cat", dir + "/note ü.txt"), ExecOptions.defaults()).stdout()).isEqualTo("from files()\n");
    // The command may change what files() created (in a container: both belong to the command user).
    sandbox.exec(Command.of("sh", "-c", "printf 'and a command\\n' >> \"$1\"; printf '\\000\\377' > \"$2\"", "sh",
        dir + "/note ü.txt", dir + "/cmd.bin"), ExecOptions.defaults()).requireSuccess();
    assertThat(files.readString(dir + "/note ü.txt")).isEqualTo("from files()\nand a command\n");
    assertThat(files.readBytes(dir + "/cmd.bin")).containsExactly(0, 0xff);
    assertThat(files.list(dir)).extracting(FileEntry::name).containsExactly("all.bin", "cmd.bin", "note ü.txt");
    assertThat(files.stat(dir + "/all.bin").size()).isEqualTo(256);
    assertThat(files.stat(dir).type()).isEqualTo(FileType.DIRECTORY);

    files.deleteRecursively(dir);

    assertThat(files.exists(dir)).isFalse();
    assertThat(sandbox.exec(Command.of("test", "-e", dir), ExecOptions.defaults()).exitCode()).isEqualTo(1);
  }

  @Test
  void aMissingFileIsSandboxFileNotFoundAndAPathOutsideTheWorkspaceSandboxPermission() {
    assertThatThrownBy(() -> sandbox.files().readString("contract-no-such-file.txt"))
        .isInstanceOf(SandboxFileNotFoundException.class)
        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo("FILE_NOT_FOUND"));
    assertThatThrownBy(() -> sandbox.files().readString("../outside-the-workspace.txt"))
        .isInstanceOf(SandboxPermissionException.class)
        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo("PERMISSION_DENIED"));
  }

  @Test
  void watchReportsWhatFilesAndCommandsChangeAndCompletesWhenTheDirectoryIsDeleted() throws Exception {
    String dir = "contract-watch-" + IDS.incrementAndGet();
    SandboxFiles files = sandbox.files();
    files.mkdir(dir);
    ItSubscriber<FileEvent> events = ItSubscriber.inBatchesOf(4);
    files.watch(dir).subscribe(events);
    FileEvent watching = events.awaitItem(e -> e.type() == FileEventType.WATCHING, WAIT);
    assertThat(watching.relativePath()).isEmpty();
    assertThat(watching.absolutePath()).endsWith("/" + dir);

    files.writeString(dir + "/a.txt", "one\n");
    FileEvent created = events.awaitItem(e -> e.type() == FileEventType.CREATE && e.relativePath().equals("a.txt"), WAIT);
    assertThat(created.absolutePath()).isEqualTo(watching.absolutePath() + "/a.txt");
    assertThat(created.isDirectory()).isFalse();
    // Commands change the same files, isolated or not, and a directory they make is watched at once.
    sandbox.exec(Command.of("sh", "-c", "printf 'two\\n' >> a.txt && mkdir -p sub && printf x > sub/b.txt"),
        ExecOptions.builder().cwd(dir).build()).requireSuccess();
    events.awaitItem(e -> e.type() == FileEventType.MODIFY && e.relativePath().equals("a.txt"), WAIT);
    events.awaitItem(e -> e.type() == FileEventType.CREATE && e.relativePath().equals("sub") && e.isDirectory(), WAIT);
    events.awaitItem(e -> e.type() == FileEventType.CREATE && e.relativePath().equals("sub/b.txt"), WAIT);
    files.delete(dir + "/a.txt");
    events.awaitItem(e -> e.type() == FileEventType.DELETE && e.relativePath().equals("a.txt"), WAIT);

    files.deleteRecursively(dir);
    List<FileEvent> all = events.awaitComplete(WAIT);
    assertThat(all).anyMatch(e -> e.type() == FileEventType.DELETE && e.relativePath().equals("sub") && e.isDirectory());
    assertThat(all).filteredOn(e -> e.type() == FileEventType.WATCHING).hasSize(1);
  }

  @Test
  void watchingAMissingDirectoryOrOneOutsideTheWorkspaceFailsTheStream() throws Exception {
    ItSubscriber<FileEvent> missing = ItSubscriber.unbounded();
    sandbox.files().watch("contract-no-such-dir-" + IDS.incrementAndGet()).subscribe(missing);
    assertThat(missing.awaitError(WAIT)).isInstanceOf(SandboxFileNotFoundException.class);
    ItSubscriber<FileEvent> outside = ItSubscriber.unbounded();
    sandbox.files().watch("..", WatchOptions.defaults().withRecursive(false)).subscribe(outside);
    assertThat(outside.awaitError(WAIT)).isInstanceOfSatisfying(SandboxPermissionException.class,
        e -> assertThat(e.code()).isEqualTo("PERMISSION_DENIED"));
  }

  // ---- ports and git

  /** A one-line HTTP server in Perl (perl-base is in every Debian), so the suite needs no Python. */
  private static String perlServer(int port, int delayMs) {
    // SIGPIPE ignored: a tcp check connects and closes without a request, and the answer to it
    // must not kill the server.
    return "sleep " + delayMs / 1000.0 + "; exec perl -MIO::Socket::INET -e '$SIG{PIPE} = \"IGNORE\";"
        + " $s = IO::Socket::INET->new(LocalAddr =>"
        + " \"127.0.0.1\", LocalPort => " + port + ", Listen => 8, ReuseAddr => 1) or die \"listen: $!\";"
        + " while ($c = $s->accept) { <$c>; print $c \"HTTP/1.0 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nok\";"
        + " close $c }'";
  }

  @Test
  void waitForPortReturnsWhenTheServerAnswersAndFailsFastWhenItsProcessEnds() {
    int port = 20000 + (int) (ProcessHandle.current().pid() % 20000) + IDS.incrementAndGet();
    SandboxProcess server = sandbox.startProcess(perlServer(port, 500));
    try {
      server.waitForPort(port, PortWaitOptions.http("/").toBuilder().timeout(Duration.ofSeconds(20)).build());
      sandbox.ports().waitFor(port, PortWaitOptions.tcp());
      // A status out of range is not ready: the timeout names the last check.
      assertThatThrownBy(() -> sandbox.ports().waitFor(port, PortWaitOptions.builder().status(500, 599)
          .interval(Duration.ofMillis(100)).timeout(Duration.ofSeconds(3)).build()))
          .isInstanceOf(SandboxTimeoutException.class)
          .hasMessageContaining("200");
    } finally {
      server.kill();
    }

    SandboxProcess dies = sandbox.startProcess("sleep 0.3; exit 3");
    assertThatThrownBy(() -> dies.waitForPort(port + 1))
        .isInstanceOf(ProcessExitedException.class)
        .satisfies(e -> assertThat(((ProcessExitedException) e).info().exitCode()).isEqualTo(3));
    assertThatThrownBy(() -> sandbox.ports().waitFor(0)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void gitCheckoutClonesARepositoryAndKeepsCredentialsOutOfMessages() {
    String tag = "contract-git-" + IDS.incrementAndGet();
    sandbox.exec(Command.of("sh", "-c", "set -e; git init -q -b main \"$1\"; cd \"$1\"; printf 'hello\\n' > README;"
        + " git add README; git -c user.name=t -c user.email=t@example.com commit -q -m first", "sh", tag + "-src"), ExecOptions.defaults())
        .requireSuccess();

    GitCheckout co = sandbox.git().checkout(tag + "-src", GitCheckoutOptions.builder().targetDir(tag + "-clone").build());

    assertThat(co.branch()).isEqualTo("main");
    assertThat(co.targetDir()).endsWith("/" + tag + "-clone");
    assertThat(sandbox.files().readString(tag + "-clone/README")).isEqualTo("hello\n");
    assertThat(sandbox.exec(Command.of("git", "-C", tag + "-clone", "log", "--format=%s"), ExecOptions.defaults()).stdout()).isEqualTo("first\n");

    assertThatThrownBy(() -> sandbox.git().checkout(tag + "-no-such-repo"))
        .isInstanceOf(SandboxNotFoundException.class)
        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo("GIT_REPOSITORY_NOT_FOUND"));
    assertThatThrownBy(() -> sandbox.git().checkout(tag + "-src", GitCheckoutOptions.builder().branch("no-such-branch")
        .targetDir(tag + "-b").build()))
        .isInstanceOf(SandboxNotFoundException.class)
        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo("GIT_BRANCH_NOT_FOUND"));
    // A remote that is not there (or no network at all): the error never carries the password.
    assertThatThrownBy(() -> sandbox.git().checkout("http://127.0.0.1:1/x.git", GitCheckoutOptions.builder()
        .credentials("bob", "s3cret-pw").targetDir(tag + "-remote").timeout(Duration.ofSeconds(20)).build()))
        .isInstanceOf(SandboxException.class)
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("s3cret-pw"))
        .satisfies(e -> assertThat(String.valueOf(((SandboxException) e).context())).doesNotContain("s3cret-pw"));
  }

  // ---- checkpoints

  /**
   * The workspace as {@code find} sees it: type, mode, name and link target of every entry, and
   * a digest of every regular file, in a fixed order.
   */
  private String workspaceListing() {
    ExecResult r = sandbox.exec("find . -printf '%y %m %P -> %l\\n' | LC_ALL=C sort"
        + " && find . -type f -exec sha256sum -- {} + | LC_ALL=C sort -k 2");
    r.requireSuccess();
    return r.stdout();
  }

  @Test
  void restoreBringsBackTheWholeWorkspaceAndRemovesWhatCameAfter() {
    sandbox.killAllProcesses();
    String tag = unique("ckpt");
    sandbox.exec(Command.of("sh", "-c", "set -e; mkdir -p \"$1/src/deep\" \"$1/empty/inner\"; cd \"$1\";"
        + " printf 'hello\\n' > src/a.txt; head -c 70000 /dev/urandom > src/deep/blob; chmod 751 src/deep/blob;"
        + " chmod 600 src/a.txt; ln -s a.txt src/link; ln -s /nowhere dangling; printf x > ./-dash;"
        + " printf y > \"$(printf 'new\\nline')\"; chmod 700 empty", "sh", tag), ExecOptions.defaults()).requireSuccess();
    String before = workspaceListing();
    assertThat(before).contains(tag + "/src/link -> a.txt", tag + "/empty/inner", tag + "/-dash");

    Checkpoint c = sandbox.checkpoints().create("base");
    assertThat(c.id()).isNotBlank();
    assertThat(c.name()).isEqualTo("base");
    assertThat(c.sizeBytes()).isGreaterThan(70_000);
    assertThat(sandbox.checkpoints().list()).contains(c);

    sandbox.exec(Command.of("sh", "-c", "set -e; cd \"$1\"; printf changed > src/a.txt; chmod 644 src/deep/blob;"
        + " rm -rf empty src/link; ln -s elsewhere src/link2; mkdir later; echo new > later/file; rm -- -dash;"
        + " cd ..; echo top > \"$1-after.txt\"", "sh", tag), ExecOptions.defaults()).requireSuccess();
    assertThat(workspaceListing()).isNotEqualTo(before);

    sandbox.checkpoints().restore(c.id());

    assertThat(workspaceListing()).isEqualTo(before);
    assertThat(sandbox.files().exists(tag + "-after.txt")).isFalse();
    assertThat(sandbox.files().readString(tag + "/src/a.txt")).isEqualTo("hello\n");
    // Commands can still change the restored files.
    sandbox.exec(Command.of("sh", "-c", "echo more >> \"$1/src/a.txt\" && rm -r \"$1/empty\"", "sh", tag), ExecOptions.defaults()).requireSuccess();
    sandbox.checkpoints().delete(c.id());
    assertThat(sandbox.checkpoints().list()).doesNotContain(c);
  }

  @Test
  void checkpointsAreListedOldestFirstAndUnknownIdsAreNotFound() {
    Checkpoint a = sandbox.checkpoints().create("first");
    Checkpoint b = sandbox.checkpoints().create("second");
    Checkpoint c = sandbox.checkpoints().create("third");
    List<Checkpoint> ours = sandbox.checkpoints().list().stream().filter(x -> List.of(a, b, c).contains(x))
        .collect(Collectors.toList());
    assertThat(ours).containsExactly(a, b, c);
    assertThat(a.createdAt()).isBeforeOrEqualTo(b.createdAt());

    sandbox.checkpoints().delete(b.id());
    assertThat(sandbox.checkpoints().list()).contains(a, c).doesNotContain(b);
    for (Runnable call : List.<Runnable>of(() -> sandbox.checkpoints().delete(b.id()), () -> sandbox.checkpoints().restore(b.id()),
        () -> sandbox.checkpoints().restore("ckpt_0000000000000000", true), () -> sandbox.checkpoints().delete("no-such-checkpoint"))) {
      assertThatThrownBy(call::run).isInstanceOf(SandboxNotFoundException.class)
          .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo("CHECKPOINT_NOT_FOUND"));
    }
    assertThatThrownBy(() -> sandbox.checkpoints().create("not a name")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> sandbox.checkpoints().create("")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> sandbox.checkpoints().restore("../x")).isInstanceOf(IllegalArgumentException.class);
    sandbox.checkpoints().delete(a.id());
    sandbox.checkpoints().delete(c.id());
  }

  @Test
  void restoreIsRefusedWhileAProcessRunsAndForceKillsItFirst() throws Exception {
    sandbox.killAllProcesses();
    String tag = unique("ckpt-running");
    sandbox.exec(Command.of("sh", "-c", "echo original > \"$1\"", "sh", tag), ExecOptions.defaults()).requireSuccess();
    Checkpoint c = sandbox.checkpoints().create("before-process");
    sandbox.exec(Command.of("sh", "-c", "echo changed > \"$1\"", "sh", tag), ExecOptions.defaults()).requireSuccess();
    SandboxProcess p = sandbox.startProcess("sleep 600");
    long pid = p.pid();

    assertThatThrownBy(() -> sandbox.checkpoints().restore(c.id()))
        .isInstanceOf(SandboxConflictException.class)
        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo("PROCESSES_RUNNING"))
        .hasMessageContaining("force");
    assertThat(sandbox.files().readString(tag)).isEqualTo("changed\n");
    assertThat(probe.alive(pid)).isTrue();

    sandbox.checkpoints().restore(c.id(), true);

    assertThat(sandbox.files().readString(tag)).isEqualTo("original\n");
    assertThat(await(WAIT, () -> !probe.alive(pid))).as("the process was killed").isTrue();
    assertThat(sandbox.getProcess(p.id()).map(ProcessInfo::status).orElseThrow()).isNotEqualTo(ProcessStatus.RUNNING);
    sandbox.checkpoints().delete(c.id());
  }

  // ---- clients of their own: wrong token, no agent, close and destroy

  @Test
  void aClientWithAWrongTokenGetsSandboxAuthException() throws Exception {
    try (Sandbox wrong = Sandbox.connect(target.baseUrl(), "not-the-token")) {
      assertThatThrownBy(() -> wrong.exec("true")).isInstanceOfSatisfying(SandboxAuthException.class, e -> {
        assertThat(e.httpStatus()).isEqualTo(401);
        assertThat(e.code()).isEqualTo("UNAUTHORIZED");
      });
      assertThatThrownBy(wrong::listProcesses).isInstanceOf(SandboxAuthException.class);
      ItSubscriber<ExecEvent> s = ItSubscriber.unbounded();
      wrong.execStream("true").subscribe(s);
      assertThat(s.awaitError(WAIT)).isInstanceOf(SandboxAuthException.class);
    }
  }

  @Test
  void aClientOfAnAgentThatIsNotThereGetsSandboxConnectionException() throws Exception {
    int port;
    try (ServerSocket unused = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = unused.getLocalPort();
    }
    try (Sandbox nowhere = Sandbox.connect(URI.create("http://127.0.0.1:" + port), "some-token")) {
      assertThatThrownBy(() -> nowhere.exec("true")).isInstanceOf(SandboxConnectionException.class);
      assertThatThrownBy(() -> nowhere.execAsync("true").get(10, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class)
          .cause()
          .isInstanceOf(SandboxConnectionException.class);
      ItSubscriber<ExecEvent> exec = ItSubscriber.unbounded();
      nowhere.execStream("true").subscribe(exec);
      assertThat(exec.awaitError(WAIT)).isInstanceOf(SandboxConnectionException.class);
      ItSubscriber<LogEvent> logs = ItSubscriber.unbounded();
      nowhere.streamProcessLogs("some-process").subscribe(logs);
      assertThat(logs.awaitError(Duration.ofSeconds(20))).isInstanceOf(SandboxConnectionException.class);
    }
  }

  @Test
  void aShortReadTimeoutDoesNotCutAnExecThatRunsLonger() throws Exception {
    // Sandbox.Builder.readTimeout: "Long exec calls are not affected: the agent sends keep-alive
    // bytes while a command runs." exec reads with the longer of readTimeout and
    // streamIdleTimeout, here 2 s: a 5 s command lasts only through the heartbeats, every 300 ms.
    // (2 s, not 1 s: on a loaded machine a heartbeat can come a second late.)
    try (SandboxTarget.OwnAgent own = target.startOwnAgent();
        Sandbox quick = own.clientBuilder()
            .readTimeout(Duration.ofMillis(500)).streamIdleTimeout(Duration.ofSeconds(2)).build()) {
      ExecResult r = quick.exec("sleep 5; echo done");

      assertThat(r.exitCode()).isZero();
      assertThat(r.stdout()).isEqualTo("done\n");
    }
  }

  @Test
  void closingAConnectedClientEndsItsStreamsAndCallsButTheAgentKeepsRunning() throws Exception {
    try (SandboxTarget.OwnAgent own = target.startOwnAgent()) {
      Sandbox client = own.clientBuilder().build();
      ItSubscriber<ExecEvent> stream = ItSubscriber.unbounded();
      client.execStream("echo streaming; sleep 300").subscribe(stream);
      ExecEvent.Start start = (ExecEvent.Start) stream.awaitItem(e -> e instanceof ExecEvent.Start, WAIT);
      String pidFile = unique("pending") + ".pid";
      CompletableFuture<ExecResult> pending = client.execAsync("echo $$ > " + pidFile + "; sleep 300");
      long pendingPid = own.probe().readPid(pidFile, WAIT);
      long t0 = System.nanoTime();

      client.close();

      assertThat(millisSince(t0)).as("close() does not wait for the commands").isLessThan(5_000);
      assertThat(stream.awaitError(WAIT)).isInstanceOf(SandboxConnectionException.class);
      assertThatThrownBy(() -> pending.get(10, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class)
          .cause()
          .isInstanceOf(SandboxConnectionException.class);
      assertThatThrownBy(() -> client.exec("true")).isInstanceOf(IllegalStateException.class);
      assertThatThrownBy(client::listProcesses).isInstanceOf(IllegalStateException.class);
      assertThatCode(client::close).as("close is idempotent").doesNotThrowAnyException();
      SandboxProbe ownProbe = own.probe();
      assertThat(await(Duration.ofSeconds(6),
          () -> ownProbe.groupMembers(start.pid()).isEmpty() && ownProbe.groupMembers(pendingPid).isEmpty()))
          .as("the agent noticed the hang-ups and killed both commands")
          .isTrue();
      try (Sandbox other = own.clientBuilder().build()) {
        assertThat(other.exec("echo still here").stdout()).isEqualTo("still here\n");
      }
    }
  }

  @Test
  void destroyingAConnectedClientKillsAndForgetsEveryProcessButTheAgentKeepsRunning() throws Exception {
    try (SandboxTarget.OwnAgent own = target.startOwnAgent()) {
      Sandbox client = own.clientBuilder().build();
      SandboxProcess running = client.startProcess("sleep 300");
      SandboxProcess done = client.startProcess("true");
      done.waitForExit(WAIT);

      client.destroy();

      assertThat(own.probe().alive(running.pid())).isFalse();
      assertThatThrownBy(() -> client.exec("true")).isInstanceOf(IllegalStateException.class);
      assertThatCode(client::destroy).as("destroy is idempotent").doesNotThrowAnyException();
      try (Sandbox other = own.clientBuilder().build()) {
        assertThat(other.listProcesses()).isEmpty();
        assertThat(other.exec("echo still here").stdout()).isEqualTo("still here\n");
      }
    }
  }

  // ---- ports

  /**
   * A file server in Perl, which the agent's image has (it has no Python): {@code GET /name}
   * answers the workspace file {@code name}, {@code GET /} the list of file names.
   */
  static final String FILE_SERVER = String.join("\n",
      "use strict; use IO::Socket::INET;",
      "my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $ARGV[0], Listen => 16, ReuseAddr => 1)",
      "  or die \"listen: $!\";",
      "$| = 1; print \"listening\\n\";",
      "while (my $c = $s->accept) {",
      "  my $line = <$c> // ''; my ($path) = $line =~ m{^\\S+ /([^ ?]*)};",
      "  while (my $h = <$c>) { last if $h =~ /^\\r?\\n$/ }",
      "  my ($status, $body) = ('404 Not Found', '');",
      "  if (!defined $path || $path eq '') { ($status, $body) = ('200 OK', join(\"\\n\", glob('*')) . \"\\n\") }",
      "  elsif ($path =~ /^[\\w.-]+$/ && -f $path) { open(my $f, '<', $path); local $/; $body = <$f>; $status = '200 OK' }",
      "  print $c \"HTTP/1.0 $status\\r\\nContent-Type: text/plain\\r\\nContent-Length: \" . length($body) . \"\\r\\n\\r\\n$body\";",
      "  close $c;",
      "}",
      "");

  @Test
  void anExposedPortIsReachableFromABrowserThroughItsPreviewUrlUntilItIsUnexposed() throws Exception {
    int port;
    try (ServerSocket unused = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = unused.getLocalPort();
    }
    String name = unique("preview");
    sandbox.files().writeString(name + ".txt", "hello from the sandbox\n");
    sandbox.files().writeString(name + ".pl", FILE_SERVER);
    SandboxProcess web = sandbox.startProcess(Command.of("perl", name + ".pl", Integer.toString(port)), ProcessOptions.defaults());
    try {
      web.waitForLog(Pattern.compile("listening"), WAIT);
      ExposedPort exposed = sandbox.ports().expose(port, name);
      assertThat(exposed.port()).isEqualTo(port);
      assertThat(exposed.name()).isEqualTo(name);
      assertThat(exposed.exposedAt()).isNotNull();
      assertThat(exposed.url().toString()).startsWith(target.baseUrl().resolve("/proxy/" + port + "/") + "?");
      assertThat(exposed.toString()).doesNotContain(exposed.url().getQuery());
      assertThat(sandbox.ports().exposed()).extracting(ExposedPort::port).contains(port);
      assertThatThrownBy(() -> sandbox.ports().expose(port)).isInstanceOf(SandboxInvalidRequestException.class)
          .hasMessageContaining("PORT_ALREADY_EXPOSED");

      // A browser: no Authorization header, cookies kept, redirects followed.
      HttpClient browser = HttpClient.newBuilder().cookieHandler(new CookieManager())
          .followRedirects(HttpClient.Redirect.NORMAL).connectTimeout(WAIT).build();
      HttpResponse<String> listing = browser.send(HttpRequest.newBuilder(exposed.url()).timeout(WAIT).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(listing.statusCode()).isEqualTo(200);
      assertThat(listing.uri()).as("redirected to the address without the token").isEqualTo(exposed.baseUrl());
      assertThat(listing.body()).contains(name + ".txt");
      URI file = exposed.baseUrl().resolve(name + ".txt");
      HttpResponse<String> got = browser.send(HttpRequest.newBuilder(file).timeout(WAIT).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(got.statusCode()).isEqualTo(200);
      assertThat(got.body()).isEqualTo("hello from the sandbox\n");
      HttpClient stranger = HttpClient.newBuilder().connectTimeout(WAIT).build();
      assertThat(stranger.send(HttpRequest.newBuilder(file).timeout(WAIT).build(), HttpResponse.BodyHandlers.ofString())
          .statusCode()).as("without the cookie or token").isEqualTo(401);

      sandbox.ports().unexpose(port);
      assertThat(browser.send(HttpRequest.newBuilder(file).timeout(WAIT).build(), HttpResponse.BodyHandlers.ofString())
          .statusCode()).as("unexposed").isEqualTo(404);
      assertThat(sandbox.ports().exposed()).extracting(ExposedPort::port).doesNotContain(port);
      assertThatCode(() -> sandbox.ports().unexpose(port)).as("idempotent").doesNotThrowAnyException();
    } finally {
      web.kill();
      sandbox.ports().unexpose(port);
    }
  }

  // ---- helpers

  private static String checkContiguous(List<ExecEvent> events, Class<? extends ExecEvent> type) {
    StringBuilder text = new StringBuilder();
    long next = 0;
    for (ExecEvent e : events) {
      if (!type.isInstance(e)) {
        continue;
      }
      long offset;
      long bytes;
      String chunk;
      if (e instanceof ExecEvent.Stdout) {
        ExecEvent.Stdout out = (ExecEvent.Stdout) e;
        offset = out.offset();
        bytes = out.bytes();
        chunk = out.text();
      } else {
        ExecEvent.Stderr err = (ExecEvent.Stderr) e;
        offset = err.offset();
        bytes = err.bytes();
        chunk = err.text();
      }
      assertThat(offset).as("offset of %s", e).isEqualTo(next);
      next = offset + bytes;
      text.append(chunk);
    }
    assertThat(next).as("sum of bytes of %s", type.getSimpleName())
        .isEqualTo(text.toString().getBytes(StandardCharsets.UTF_8).length);
    return text.toString();
  }

  // ---- terminals

  /** Collects a terminal's output bytes as they come, with unbounded demand. */
  private static final class Screen implements Flow.Subscriber<TerminalOutput> {
    private final java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    private final List<TerminalOutput> chunks = new ArrayList<>();
    private final CompletableFuture<String> done = new CompletableFuture<>();
    private final long from;
    private long next = -1;

    private Screen(long from) {
      this.from = from;
    }

    static Screen of(Flow.Publisher<TerminalOutput> output) {
      return of(output, 0);
    }

    static Screen of(Flow.Publisher<TerminalOutput> output, long from) {
      Screen s = new Screen(from);
      output.subscribe(s);
      return s;
    }

    @Override
    public void onSubscribe(Flow.Subscription subscription) {
      subscription.request(Long.MAX_VALUE);
    }

    @Override
    public synchronized void onNext(TerminalOutput item) {
      if (next >= 0 && item.offset() != next) {
        done.completeExceptionally(new AssertionError("chunk at " + item.offset() + ", expected " + next));
      }
      next = item.nextOffset();
      chunks.add(item);
      bytes.writeBytes(item.bytes());
    }

    @Override
    public void onError(Throwable t) {
      done.completeExceptionally(t);
    }

    @Override
    public synchronized void onComplete() {
      done.complete(text());
    }

    synchronized String text() {
      return bytes.toString(StandardCharsets.UTF_8);
    }

    synchronized List<TerminalOutput> chunks() {
      return List.copyOf(chunks);
    }

    /** Waits until the output so far satisfies {@code condition}; returns it either way. */
    String await(java.util.function.Predicate<String> condition) throws InterruptedException {
      Await.until(WAIT, () -> condition.test(text()) || done.isDone());
      return text();
    }

    /** Waits until the output is complete (the terminal's programs have all exited). */
    String awaitEnd() throws Exception {
      return done.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }
  }

  private Terminal terminal(String... argv) {
    return sandbox.terminals().open(TerminalOptions.builder().command(Command.of(List.of(argv))).build());
  }

  @Test
  void aTerminalGivesItsProgramAControllingTerminalOfTheRequestedSizeAndTerm() throws Exception {
    Terminal t = sandbox.terminals().open(TerminalOptions.builder()
        .command(Command.of("sh", "-c", "tty; stty size; echo TERM=$TERM; test -t 0 && test -t 2 && echo both-ttys"))
        .cols(100).rows(30).processId(unique("tty")).build());
    Screen screen = Screen.of(t.output());
    assertThat(sandbox.listProcesses()).extracting(ProcessInfo::id).contains(t.id());
    ProcessInfo done = t.waitForExit(WAIT);

    assertThat(done.exitCode()).isZero();
    assertThat(done.status()).isEqualTo(ProcessStatus.COMPLETED);
    String out = screen.awaitEnd();
    assertThat(out).containsPattern("(^|\n)/dev/\\S+\r\n").doesNotContain("not a tty")
        .contains("30 100\r\n", "TERM=xterm-256color\r\n", "both-ttys\r\n");
    Terminal again = sandbox.terminals().attach(t.id());
    assertThat(again.pid()).isEqualTo(t.pid());
    assertThat(Screen.of(again.output()).awaitEnd()).isEqualTo(out);
  }

  @Test
  void aProgramThatPromptsGetsTheTypedLineWhichTheTerminalEchoes() throws Exception {
    Terminal t = terminal("sh", "-c", "printf 'name? '; read n; echo \"hello, $n!\"");
    Screen screen = Screen.of(t.output());
    screen.await(s -> s.contains("name? "));
    t.write("w\u00f6rld\r");

    assertThat(t.waitForExit(WAIT).exitCode()).isZero();
    assertThat(screen.awaitEnd()).isEqualTo("name? w\u00f6rld\r\nhello, w\u00f6rld!\r\n");
  }

  @Test
  void aResizeReachesTheProgramAsSigwinchWithTheNewSize() throws Exception {
    Terminal t = terminal("sh", "-c", "trap 'echo winch $(stty size)' WINCH; echo ready; while :; do sleep 0.1; done");
    try {
      Screen screen = Screen.of(t.output());
      screen.await(s -> s.contains("ready"));
      t.resize(132, 43);
      assertThat(screen.await(s -> s.contains("winch 43 132"))).contains("winch 43 132\r\n");
      t.resize(20, 5);
      assertThat(screen.await(s -> s.contains("winch 5 20"))).contains("winch 5 20\r\n");
    } finally {
      t.kill();
    }
    assertThat(t.waitForExit(WAIT).status()).isEqualTo(ProcessStatus.KILLED);
  }

  @Test
  void ctrlCInterruptsTheForegroundProgram() throws Exception {
    // sleep runs in the foreground; the subshell says when it has surely started
    Terminal t = terminal("sh", "-c", "trap 'echo interrupted' INT; (sleep 0.3; echo ready) & sleep 67; echo after=$?");
    Screen screen = Screen.of(t.output());
    screen.await(s -> s.contains("ready"));
    t.write("\u0003");

    assertThat(t.waitForExit(WAIT).exitCode()).as("ended by the interrupt, long before sleep's 67 s").isZero();
    assertThat(screen.awaitEnd()).contains("^C").contains("interrupted\r\n").contains("after=130\r\n");
  }

  @Test
  void coloursAndSplitCharactersArriveAsTheProgramWroteThem() throws Exception {
    // ls colours only when its output is a terminal
    Terminal ls = terminal("ls", "--color=auto", "-d", "/", "/usr");
    assertThat(Screen.of(ls.output()).awaitEnd()).contains("\u001b[").contains("/usr");

    Terminal split = terminal("sh", "-c", "printf 'a\\342\\202'; sleep 0.3; printf '\\254b'");
    Screen screen = Screen.of(split.output());
    assertThat(screen.awaitEnd()).isEqualTo("a\u20acb");
    assertThat(screen.chunks().get(0).offset()).isZero();
    assertThat(Screen.of(sandbox.terminals().attach(split.id()).output(1)).awaitEnd()).isEqualTo("\u20acb");
  }

  @Test
  void aFullScreenProgramDrawsAndExits() throws Exception {
    boolean vi = sandbox.exec("command -v vi").exitCode() == 0;
    Terminal t = vi ? terminal("vi", "-u", "NONE", "-N", "it-term-drawn.txt")
        : terminal("sh", "-c", "tput smcup; tput clear; tput cup 5 10; printf drawn; read k; tput rmcup; echo $k > it-term-drawn.txt");
    Screen screen = Screen.of(t.output());
    if (vi) {
      screen.await(s -> s.contains("~"));
      t.write("ihello\u001b:wq\r");
    } else {
      screen.await(s -> s.contains("drawn"));
      assertThat(screen.text()).contains("\u001b[6;11H"); // xterm's cursor address for row 5, column 10
      t.write("hello\r");
    }

    assertThat(t.waitForExit(WAIT).exitCode()).isZero();
    assertThat(screen.awaitEnd()).contains("\u001b[");
    assertThat(sandbox.files().readString("it-term-drawn.txt")).isEqualTo("hello\n");
  }

  @Test
  void killingATerminalKillsTheJobsItsShellStarted() throws Exception {
    String tag = unique("term-jobs");
    Terminal t = sandbox.terminals().open(TerminalOptions.builder().command(Command.of("bash", "--norc", "-i"))
        .env("PS1", "$ ").build());
    Screen screen = Screen.of(t.output());
    screen.await(s -> s.contains("$ "));
    t.write("sleep 1234 & echo $! > " + tag + ".pid; sleep 1235\r");
    long job = probe.readPid(tag + ".pid", WAIT);
    assertThat(probe.alive(job)).isTrue();

    t.kill();
    assertThat(t.waitForExit(WAIT).status()).isEqualTo(ProcessStatus.KILLED);
    assertThat(await(WAIT, () -> !probe.alive(job))).as("the shell's background job %d is gone", job).isTrue();
    assertThatCode(t::kill).as("killing an ended terminal succeeds").doesNotThrowAnyException();
  }

  @Test
  void manyTerminalsAtOnceStayResponsive() throws Exception {
    int n = 50;
    List<Terminal> terms = new ArrayList<>();
    List<Screen> screens = new ArrayList<>();
    try {
      for (int i = 0; i < n; i++) {
        Terminal t = terminal("cat");
        terms.add(t);
        screens.add(Screen.of(t.output()));
      }
      for (int i = 0; i < n; i++) {
        terms.get(i).write("ping " + i + "\r");
      }
      for (int i = 0; i < n; i++) {
        String want = "ping " + i + "\r\nping " + i + "\r\n"; // the echo, then cat's copy
        assertThat(screens.get(i).await(want::equals)).isEqualTo(want);
      }
      assertThat(sandbox.exec("echo still-here").stdout()).isEqualTo("still-here\n");
    } finally {
      terms.forEach(Terminal::kill);
    }
    for (Terminal t : terms) {
      assertThat(t.waitForExit(WAIT).status()).isEqualTo(ProcessStatus.KILLED);
    }
    for (Screen s : screens) {
      s.awaitEnd();
    }
  }

  @Test
  void terminalArgumentsAreCheckedAndAProcessWithoutATerminalIsNoTerminal() throws Exception {
    assertThatThrownBy(() -> TerminalOptions.builder().cols(0).build()).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> TerminalOptions.builder().rows(1001).build()).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> TerminalOptions.builder().term("x term").build()).isInstanceOf(IllegalArgumentException.class);
    Terminal t = terminal("sleep", "30");
    try {
      assertThatThrownBy(() -> t.resize(-1, 24)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> t.resize(80, 100_000)).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> t.output(-1)).isInstanceOf(IllegalArgumentException.class);
    } finally {
      t.kill();
    }
    SandboxProcess plain = sandbox.startProcess("sleep 30");
    try {
      assertThatThrownBy(() -> sandbox.terminals().attach(plain.id())).isInstanceOf(SandboxInvalidRequestException.class)
          .hasMessageContaining("terminal");
    } finally {
      plain.kill();
    }
    assertThatThrownBy(() -> sandbox.terminals().attach("it-no-such-terminal")).isInstanceOf(ProcessNotFoundException.class);
    t.waitForExit(WAIT);
    assertThatThrownBy(() -> t.write("late\r")).isInstanceOf(SandboxException.class).hasMessageContaining("PROCESS_NOT_RUNNING");
  }

  private static ProcessOptions withId(String id) {
    return ProcessOptions.builder().processId(id).build();
  }

  /** The processes in one status, as a caller filters {@link Sandbox#listProcesses()}. */
  private List<ProcessInfo> inStatus(ProcessStatus status) {
    return sandbox.listProcesses().stream().filter(p -> p.status() == status).toList();
  }

  private static List<String> ids(List<ProcessInfo> infos) {
    return infos.stream().map(ProcessInfo::id).collect(Collectors.toList());
  }

  private static String unique(String prefix) {
    return "it-" + prefix + "-" + IDS.incrementAndGet();
  }

  private static boolean await(Duration timeout, BooleanSupplier condition) throws InterruptedException {
    return Await.until(timeout, condition);
  }

  private static long millisSince(long t0) {
    return (System.nanoTime() - t0) / 1_000_000;
  }
}
