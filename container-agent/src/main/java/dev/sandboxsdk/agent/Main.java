package dev.sandboxsdk.agent;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

/**
 * Command line entry point. Prints exactly one line to stdout, the ready line:
 *
 * <pre>SANDBOX_AGENT_READY {"url":"http://127.0.0.1:3000","port":3000,"pid":42,"version":"0.1.0","protocol":1,"isolation":"none"}</pre>
 *
 * Everything else (logs, errors) goes to stderr.
 */
public final class Main {
  static final String READY_PREFIX = "SANDBOX_AGENT_READY ";
  static final String TOKEN_ENV = "SANDBOX_AGENT_TOKEN";
  static final String EXIT_ON_STDIN_EOF = "--exit-on-stdin-eof";
  static final String TOKEN_STDIN = "--token-stdin";
  /** The longest first line of standard input taken as a token. */
  private static final int MAX_TOKEN_LINE = 4096;

  private static final String TOKEN_FILE = "--token-file";
  private static final String INHERIT_ENV = "--inherit-env";
  private static final String WORKSPACE = "--workspace";
  private static final String COMMAND_USER = "--command-user";
  private static final String IDLE_TIMEOUT = "--idle-timeout-ms";
  private static final String EGRESS_POLICY = "--egress-policy";
  /** A test hook: names the egress proxy resolves to given addresses instead of asking DNS. */
  private static final String EGRESS_TEST_HOSTS = "--egress-test-hosts";
  private static final String EGRESS_SECRETS = "--egress-secrets";
  /** A test hook: a CA the egress proxy trusts upstream besides the JDK's. */
  private static final String EGRESS_TEST_TRUST = "--egress-test-trust";
  /** 30 days: far beyond any use, and far from overflowing System.nanoTime arithmetic. */
  private static final long MAX_IDLE_TIMEOUT_MS = 30L * 24 * 3600 * 1000;

  /** The options that take a value (besides {@value #TOKEN_FILE}), and what each sets. */
  private static final Map<String, BiConsumer<AgentConfig.Builder, String>> VALUE_OPTIONS = Map.ofEntries(
      Map.entry("--port", (b, v) -> b.port((int) number("--port", v, 0, 65535))),
      Map.entry("--bind", AgentConfig.Builder::bind),
      Map.entry(WORKSPACE, (b, v) -> b.workspace(Path.of(v).toAbsolutePath().normalize())),
      Map.entry("--checkpoint-dir", (b, v) -> b.checkpointDir(Path.of(v).toAbsolutePath().normalize())),
      Map.entry(INHERIT_ENV, Main::inheritEnv),
      Map.entry("--max-processes", (b, v) -> b.maxProcesses((int) number("--max-processes", v, 1, 1_000_000))),
      Map.entry("--grace-ms", (b, v) -> b.graceMs(number("--grace-ms", v, 1, 3_600_000))),
      Map.entry("--keep-alive-ms", (b, v) -> b.keepAliveMs(number("--keep-alive-ms", v, 1, AgentConfig.MAX_KEEP_ALIVE_MS))),
      Map.entry("--max-body-bytes", (b, v) -> b.maxBodyBytes((int) number("--max-body-bytes", v, 1024, Integer.MAX_VALUE - 8))),
      Map.entry("--log-window-bytes", (b, v) -> b.logWindowBytes((int) number("--log-window-bytes", v, 1, 1 << 30))),
      Map.entry("--max-output-bytes",
          (b, v) -> b.defaultMaxOutputBytes((int) number("--max-output-bytes", v, 1, AgentConfig.MAX_OUTPUT_BYTES_LIMIT))),
      Map.entry("--auto-cleanup-delay-ms", (b, v) -> b.autoCleanupDelayMs(number("--auto-cleanup-delay-ms", v, 0, Long.MAX_VALUE))),
      Map.entry("--max-connections", (b, v) -> b.maxConnections((int) number("--max-connections", v, 1, 1_000_000))),
      Map.entry("--request-timeout-seconds", (b, v) -> b.requestTimeoutSeconds(
          (int) number("--request-timeout-seconds", v, 1, AgentConfig.MAX_REQUEST_TIMEOUT_SECONDS))),
      Map.entry("--output-budget-bytes", (b, v) -> b.outputBudgetBytes(number("--output-budget-bytes", v, 0, Long.MAX_VALUE))),
      Map.entry(IDLE_TIMEOUT, (b, v) -> b.idleTimeoutMs(number(IDLE_TIMEOUT, v, 0, MAX_IDLE_TIMEOUT_MS))),
      Map.entry(COMMAND_USER, Main::commandUser),
      Map.entry("--isolation", Main::isolation),
      Map.entry("--spawn", Main::spawn),
      Map.entry("--proxy-timeout-ms", (b, v) -> b.proxyTimeoutMs(number("--proxy-timeout-ms", v, 1,
          AgentConfig.MAX_PROXY_TIMEOUT_MS))),
      Map.entry("--isolation-network", (b, v) -> b.isolationNetwork(onOff("--isolation-network", v))),
      Map.entry(EGRESS_POLICY, (b, v) -> b.egressPolicy(egressPolicy(v))),
      Map.entry(EGRESS_TEST_HOSTS, Main::egressTestHosts),
      Map.entry(EGRESS_SECRETS, (b, v) -> b.egressSecrets(egressSecrets(v))),
      Map.entry(EGRESS_TEST_TRUST, Main::egressTestTrust));

