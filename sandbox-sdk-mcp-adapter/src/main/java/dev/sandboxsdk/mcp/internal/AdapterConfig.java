package dev.sandboxsdk.mcp.internal;

import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The adapter's settings, parsed from the command line and the environment.
 *
 * @param http serve Streamable HTTP (otherwise stdio)
 * @param port HTTP port; 0 picks a free one
 * @param bind HTTP bind address
 * @param httpToken bearer token HTTP clients must send; null only with {@code noAuth}
 * @param noAuth serve HTTP without a token (loopback binds only)
 * @param agentUrl a remote agent to drive; null for local sandboxes
 * @param agentToken the remote agent's token
 * @param passEnv variables (name to value) injected into every sandbox process and redacted from output
 * @param maxOutputBytes output per stream handed to the model in one result
 * @param allowedHosts extra Host names accepted besides loopback names and the bind address
 * @param allowedOrigins browser origins accepted besides loopback ones
 * @param maxSandboxes how many sandboxes may exist at once
 * @param keepAlive interval of SSE keep-alive comments
 * @param maxConnections HTTP connections open at once; 0 derives it from the open-file limit
 * @param maxConcurrentCalls tool calls running at once across all sessions
 */
public record AdapterConfig(
    boolean http,
    int port,
    String bind,
    String httpToken,
    boolean noAuth,
    URI agentUrl,
    String agentToken,
    Map<String, String> passEnv,
    int maxOutputBytes,
    List<String> allowedHosts,
    List<String> allowedOrigins,
    int maxSandboxes,
    Duration keepAlive,
    int maxConnections,
    int maxConcurrentCalls) {

  public static final String USAGE = String.join("\n",
      "usage: java -jar sandbox-mcp.jar [--stdio | --http [--port 8080] [--bind 127.0.0.1]]",
      "           [--token-file F | --no-auth] [--agent-url URL --agent-token-file F]",
      "           [--pass-env NAME ...] [--max-output-bytes N] [--max-sandboxes N]",
      "           [--allow-host HOST] [--allow-origin ORIGIN] [--keep-alive-seconds N]",
      "",
      "  --stdio              serve MCP on stdin/stdout (the default); logs go to stderr",
      "  --http               serve Streamable HTTP on /mcp",
      "  --port N             HTTP port (default 8080; 0 picks a free port)",
      "  --bind ADDR          HTTP bind address (default 127.0.0.1)",
      "  --token-file F       bearer token for HTTP clients (or env SANDBOX_MCP_TOKEN)",
      "  --no-auth            HTTP without a token; only on a loopback address",
      "  --agent-url URL      drive this remote container agent instead of local sandboxes",
      "  --agent-token-file F the remote agent's token (or env SANDBOX_AGENT_TOKEN)",
      "  --pass-env NAME ...  inject these variables of the adapter's environment into every",
      "                       sandbox process; its value is redacted from all output",
      "  --max-output-bytes N output per stream handed to the model per call (default 16384)",
      "  --max-sandboxes N    sandboxes that may exist at once (default 8)",
      "  --allow-host HOST    also accept this Host name (repeatable; IP literals, localhost and",
      "                       the bind address are always accepted)",
      "  --allow-origin O     also accept this Origin (repeatable; origins on accepted hosts always are)",
      "  --keep-alive-seconds N  SSE keep-alive interval (default 15)",
      "  --max-connections N  HTTP connections open at once (default: half the open-file limit,",
      "                       between 32 and 1000); more are closed as they arrive",
      "  --max-concurrent-calls N  tool calls running at once (default 64); more are refused");

  private static final List<String> HTTP_ONLY = List.of("--port", "--bind", "--token-file", "--no-auth",
      "--allow-host", "--allow-origin", "--keep-alive-seconds", "--max-connections");
  /** The adapter's own secrets: never passed to sandboxes, whatever --pass-env says. */
  /** Where the HTTP token and the remote agent's token may come from; never passed to commands. */
  static final String HTTP_TOKEN_ENV = "SANDBOX_MCP_TOKEN";
  static final String AGENT_TOKEN_ENV = "SANDBOX_AGENT_TOKEN";
  static final List<String> OWN_SECRETS = List.of(HTTP_TOKEN_ENV, AGENT_TOKEN_ENV);

  /** A command-line mistake: the message says what to change. */
  public static final class UsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public UsageException(String message) {
      super(message);
    }
  }

  /** Parses {@code args} against {@code env}; throws {@link UsageException} on any mistake. */
  public static AdapterConfig parse(String[] args, Map<String, String> env) {
    boolean http = false;
    boolean stdio = false;
    int port = 8080;
    String bind = "127.0.0.1";
    String tokenFile = null;
    boolean noAuth = false;
    String agentUrl = null;
    String agentTokenFile = null;
    Map<String, String> passEnv = new LinkedHashMap<>();
    int maxOutput = 16_384;
    int maxSandboxes = 8;
    int keepAliveSeconds = 15;
    int maxConnections = 0;
    int maxCalls = 64;
    List<String> hosts = new ArrayList<>();
    List<String> origins = new ArrayList<>();
    List<String> httpOnly = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (HTTP_ONLY.contains(a)) {
        httpOnly.add(a);
      }
      switch (a) {
        case "--stdio" -> stdio = true;
        case "--http" -> http = true;
        case "--no-auth" -> noAuth = true;
        case "--port" -> port = intValue(a, value(args, ++i, a), 0, 65_535);
        case "--bind" -> bind = value(args, ++i, a);
        case "--token-file" -> tokenFile = value(args, ++i, a);
        case "--agent-url" -> agentUrl = value(args, ++i, a);
        case "--agent-token-file" -> agentTokenFile = value(args, ++i, a);
        case "--max-output-bytes" -> maxOutput = intValue(a, value(args, ++i, a), 256, 16 * 1024 * 1024);
        case "--max-sandboxes" -> maxSandboxes = intValue(a, value(args, ++i, a), 1, 1_000);
        case "--keep-alive-seconds" -> keepAliveSeconds = intValue(a, value(args, ++i, a), 1, 3_600);
        case "--max-connections" -> maxConnections = intValue(a, value(args, ++i, a), 8, 100_000);
        case "--max-concurrent-calls" -> maxCalls = intValue(a, value(args, ++i, a), 1, 10_000);
        case "--allow-host" -> hosts.add(value(args, ++i, a).toLowerCase(java.util.Locale.ROOT));
        case "--allow-origin" -> origins.add(value(args, ++i, a).toLowerCase(java.util.Locale.ROOT));
        case "--pass-env" -> { // one or more names: --pass-env A B, or --pass-env A --pass-env B
          do {
            String name = value(args, ++i, a);
            if (!name.matches("[A-Za-z_][A-Za-z0-9_]*")) {
              throw new UsageException("--pass-env takes variable names, got '" + name + "'");
            }
            if (OWN_SECRETS.contains(name)) {
              throw new UsageException("--pass-env " + name + ": the adapter's own token is never passed to sandboxes");
            }
            String v = env.get(name);
            if (v == null) {
              throw new UsageException("--pass-env " + name + ": the variable is not set in the adapter's environment");
            }
            passEnv.put(name, v);
          } while (i + 1 < args.length && !args[i + 1].startsWith("--"));
        }
        default -> throw new UsageException("unknown option '" + a + "'");
      }
    }
    if (http && stdio) {
      throw new UsageException("choose one of --stdio and --http");
    }
    if (!http && !httpOnly.isEmpty()) {
      throw new UsageException(String.join(", ", httpOnly) + " appl" + (httpOnly.size() == 1 ? "ies" : "y")
          + " to --http only");
    }
    String httpToken = null;
    if (http) {
      if (tokenFile != null && noAuth) {
        throw new UsageException("choose one of --token-file and --no-auth");
      }
      httpToken = tokenFile != null ? readToken(tokenFile, "--token-file") : nonEmpty(env.get(HTTP_TOKEN_ENV), HTTP_TOKEN_ENV);
      if (httpToken != null && noAuth) {
        throw new UsageException("--no-auth conflicts with SANDBOX_MCP_TOKEN being set");
      }
      if (httpToken == null && !noAuth) {
        throw new UsageException("--http needs a token: --token-file F or env SANDBOX_MCP_TOKEN"
            + " (or --no-auth on a loopback address)");
      }
      if (noAuth && !isLoopback(bind)) {
        throw new UsageException("--no-auth is only allowed on a loopback bind address, not " + bind);
      }
    }
    URI agent = null;
    String agentToken = null;
    if (agentUrl != null) {
      try {
        agent = new URI(agentUrl);
      } catch (URISyntaxException e) {
        throw new UsageException("--agent-url is not a URL: " + e.getMessage());
      }
      if (!"http".equals(agent.getScheme()) && !"https".equals(agent.getScheme()) || agent.getHost() == null) {
        throw new UsageException("--agent-url must be an http(s) URL with a host, got '" + agentUrl + "'");
      }
      agentToken = agentTokenFile != null
          ? readToken(agentTokenFile, "--agent-token-file") : nonEmpty(env.get(AGENT_TOKEN_ENV), AGENT_TOKEN_ENV);
      if (agentToken == null) {
        throw new UsageException("--agent-url needs the agent's token: --agent-token-file F or env SANDBOX_AGENT_TOKEN");
      }
    } else if (agentTokenFile != null) {
      throw new UsageException("--agent-token-file needs --agent-url");
    }
    return new AdapterConfig(http, port, bind, httpToken, noAuth, agent, agentToken, Map.copyOf(passEnv),
        maxOutput, List.copyOf(hosts), List.copyOf(origins), maxSandboxes, Duration.ofSeconds(keepAliveSeconds),
        maxConnections, maxCalls);
  }

  /** Settings for an in-process server in tests: stdio, local sandboxes, defaults elsewhere. */
  public static AdapterConfig defaults() {
    return parse(new String[0], Map.of());
  }

  public AdapterConfig withMaxOutputBytes(int bytes) {
    return new AdapterConfig(http, port, bind, httpToken, noAuth, agentUrl, agentToken, passEnv,
        bytes, allowedHosts, allowedOrigins, maxSandboxes, keepAlive, maxConnections, maxConcurrentCalls);
  }

  @Override
  public String toString() { // never the tokens or the passed values
    return "AdapterConfig{" + (http ? "http " + bind + ":" + port + (noAuth ? " no-auth" : " token") : "stdio")
        + ", " + (agentUrl != null ? "agent " + agentUrl : "local sandboxes") + ", passEnv=" + passEnv.keySet()
        + ", maxOutputBytes=" + maxOutputBytes + "}";
  }

  static boolean isLoopback(String address) {
    try {
      return InetAddress.getByName(address).isLoopbackAddress();
    } catch (UnknownHostException e) {
      return false;
    }
  }

  private static String value(String[] args, int i, String option) {
    if (i >= args.length || args[i].startsWith("--")) {
      throw new UsageException(option + " needs a value");
    }
    return args[i];
  }

  private static int intValue(String option, String text, int min, int max) {
    try {
      int v = Integer.parseInt(text);
      if (v < min || v > max) {
        throw new UsageException(option + " must be between " + min + " and " + max + ", got " + v);
      }
      return v;
    } catch (NumberFormatException e) {
      throw new UsageException(option + " takes a number, got '" + text + "'");
    }
  }

  private static String readToken(String file, String option) {
    try {
      String t = Files.readString(Path.of(file), StandardCharsets.UTF_8);
      t = t.endsWith("\r\n") ? t.substring(0, t.length() - 2) : t.endsWith("\n") ? t.substring(0, t.length() - 1) : t;
      if (t.isEmpty()) {
        throw new UsageException(option + " " + file + " is empty");
      }
      return checkToken(t, option + " " + file);
    } catch (IOException e) {
      throw new UsageException(option + " " + file + " cannot be read: " + e);
    }
  }

  private static String nonEmpty(String s, String name) {
    return s == null || s.isEmpty() ? null : checkToken(s, name);
  }

  /**
   * A token is compared byte for byte with what clients send, so it must be something a header
   * carries unchanged: visible ASCII only (no spaces, tabs or control characters, which HTTP
   * stacks trim or refuse). A file's one trailing newline is removed before this check.
   */
  static String checkToken(String t, String where) {
    if (!t.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
      throw new UsageException(where + ": the token must be visible ASCII characters only (no spaces,"
          + " tabs, control characters or more than one trailing newline)");
    }
    return t;
  }
}
