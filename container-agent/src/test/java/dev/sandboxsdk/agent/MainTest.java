package dev.sandboxsdk.agent;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class MainTest {
  private static final String TOKEN = "s3cret-token-value-42";

  private final ByteArrayOutputStream stdout = new ByteArrayOutputStream();
  private final PrintStream out = new PrintStream(stdout, true, UTF_8);

  @TempDir Path tmp;

  /** What the tests' agents get when no --workspace is given (the real one creates a new directory). */
  private static final Path FRESH = Path.of("/nonexistent/fresh-workspace");
  private int freshCalls;

  private AgentConfig parse(String[] args, String envToken, PrintStream out) {
    return Main.parse(args, envToken, out, () -> {
      freshCalls++;
      return FRESH;
    });
  }

  @Test
  void defaultsArePort3000OnAllInterfacesInAFreshWorkspaceNotTheCurrentDirectory() {
    AgentConfig config = parse(new String[0], TOKEN, out);

    assertThat(config.port()).isEqualTo(3000);
    assertThat(config.bind()).isEqualTo("0.0.0.0");
    assertThat(config.workspace()).isEqualTo(FRESH);
    assertThat(freshCalls).isEqualTo(1);
    assertThat(config.inheritEnv()).isEmpty();
    assertThat(config.token()).isEqualTo(TOKEN);
    assertThat(config.insecureNoAuth()).isFalse();
    assertThat(config.effectiveMaxProcesses()).isEqualTo(AgentConfig.DEFAULT_MAX_PROCESSES);
    assertThat(config.graceMs()).isEqualTo(AgentConfig.DEFAULT_GRACE_MS);
    assertThat(config.keepAliveMs()).isEqualTo(AgentConfig.DEFAULT_KEEP_ALIVE_MS);
    assertThat(config.maxBodyBytes()).isEqualTo(AgentConfig.DEFAULT_MAX_BODY_BYTES);
    assertThat(config.logWindowBytes()).isEqualTo(AgentConfig.DEFAULT_LOG_WINDOW_BYTES);
    assertThat(config.defaultMaxOutputBytes()).isEqualTo(AgentConfig.DEFAULT_MAX_OUTPUT_BYTES);
    assertThat(config.autoCleanupDelayMs()).isEqualTo(AgentConfig.DEFAULT_AUTO_CLEANUP_DELAY_MS);
    assertThat(config.exitOnStdinEof()).isFalse();
    // Parsing is silent: stdout is reserved for the ready line.
    assertThat(stdout.size()).isZero();
  }

  @Test
  void isolationIsNoneByDefaultAndTakesBwrapOrAutoWithANetworkSwitch() {
    AgentConfig defaults = parse(args(), TOKEN, out);
    assertThat(defaults.isolation()).isEqualTo("none");
    assertThat(defaults.isolationNetwork()).isFalse();
    AgentConfig bwrap = parse(args("--isolation", "bwrap", "--isolation-network=on"), TOKEN, out);
    assertThat(bwrap.isolation()).isEqualTo("bwrap");
    assertThat(bwrap.isolationNetwork()).isTrue();
    assertThat(bwrap.toString()).contains("isolation=bwrap, network=on");
    assertThat(parse(args("--isolation=auto", "--isolation-network", "off"), TOKEN, out).isolation()).isEqualTo("auto");
    assertThatThrownBy(() -> parse(args("--isolation", "firejail"), TOKEN, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessage("--isolation must be one of none, bwrap, auto: 'firejail'");
    assertThatThrownBy(() -> parse(args("--isolation-network", "yes"), TOKEN, out))
        .hasMessage("--isolation-network must be on or off: 'yes'");
    assertThatThrownBy(() -> parse(args("--isolation", "auto", "--command-user", "1000"), TOKEN, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessageStartingWith("--isolation auto cannot be combined with --command-user");
  }

  @Test
  void exitOnStdinEofIsAFlagWithoutValue() {
    assertThat(parse(args("--exit-on-stdin-eof"), TOKEN, out).exitOnStdinEof()).isTrue();
    assertThatThrownBy(() -> parse(args("--exit-on-stdin-eof=yes"), TOKEN, out))
        .hasMessageContaining("takes no value");
  }

  @Test
  void egressSecretsAreReadOnceFromAFileAndNeedAPolicy() throws Exception {
    Path policy = Files.writeString(tmp.resolve("policy.json"), "{\"mode\":\"allow-list\",\"rules\":[]}");
    Path secrets = Files.writeString(tmp.resolve("secrets.json"),
        "[{\"name\":\"API_KEY\",\"value\":\"v-123\",\"hosts\":[\"api.example.com\"],\"header\":\"x-api-key\"}]");
    AgentConfig config = parse(args("--egress-policy", policy.toString(), "--egress-secrets", secrets.toString()),
        TOKEN, out);
    assertThat(config.egressSecrets().placeholders()).containsOnlyKeys("API_KEY");
    assertThat(config.toString()).contains("secrets [API_KEY]").doesNotContain("v-123");
    assertThatThrownBy(() -> parse(args("--egress-secrets", secrets.toString()), TOKEN, out))
        .isInstanceOf(Main.UsageException.class).hasMessageContaining("--egress-secrets needs --egress-policy");
    Path bad = Files.writeString(tmp.resolve("bad.json"), "[{\"name\":\"A\",\"value\":\"\",\"hosts\":[\"a.test\"]}]");
    assertThatThrownBy(() -> parse(args("--egress-policy", policy.toString(), "--egress-secrets", bad.toString()),
        TOKEN, out)).isInstanceOf(Main.UsageException.class)
        .hasMessage("--egress-secrets " + bad + ": secrets[0].value: empty");
    assertThatThrownBy(() -> parse(args("--egress-policy", policy.toString(), "--egress-secrets",
        tmp.resolve("missing.json").toString()), TOKEN, out)).isInstanceOf(Main.UsageException.class)
        .hasMessageStartingWith("cannot read --egress-secrets");
  }

  @Test
  void egressTestTrustTakesAPemFileOrThePemTextItself() throws Exception {
    Path policy = Files.writeString(tmp.resolve("policy.json"), "{\"mode\":\"allow-list\",\"rules\":[]}");
    String pem = dev.sandboxsdk.agent.egress.CertificateAuthority.create("MainTest CA").pem();
    Path file = Files.writeString(tmp.resolve("ca.pem"), pem);
    for (String value : new String[] {file.toString(), pem}) {
      AgentConfig config = parse(args("--egress-policy", policy.toString(), "--egress-test-trust", value), TOKEN, out);
      assertThat(config.egressTestTrust()).singleElement()
          .satisfies(c -> assertThat(c.getSubjectX500Principal().getName()).contains("MainTest CA"));
    }
    assertThatThrownBy(() -> parse(args("--egress-policy", policy.toString(), "--egress-test-trust",
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), TOKEN, out))
        .isInstanceOf(Main.UsageException.class).hasMessageStartingWith("--egress-test-trust: cannot read certificates from the PEM text given");
    assertThatThrownBy(() -> parse(args("--egress-policy", policy.toString(), "--egress-test-trust",
        tmp.resolve("missing.pem").toString()), TOKEN, out))
        .isInstanceOf(Main.UsageException.class).hasMessageStartingWith("--egress-test-trust: cannot read certificates from");
  }

  @Test
  void portZeroAsksForAFreePort() {
    assertThat(parse(args("--port", "0"), TOKEN, out).port()).isZero();
  }

  @Test
  void everyOptionTakesItsValueAsTheNextArgument() {
    AgentConfig config = parse(args(
        "--port", "8080", "--bind", "127.0.0.1", "--workspace", tmp.toString(),
        "--max-processes", "7", "--grace-ms", "250", "--keep-alive-ms", "15000",
        "--max-body-bytes", "1024", "--log-window-bytes", "4096", "--max-output-bytes", "99",
        "--auto-cleanup-delay-ms", "0"), TOKEN, out);

    assertThat(config.port()).isEqualTo(8080);
    assertThat(config.bind()).isEqualTo("127.0.0.1");
    assertThat(config.workspace()).isEqualTo(tmp.toAbsolutePath());
    assertThat(config.maxProcesses()).isEqualTo(7);
    assertThat(config.graceMs()).isEqualTo(250);
    assertThat(config.keepAliveMs()).isEqualTo(15000);
    assertThat(config.maxBodyBytes()).isEqualTo(1024);
    assertThat(config.logWindowBytes()).isEqualTo(4096);
    assertThat(config.defaultMaxOutputBytes()).isEqualTo(99);
    assertThat(config.autoCleanupDelayMs()).isZero();
  }

  @Test
  void optionsAlsoTakeTheEqualsForm() {
    AgentConfig config = parse(args(
        "--port=4000", "--bind=::1", "--max-processes=3", "--grace-ms=10",
        "--workspace=" + tmp.resolve("a/../b")), TOKEN, out);

    assertThat(config.port()).isEqualTo(4000);
    assertThat(config.bind()).isEqualTo("::1");
    assertThat(config.maxProcesses()).isEqualTo(3);
    assertThat(config.graceMs()).isEqualTo(10);
    assertThat(config.workspace()).isEqualTo(tmp.resolve("b").toAbsolutePath());
  }

  @Test
  void aGivenWorkspaceCreatesNoFreshOne() {
    parse(args("--workspace", tmp.toString()), TOKEN, out);

    assertThat(freshCalls).isZero();
  }

  @Test
  void inheritEnvIsRepeatableAndCommaSeparated() {
    AgentConfig config = parse(args("--inherit-env", "JAVA_HOME,USER", "--inherit-env=_X1", "--inherit-env", "USER"),
        TOKEN, out);

    assertThat(config.inheritEnv()).containsExactly("JAVA_HOME", "USER", "_X1");
  }

  @Test
  void inheritEnvRefusesBadNamesAndTheTokenVariable() {
    for (String bad : List.of("1X", "A-B", "", "A,,B", "A=B", Main.TOKEN_ENV, "SANDBOX_AGENT_RUN")) {
      assertThatThrownBy(() -> parse(args("--inherit-env", bad), TOKEN, out))
          .as(bad).isInstanceOf(Main.UsageException.class).hasMessageStartingWith("--inherit-env: ");
    }
  }

  @Test
  void relativeWorkspaceBecomesAbsoluteAndNormalized() {
    AgentConfig config = parse(args("--workspace", "x/./y/../z"), TOKEN, out);

    assertThat(config.workspace()).isEqualTo(Path.of("x/z").toAbsolutePath());
  }

  @Test
  void checkpointDirIsAbsoluteAndMustBeOutsideTheWorkspace() {
    assertThat(parse(new String[0], TOKEN, out).checkpointDir()).isNull();
    AgentConfig config = parse(args("--workspace", "/srv/ws", "--checkpoint-dir", "c/./d"), TOKEN, out);
    assertThat(config.checkpointDir()).isEqualTo(Path.of("c/d").toAbsolutePath());
    assertThatThrownBy(() -> parse(args("--workspace", "/srv/ws", "--checkpoint-dir", "/srv/ws/.ckpt"), TOKEN, out))
        .isInstanceOf(Main.UsageException.class).hasMessageContaining("outside the workspace");
  }

  @Test
  void tokenFromEnvironmentIsStripped() {
    AgentConfig config = parse(new String[0], "  " + TOKEN + "\n", out);

    assertThat(config.token()).isEqualTo(TOKEN);
    assertThat(config.insecureNoAuth()).isFalse();
  }

  @Test
  void tokenFromFileHasSurroundingWhitespaceAndNewlineStripped() throws IOException {
    Path file = Files.writeString(tmp.resolve("token"), "  " + TOKEN + " \r\n\n", UTF_8);

    AgentConfig config = parse(args("--token-file", file.toString()), null, out);

    assertThat(config.token()).isEqualTo(TOKEN);
  }

  @Test
  void tokenFileTakesPrecedenceOverTheEnvironment() throws IOException {
    Path file = Files.writeString(tmp.resolve("token"), TOKEN + "\n", UTF_8);

    AgentConfig config = parse(args("--token-file=" + file), "from-env", out);

    assertThat(config.token()).isEqualTo(TOKEN);
  }

  @Test
  void refusesToStartWithoutATokenOrAnExplicitOptOut() {
    assertThatThrownBy(() -> parse(new String[0], null, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessageContaining("SANDBOX_AGENT_TOKEN")
        .hasMessageContaining("--token-file")
        .hasMessageContaining("--insecure-no-auth");
  }

  @Test
  void blankEnvironmentTokenCountsAsNoToken() {
    assertThatThrownBy(() -> parse(new String[0], " \n", out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessageContaining("SANDBOX_AGENT_TOKEN");
  }

  @Test
  void insecureNoAuthServesWithoutAToken() {
    AgentConfig config = parse(args("--insecure-no-auth"), null, out);

    assertThat(config.token()).isNull();
    assertThat(config.insecureNoAuth()).isTrue();
    assertThat(config.toString()).contains("auth=DISABLED");
  }

  @Test
  void insecureNoAuthConflictsWithATokenFromTheEnvironment() {
    assertThatThrownBy(() -> parse(args("--insecure-no-auth"), TOKEN, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessageContaining("--insecure-no-auth")
        .hasMessageNotContaining(TOKEN);
  }

  @Test
  void insecureNoAuthConflictsWithATokenFile() throws IOException {
    Path file = Files.writeString(tmp.resolve("token"), TOKEN, UTF_8);

    assertThatThrownBy(() -> parse(args("--token-file", file.toString(), "--insecure-no-auth"), null, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessageContaining("--insecure-no-auth")
        .hasMessageNotContaining(TOKEN);
  }

  @Test
  void emptyTokenFileIsRefused() throws IOException {
    Path file = Files.writeString(tmp.resolve("token"), " \n\t\n", UTF_8);

    assertThatThrownBy(() -> parse(args("--token-file", file.toString()), TOKEN, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessageContaining("--token-file")
        .hasMessageContaining("empty");
  }

  @Test
  void unreadableTokenFileIsRefused() {
    Path missing = tmp.resolve("no-such-file");

    assertThatThrownBy(() -> parse(args("--token-file", missing.toString()), TOKEN, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessageContaining("cannot read --token-file")
        .hasMessageContaining(missing.toString());
  }

  @Test
  void unknownOptionIsRefused() {
    assertThatThrownBy(() -> parse(args("--frobnicate", "1"), TOKEN, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessage("unknown option --frobnicate");
  }

  @Test
  void unknownOptionIsRefusedAsUnknownEvenWhenItIsTheLastArgument() {
    // A typo such as "--insecure-noauth" must be reported as unknown, not as lacking a value.
    assertThatThrownBy(() -> parse(args("--insecure-noauth"), null, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessageContaining("unknown option --insecure-noauth");
  }

  @Test
  void positionalArgumentIsRefused() {
    assertThatThrownBy(() -> parse(args("serve"), TOKEN, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessage("unknown argument 'serve'");
  }

  @Test
  void optionWithoutItsValueIsRefused() {
    assertThatThrownBy(() -> parse(args("--bind", "127.0.0.1", "--port"), TOKEN, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessage("option --port needs a value");
  }

  @ParameterizedTest(name = "{0} {1}")
  @CsvSource({
      "--port, -1",
      "--port, 65536",
      "--port, abc",
      "--port, ''",
      "--port, 80.5",
      "--max-processes, 0",
      "--max-processes, 1000001",
      "--grace-ms, 0",
      "--grace-ms, 3600001",
      "--keep-alive-ms, 0",
      "--keep-alive-ms, 15001",
      "--max-body-bytes, 1023",
      "--log-window-bytes, 0",
      "--log-window-bytes, 1073741825",
      "--max-output-bytes, 0",
      "--max-output-bytes, 268435457",
      "--auto-cleanup-delay-ms, -1",
      "--auto-cleanup-delay-ms, 99999999999999999999",
      "--idle-timeout-ms, -1",
      "--idle-timeout-ms, 2592000001",
  })
  void numbersOutsideTheirRangeAreRefused(String option, String value) {
    assertThatThrownBy(() -> parse(args(option, value), TOKEN, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessageStartingWith(option + " must be an integer from ")
        .hasMessageEndingWith("got '" + value + "'");
    // The equals form goes through the same check.
    assertThatThrownBy(() -> parse(args(option + "=" + value), TOKEN, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessageStartingWith(option + " must be an integer from ");
  }

  @Test
  void commandUserAndIdleTimeoutAreOffByDefaultAndTakeTheirValues() {
    AgentConfig defaults = parse(args(), TOKEN, out);
    assertThat(defaults.commandUser()).isNull();
    assertThat(defaults.idleTimeoutMs()).isZero();

    AgentConfig set = parse(args("--command-user", "nobody", "--idle-timeout-ms", "60000"), TOKEN, out);
    assertThat(set.commandUser()).isEqualTo("nobody");
    assertThat(set.idleTimeoutMs()).isEqualTo(60_000);
    assertThat(parse(args("--command-user=1000:1000"), TOKEN, out).commandUser()).isEqualTo("1000:1000");
    assertThat(parse(args("--command-user", "4242"), TOKEN, out).commandUser()).isEqualTo("4242");
  }

  @ParameterizedTest
  @CsvSource({"0", "0:1000", "1000:0", "1000:", ":1000", "a b", "-x", "1000:1000:1000", "99999999999"})
  void commandUserMustBeANameOrUidAndMayNotBeRoot(String value) {
    assertThatThrownBy(() -> parse(args("--command-user", value), TOKEN, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessageStartingWith("--command-user: ");
  }

  @Test
  void onlyAWorkspaceTheAgentMadeIsMarkedFresh() {
    assertThat(parse(args(), TOKEN, out).freshWorkspace()).isTrue();
    assertThat(parse(args("--workspace", tmp.toString()), TOKEN, out).freshWorkspace()).isFalse();
  }

  @Test
  void outputBudgetDefaultsToAShareOfTheHeapAndCanBeSet() {
    AgentConfig derived = parse(args(), TOKEN, out);
    AgentConfig set = parse(args("--output-budget-bytes", "10485760"), TOKEN, out);

    assertThat(derived.outputBudgetBytes()).isZero();
    assertThat(derived.outputBudget()).isEqualTo(Runtime.getRuntime().maxMemory() / 100 * 25 >> 20 << 20);
    assertThat(set.outputBudget()).isEqualTo(10L << 20);
    assertThat(set.maxOutputBytesLimit()).isEqualTo(5 << 20);
    assertThat(set.effectiveDefaultMaxOutputBytes()).isEqualTo(5 << 20); // 16 MiB would not fit
    assertThatThrownBy(() -> parse(args("--output-budget-bytes", "-1"), TOKEN, out))
        .hasMessageContaining("--output-budget-bytes");
  }

  @Test
  void numbersAtTheEdgesOfTheirRangesAreAccepted() {
    AgentConfig config = parse(args(
        "--port", "65535", "--max-processes", "1000000", "--grace-ms", "3600000",
        "--keep-alive-ms", "1", "--max-body-bytes", "1024", "--log-window-bytes", "1073741824",
        "--max-output-bytes", "268435456", "--auto-cleanup-delay-ms", "0"), TOKEN, out);

    assertThat(config.port()).isEqualTo(65535);
    assertThat(config.logWindowBytes()).isEqualTo(1 << 30);
    assertThat(config.defaultMaxOutputBytes()).isEqualTo(AgentConfig.MAX_OUTPUT_BYTES_LIMIT);
  }

  @Test
  void helpPrintsUsageAndAsksForAQuietExit() {
    assertThatThrownBy(() -> parse(args("--port", "1", "--help"), null, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessage(null);

    assertThat(stdout.toString(UTF_8)).startsWith("Usage: java -jar container-agent.jar");
  }

  @Test
  void shortHelpFlagPrintsTheSameUsage() {
    assertThatThrownBy(() -> parse(args("-h"), null, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessage(null);

    assertThat(stdout.toString(UTF_8)).startsWith("Usage:");
  }

  /**
   * Reads the options off {@code Main}'s source, so an option added without a help line fails
   * here rather than going undocumented.
   */
  @Test
  void helpMentionsEveryOptionTheParserAccepts() throws IOException {
    Set<String> accepted = optionsInParserSource();
    assertThat(accepted).as("options found in Main.java")
        .contains("--port", "--token-file", "--help", "--auto-cleanup-delay-ms", "--exit-on-stdin-eof");

    assertThatThrownBy(() -> parse(args("--help"), null, out)).isInstanceOf(Main.UsageException.class);
    String help = stdout.toString(UTF_8);

    for (String option : accepted) {
      assertThat(help).as("help text").containsPattern(Pattern.quote(option) + "(?![a-z-])");
    }
  }

  @Test
  void everyOptionInTheHelpIsKnownToTheParser() {
    assertThatThrownBy(() -> parse(args("--help"), null, out)).isInstanceOf(Main.UsageException.class);
    Set<String> documented = new LinkedHashSet<>();
    Matcher m = Pattern.compile("^\\s+(--[a-z-]+)", Pattern.MULTILINE).matcher(stdout.toString(UTF_8));
    while (m.find()) {
      documented.add(m.group(1));
    }
    assertThat(documented).hasSizeGreaterThan(10);

    for (String option : documented) {
      PrintStream discard = new PrintStream(new ByteArrayOutputStream(), true, UTF_8);
      try {
        parse(args(option + "=1"), TOKEN, discard);
      } catch (Main.UsageException e) {
        // --help and --version end parsing with a null message; any other message must be about the value.
        if (e.getMessage() != null) {
          assertThat(e.getMessage()).as(option).doesNotContain("unknown");
        }
      }
    }
  }

  @Test
  void versionPrintsOneLineAndAsksForAQuietExit() {
    assertThatThrownBy(() -> parse(args("--version"), null, out))
        .isInstanceOf(Main.UsageException.class)
        .hasMessage(null);

    assertThat(stdout.toString(UTF_8)).startsWith("container-agent ").contains("(protocol 1)").hasLineCount(1);
  }

  @Test
  void configToStringNeverContainsTheToken() throws IOException {
    Path file = Files.writeString(tmp.resolve("token"), TOKEN, UTF_8);

    AgentConfig fromFile = parse(args("--token-file", file.toString()), null, out);
    AgentConfig fromEnv = parse(new String[0], TOKEN, out);
    AgentConfig built = AgentConfig.builder().token(TOKEN).build();

    for (AgentConfig config : new AgentConfig[] {fromFile, fromEnv, built}) {
      assertThat(config.toString()).doesNotContain(TOKEN).contains("auth=token");
    }
  }

  private static String[] args(String... args) {
    return args;
  }

  private static Set<String> optionsInParserSource() throws IOException {
    Path source = Path.of(System.getProperty("basedir", "."))
        .resolve("src/main/java/dev/sandboxsdk/agent/Main.java");
    String text = Files.readString(source, UTF_8);
    Set<String> options = new LinkedHashSet<>();
    // Every option literal: switch cases, the value-option table and constants ("--x", nothing after).
    Matcher m = Pattern.compile("\"(--[a-z-]+)\"").matcher(text);
    while (m.find()) {
      options.add(m.group(1));
    }
    return options;
  }

  @Test
  void tokenStdinTakesTheFirstLineOfStandardInputAndConflictsWithOtherSources() {
    java.util.function.Supplier<java.nio.file.Path> ws = () -> java.nio.file.Path.of("/tmp/unused-workspace");
    AgentConfig config = Main.parse(args("--token-stdin"), null, out, ws, () -> "from-stdin ");
    assertThat(config.token()).isEqualTo("from-stdin");

    assertThatThrownBy(() -> Main.parse(args("--token-stdin"), null, out, ws, () -> ""))
        .hasMessageContaining("empty");
    assertThatThrownBy(() -> Main.parse(args("--token-stdin"), TOKEN, out, ws, () -> "x"))
        .hasMessageContaining("conflicts with SANDBOX_AGENT_TOKEN");
    assertThatThrownBy(() -> Main.parse(args("--token-stdin", "--insecure-no-auth"), null, out, ws, () -> "x"))
        .hasMessageContaining("conflicts with --insecure-no-auth");
    assertThatThrownBy(() -> Main.parse(args("--token-stdin=yes"), null, out, ws, () -> "x"))
        .hasMessageContaining("takes no value");
  }
}