  private Main() {}

  public static void main(String[] args) {
    int status = run(args, System.out, System.err);
    if (status != 0) {
      System.exit(status);
    }
  }

  /** Parses arguments and serves until the JVM is asked to stop; returns an exit status on failure. */
  static int run(String[] args, PrintStream out, PrintStream err) {
    AgentConfig config;
    try {
      config = parse(args, System.getenv(TOKEN_ENV), out, Main::freshWorkspace, Main::firstLineOfStdin);
    } catch (UsageException e) {
      if (e.getMessage() == null) {
        return 0; // --help or --version
      }
      err.println("container-agent: " + e.getMessage());
      err.println("Run with --help for the options.");
      return 2;
    }
    AgentServer server;
    try {
      server = AgentServer.start(config);
    } catch (IOException | RuntimeException e) {
      err.println("container-agent: cannot start: " + e.getMessage());
      return 1;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      stopped.countDown();
    }, "agent-shutdown"));
    out.println(READY_PREFIX + readyLine(server));
    out.flush();
    adviseOnHeap();
    if (config.exitOnStdinEof()) {
      watchStdin();
    }
    if (config.idleTimeoutMs() > 0) {
      watchIdle(server, config.idleTimeoutMs());
    }
    try {
      stopped.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return 0;
  }

  /** Logs {@link HeapAdvice}'s warning, if any: after the ready line, which it must not delay. */
  private static void adviseOnHeap() {
    String advice = HeapAdvice.check(HeapAdvice.jvmOptions(), Runtime.getRuntime().maxMemory());
    if (advice != null) {
      org.slf4j.LoggerFactory.getLogger(Main.class).warn("{}", advice);
    }
  }

  /** Exits through the shutdown hook (which stops every process) once stdin reaches end of file. */
  private static void watchStdin() {
    Thread t = new Thread(() -> {
      try {
        byte[] buf = new byte[256];
        while (System.in.read(buf) >= 0) {
          // the parent writes nothing; anything it does write is ignored
        }
      } catch (IOException ignored) {
        // a broken stdin means the parent is gone as well
      }
      org.slf4j.LoggerFactory.getLogger(Main.class).info("standard input closed ({}); stopping", EXIT_ON_STDIN_EOF);
      System.exit(0);
    }, "agent-stdin-watch");
    t.setDaemon(true);
    t.start();
  }

  /**
   * Exits through the shutdown hook (which stops every process) once the server has been idle
   * for {@code timeoutMs}: no authenticated request in progress and none started meanwhile.
   */
  private static void watchIdle(AgentServer server, long timeoutMs) {
    long timeoutNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    Thread t = new Thread(() -> {
      while (true) {
        long left = timeoutNanos - server.idleNanos();
        if (left <= 0) {
          break;
        }
        try {
          // Wake when the timeout would be up if nothing happens; a request meanwhile moves it on.
          Thread.sleep(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left) + 1));
        } catch (InterruptedException e) {
          return;
        }
      }
      org.slf4j.LoggerFactory.getLogger(Main.class).info("no request for {} ms ({}); stopping", timeoutMs, IDLE_TIMEOUT);
      System.exit(0);
    }, "agent-idle-watch");
    t.setDaemon(true);
    t.start();
  }

  /** A new empty directory for an agent started without {@code --workspace}. */
  private static Path freshWorkspace() {
    try {
      Path dir = Files.createTempDirectory("sandbox-agent-workspace-");
      org.slf4j.LoggerFactory.getLogger(Main.class).info(
          "no {} given: commands run in the new empty directory {} (left in place on exit)", WORKSPACE, dir);
      return dir;
    } catch (IOException e) {
      throw new UsageException("no " + WORKSPACE + " given and cannot create a temporary one: " + e.getMessage());
    }
  }

  /** Checks the form only; whether the user exists and the agent can switch to it is checked at start. */
  private static void commandUser(AgentConfig.Builder b, String value) {
    String error = dev.sandboxsdk.agent.process.CommandUser.syntaxError(value);
    if (error != null) {
      throw new UsageException(COMMAND_USER + ": " + error);
    }
    b.commandUser(value);
  }

  /**
   * The ready line's JSON object. Written by hand, not with Jackson: the first use of a Jackson
   * tree's {@code toString()} builds a whole {@code JsonMapper}, about 380 classes, which made up
   * a third of the time from launch to this line and 6 MiB of an idle agent's memory; the first
   * request loads them when it needs them (docs/performance.md, "Memory and start-up").
   */
  static String readyLine(AgentServer server) {
    dev.sandboxsdk.agent.text.ByteBuf b = new dev.sandboxsdk.agent.text.ByteBuf(256);
    b.ascii("{\"url\":");
    quoted(server.uri().toString(), b);
    b.ascii(",\"port\":").number(server.port());
    b.ascii(",\"pid\":").number(ProcessHandle.current().pid());
    b.ascii(",\"version\":");
    quoted(AgentServer.version(), b);
    b.ascii(",\"protocol\":1,\"isolation\":");
    quoted(server.isolation(), b);
    if (server.isolationUnavailable() != null) {
      b.ascii(",\"isolationUnavailable\":");
      quoted(server.isolationUnavailable(), b);
    }
    return b.ascii("}").toString();
  }

  private static void quoted(String s, dev.sandboxsdk.agent.text.ByteBuf out) {
    byte[] utf8 = s.getBytes(StandardCharsets.UTF_8); // a String's UTF-8 is valid UTF-8, as appendQuoted needs
    dev.sandboxsdk.agent.text.JsonText.appendQuoted(utf8, 0, utf8.length, out);
  }

  private static void spawn(AgentConfig.Builder b, String value) {
    if (!AgentConfig.SPAWN_MODES.contains(value)) {
      throw new UsageException("--spawn must be one of " + String.join(", ", AgentConfig.SPAWN_MODES)
          + ": '" + value + "'");
    }
    b.spawn(value);
  }

  private static void isolation(AgentConfig.Builder b, String value) {
    if (!AgentConfig.ISOLATION_MODES.contains(value)) {
      throw new UsageException("--isolation must be one of " + String.join(", ", AgentConfig.ISOLATION_MODES)
          + ": '" + value + "'");
    }
    b.isolation(value);
  }

  private static boolean onOff(String option, String value) {
    switch (value) {
      case "on":
        return true;
      case "off":
        return false;
      default:
        throw new UsageException(option + " must be on or off: '" + value + "'");
    }
  }

  /** The policy in the file: the JSON that PUT /api/egress/policy takes. */
  private static dev.sandboxsdk.agent.egress.EgressPolicy egressPolicy(String file) {
    try {
      byte[] json = Files.readAllBytes(Path.of(file));
      if (json.length > dev.sandboxsdk.agent.egress.EgressRequests.MAX_BODY_BYTES) {
        throw new UsageException(EGRESS_POLICY + " " + file + " is larger than "
            + dev.sandboxsdk.agent.egress.EgressRequests.MAX_BODY_BYTES + " bytes");
      }
      return dev.sandboxsdk.agent.egress.EgressRequests.parse(dev.sandboxsdk.agent.http.Json.parse(json));
    } catch (IOException e) {
      throw new UsageException("cannot read " + EGRESS_POLICY + " " + file + ": " + e.getMessage());
    } catch (AgentException e) {
      throw new UsageException(EGRESS_POLICY + " " + file + ": " + e.getMessage());
    }
  }

  /** The secrets in the file, read once: the JSON of {@code SecretsFile}. */
  private static dev.sandboxsdk.agent.egress.EgressSecrets egressSecrets(String file) {
    try {
      Path p = Path.of(file);
      if (Files.size(p) > dev.sandboxsdk.agent.egress.SecretsFile.MAX_FILE_BYTES) {
        throw new UsageException(EGRESS_SECRETS + " " + file + " is larger than "
            + dev.sandboxsdk.agent.egress.SecretsFile.MAX_FILE_BYTES + " bytes");
      }
      return dev.sandboxsdk.agent.egress.SecretsFile.parse(Files.readAllBytes(p));
    } catch (IOException e) {
      throw new UsageException("cannot read " + EGRESS_SECRETS + " " + file + ": " + e.getMessage());
    } catch (IllegalArgumentException e) {
      throw new UsageException(EGRESS_SECRETS + " " + file + ": " + e.getMessage());
    }
  }

  private static void egressTestTrust(AgentConfig.Builder b, String file) {
    try {
      b.egressTestTrust(dev.sandboxsdk.agent.egress.EgressTrust.readPem(file));
    } catch (IllegalArgumentException e) {
      throw new UsageException(EGRESS_TEST_TRUST + ": " + e.getMessage());
    }
  }

  private static void egressTestHosts(AgentConfig.Builder b, String value) {
    try {
      b.egressTestHosts(dev.sandboxsdk.agent.egress.Egress.testHosts(value));
    } catch (IllegalArgumentException e) {
      throw new UsageException(EGRESS_TEST_HOSTS + ": " + e.getMessage());
    }
  }

  private static void inheritEnv(AgentConfig.Builder b, String value) {
    java.util.List<String> names = new java.util.ArrayList<>();
    for (String name : value.split(",", -1)) {
      String refusal = dev.sandboxsdk.agent.process.CommandEnvironment.refusal(name.trim(), TOKEN_ENV);
      if (refusal != null) {
        throw new UsageException(INHERIT_ENV + ": " + refusal);
      }
      names.add(name.trim());
    }
    b.inheritEnv(names);
  }

  /**
   * Parses the command line.
   *
   * @param defaultWorkspace called for the workspace when {@code --workspace} is not given
   */
  static AgentConfig parse(String[] args, String envToken, PrintStream out,
      java.util.function.Supplier<Path> defaultWorkspace) {
    return parse(args, envToken, out, defaultWorkspace, () -> {
      throw new UsageException("no standard input to read the token from");
    });
  }

  /**
   * The first line of standard input, read byte by byte so nothing after it is consumed (the
   * stdin watcher of {@value #EXIT_ON_STDIN_EOF} reads on from there).
   */
  private static String firstLineOfStdin() {
    java.io.ByteArrayOutputStream line = new java.io.ByteArrayOutputStream();
    try {
      int b;
      while ((b = System.in.read()) >= 0 && b != '\n') {
        if (line.size() == MAX_TOKEN_LINE) {
          throw new UsageException(TOKEN_STDIN + ": the first line of standard input is longer than "
              + MAX_TOKEN_LINE + " bytes");
        }
        line.write(b);
      }
    } catch (IOException e) {
      throw new UsageException(TOKEN_STDIN + ": cannot read standard input: " + e.getMessage());
    }
    return line.toString(StandardCharsets.UTF_8);
  }

  static AgentConfig parse(String[] args, String envToken, PrintStream out,
      java.util.function.Supplier<Path> defaultWorkspace, java.util.function.Supplier<String> stdinLine) {
    AgentConfig.Builder b = AgentConfig.builder();
    boolean workspaceGiven = false;
    String tokenFile = null;
    boolean insecure = false;
    boolean tokenStdin = false;
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      String value = null;
      int eq = arg.indexOf('=');
      if (arg.startsWith("--") && eq > 0) {
        value = arg.substring(eq + 1);
        arg = arg.substring(0, eq);
      }
      switch (arg) {
        case "--help":
        case "-h":
          out.println(Usage.TEXT);
          throw new UsageException(null);
        case "--version":
          out.println("container-agent " + AgentServer.version() + " (protocol 1)");
          throw new UsageException(null);
        case EXIT_ON_STDIN_EOF:
          if (value != null) {
            throw new UsageException(EXIT_ON_STDIN_EOF + " takes no value");
          }
          b.exitOnStdinEof(true);
          break;
        case TOKEN_STDIN:
          if (value != null) {
            throw new UsageException(TOKEN_STDIN + " takes no value");
          }
          tokenStdin = true;
          break;
        case "--insecure-no-auth":
          if (value != null) {
            throw new UsageException("--insecure-no-auth takes no value");
          }
          insecure = true;
          break;
        default:
          if (!VALUE_OPTIONS.containsKey(arg) && !arg.equals(TOKEN_FILE)) {
            throw new UsageException(isOption(arg) ? "unknown option " + arg : "unknown argument '" + arg + "'");
          }
          if (value == null) {
            if (i + 1 >= args.length) {
              throw new UsageException("option " + arg + " needs a value");
            }
            value = args[++i];
          }
          workspaceGiven |= arg.equals(WORKSPACE);
          if (arg.equals(TOKEN_FILE)) {
            tokenFile = value; // read once all options are known
          } else {
            VALUE_OPTIONS.get(arg).accept(b, value);
          }
      }
    }
    String token = token(tokenStdin, tokenFile, insecure, envToken, stdinLine);
    if (!workspaceGiven) {
      b.workspace(defaultWorkspace.get()).freshWorkspace(true);
    }
    try {
      return b.token(token).insecureNoAuth(insecure).build();
    } catch (IllegalArgumentException e) {
      throw new UsageException(e.getMessage());
    }
  }

  /** The token from the one place it was given (stdin, a file or the environment); null only with --insecure-no-auth. */
  private static String token(boolean tokenStdin, String tokenFile, boolean insecure, String envToken,
      java.util.function.Supplier<String> stdinLine) {
    String token = null;
    if (tokenStdin) {
      if (tokenFile != null || insecure || (envToken != null && !envToken.isBlank())) {
        throw new UsageException(TOKEN_STDIN + " conflicts with " + (tokenFile != null ? TOKEN_FILE
            : insecure ? "--insecure-no-auth" : TOKEN_ENV) + "; give the token one way");
      }
      token = stdinLine.get().strip();
      if (token.isEmpty()) {
        throw new UsageException(TOKEN_STDIN + ": the first line of standard input is empty");
      }
    } else if (tokenFile != null) {
      try {
        token = Files.readString(Path.of(tokenFile), StandardCharsets.UTF_8).strip();
      } catch (IOException e) {
        throw new UsageException("cannot read --token-file " + tokenFile + ": " + e.getMessage());
      }
      if (token.isEmpty()) {
        throw new UsageException("--token-file " + tokenFile + " is empty");
      }
    } else if (envToken != null && !envToken.isBlank()) {
      token = envToken.strip();
    }
    if (token == null && !insecure) {
      throw new UsageException("no token: pass --token-file F or set " + TOKEN_ENV
          + " (or, for a trusted local setup only, --insecure-no-auth)");
    }
    if (token != null && insecure) {
      throw new UsageException("--insecure-no-auth conflicts with the token that was given; drop one of them");
    }
    return token;
  }

  private static boolean isOption(String arg) {
    return arg.startsWith("--");
  }

  private static long number(String option, String value, long min, long max) {
    try {
      long n = Long.parseLong(value.trim());
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw new UsageException(option + " must be an integer from " + min + " to " + max + ", got '" + value + "'");
  }

  /** A bad command line; a null message means "exit 0 after --help/--version". */
  static final class UsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
      super(message, null, false, false);
    }
  }
}
