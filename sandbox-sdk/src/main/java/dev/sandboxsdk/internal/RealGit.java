package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.GitCheckout;
import dev.sandboxsdk.GitCheckoutOptions;
import dev.sandboxsdk.SandboxGit;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * The {@link SandboxGit} of a {@link RealSandbox}: {@code checkout} over {@code POST /api/git/checkout}. Credentials
 * travel as the URL's user information, which the agent takes out before git runs (it hands them
 * to git through a credential helper's environment). Stateless and thread-safe.
 */
final class RealGit implements SandboxGit {
  /** The agent's default when the request names no timeout (Cloudflare's 10 minutes). */
  private static final Duration AGENT_DEFAULT_TIMEOUT = Duration.ofMinutes(10);
  /** How much longer than git may run the SDK waits for the answer. */
  private static final Duration ANSWER_MARGIN = Duration.ofSeconds(30);

  private final RealSandbox sandbox;
  private final AgentHttp http;

  RealGit(RealSandbox sandbox) {
    this.sandbox = sandbox;
    this.http = sandbox.http;
  }

  @Override
  public GitCheckout checkout(String repoUrl, GitCheckoutOptions options) {
    Objects.requireNonNull(repoUrl, "repoUrl == null");
    Objects.requireNonNull(options, "options == null");
    ObjectNode body = Wire.MAPPER.createObjectNode().put("repoUrl", withCredentials(repoUrl, options));
    if (options.branch() != null) {
      body.put("branch", options.branch());
    }
    if (options.depth() > 0) {
      body.put("depth", options.depth());
    }
    if (options.targetDir() != null) {
      body.put("targetDir", options.targetDir());
    }
    Duration timeout = options.timeout() != null ? options.timeout() : AGENT_DEFAULT_TIMEOUT;
    if (options.timeout() != null) {
      body.put("timeoutMs", Math.max(1, timeout.toMillis()));
    }
    // The answer comes when git is done: wait for it at least as long as git may run.
    JsonNode n = http.callWaitingAtLeast(http.post(http.url("api", "git", "checkout"), body),
        "git().checkout " + redacted(repoUrl), timeout.plus(ANSWER_MARGIN));
    return new GitCheckout(Wire.text(n, "repoUrl"), Wire.text(n, "branch"), Wire.text(n, "targetDir"));
  }

  /** The URL with the options' credentials as its user information (http and https only). */
  static String withCredentials(String repoUrl, GitCheckoutOptions options) {
    if (options.username() == null) {
      return repoUrl;
    }
    URI uri;
    try {
      uri = new URI(repoUrl);
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("credentials need an http(s) URL; not a URL: " + redacted(repoUrl));
    }
    String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!scheme.equals("https") && !scheme.equals("http") || uri.getRawAuthority() == null) {
      throw new IllegalArgumentException("credentials apply to http(s) URLs only (for ssh, the sandbox's ssh keys"
          + " are used): " + redacted(repoUrl));
    }
    if (uri.getRawUserInfo() != null) {
      throw new IllegalArgumentException("the URL has user information already; give credentials one way only");
    }
    String userInfo = encode(options.username()) + (options.password() != null ? ":" + encode(options.password()) : "");
    int at = repoUrl.indexOf("//") + 2; // the authority follows the scheme's "//"
    return repoUrl.substring(0, at) + userInfo + "@" + repoUrl.substring(at);
  }

  /** Percent-encodes everything but unreserved characters, so ':' '@' '/' in a token survive. */
  private static String encode(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }

  /**
   * A URL for messages: everything from the scheme's {@code ://} to the last {@code @} replaced,
   * so user information of any scheme goes, even with an unencoded {@code /} or {@code @} in a
   * password (a path holding an {@code @} loses more than that, which is the safe side).
   */
  static String redacted(String repoUrl) {
    return repoUrl.replaceFirst("^([A-Za-z][A-Za-z0-9+.-]*://)[^\\s]*@", "$1***@");
  }
}
