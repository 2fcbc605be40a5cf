package dev.sandboxsdk.agent.git;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.fs.PathErrors;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Repository URLs as {@code git clone} may see them: validated (no option-like URL, no remote
 * helper, a known scheme), with the credentials of an http(s) URL taken out for git's credential
 * helper, and redacted wherever a URL is shown.
 */
final class GitUrls {
  private static final int MAX_URL_CHARS = 4096;
  /** {@code scheme://[userinfo@]rest}. */
  private static final Pattern URL = Pattern.compile("([A-Za-z][A-Za-z0-9+.-]*)://(?:([^/@]*)@)?(.*)", Pattern.DOTALL);
  /** scp-like {@code [user@]host:path} (git's rule: a colon before any slash). */
  private static final Pattern SCP_LIKE = Pattern.compile("(?:[^@/:]+@)?[A-Za-z0-9.-]+:(?!//).*");
  /**
   * For redaction: from a scheme's {@code ://} to the last {@code @} before the URL ends (at
   * whitespace or a quote), so a password with an unencoded {@code /}, {@code @} or {@code ?}
   * is covered whole. A URL whose path holds an {@code @} loses more than its user information.
   */
  private static final Pattern USERINFO = Pattern.compile("(://)[^\\s'\"<>`]*@");
  /** The {@code user:password@} of an scp-style address: up to its first {@code @}. */
  private static final Pattern SCP_USERINFO = Pattern.compile("^[^@]*@");

  private GitUrls() {}

  /** A repository URL split into what git may see and what only its credential helper may. */
  record Source(String url, String user, String password, boolean remote) {
    /** The URL for messages and logs: credentials of http(s) were taken out already, any other user info goes here. */
    String redacted() {
      return redact(url);
    }
  }

  /** Validates {@code repoUrl} and takes the credentials out of an http(s) URL. */
  static Source source(String raw) {
    if (raw == null || raw.isBlank()) {
      throw AgentException.invalid("repoUrl", "'repoUrl' is required");
    }
    if (raw.length() > MAX_URL_CHARS || !raw.chars().allMatch(c -> c > 0x20 && c != 0x7f)) {
      throw invalidUrl(raw, "it must be at most " + MAX_URL_CHARS + " characters without spaces or control characters");
    }
    if (raw.startsWith("-")) {
      throw invalidUrl(raw, "it must not start with '-'");
    }
    if (raw.matches("[A-Za-z][A-Za-z0-9+.-]*::.*")) {
      throw invalidUrl(raw, "git's <transport>::<address> syntax (remote helpers such as ext::) is not allowed");
    }
    Matcher m = URL.matcher(raw);
    if (m.matches()) {
      String scheme = m.group(1).toLowerCase(Locale.ROOT);
      switch (scheme) {
        case "http":
        case "https":
          return httpSource(raw, scheme, raw.substring(raw.indexOf("://") + 3));
        case "git":
        case "ssh": {
          String rest = raw.substring(raw.indexOf("://") + 3);
          int at = userInfoEnd(raw, rest);
          if (at >= 0 && rest.substring(0, at).indexOf(':') >= 0) {
            // git would hand 'user:password' to ssh as the user name (into its argv), and git://
            // has no authentication at all: a password here can only leak.
            throw invalidUrl(raw, "a password in a " + scheme + ":// URL is not supported (ssh uses the"
                + " sandbox's keys; git:// has no authentication); use https with credentials");
          }
          return new Source(raw, null, null, true);
        }
        case "file":
          return new Source(raw, null, null, false);
        default:
          throw invalidUrl(raw, "the scheme '" + scheme + "' is not supported; use https, http, ssh, git or file");
      }
    }
    if (raw.contains("://")) {
      throw invalidUrl(raw, "it is not a valid URL");
    }
    int at = raw.indexOf('@');
    if (at > 0 && raw.lastIndexOf(':', at) >= 0 && raw.indexOf(':', at) > 0) {
      // user:password@host:path (the password may hold a '/'), which git would read as host
      // 'user' and path 'password@...', printing the password in its errors.
      throw invalidUrl(SCP_USERINFO.matcher(raw).replaceFirst("***@"), "a password in an scp-style address"
          + " ([user@]host:path) is not supported; use https with credentials");
    }
    if (SCP_LIKE.matcher(raw).matches() && !raw.startsWith("/") && !raw.startsWith(".")) {
      return new Source(raw, null, null, true); // git@github.com:owner/repo.git
    }
    return new Source(raw, null, null, false); // a local path
  }

  /**
   * An http(s) URL without its user information, which travels to git's credential helper
   * instead. The user information ends at the last {@code @} of the authority, so an unencoded
   * {@code @} in a password is taken whole; an unencoded {@code /}, {@code ?} or {@code #} in it
   * cannot be told from a path and is refused (its error shows the URL redacted).
   */
  private static Source httpSource(String raw, String scheme, String rest) {
    int at = userInfoEnd(raw, rest);
    if (at < 0) {
      return new Source(raw, null, null, true);
    }
    String info = rest.substring(0, at);
    int colon = info.indexOf(':');
    String user = decode(colon < 0 ? info : info.substring(0, colon), raw);
    String password = colon < 0 ? null : decode(info.substring(colon + 1), raw);
    return new Source(scheme + "://" + rest.substring(at + 1), user, password, true);
  }

  /**
   * Where the user information of {@code rest} (a URL after {@code ://}) ends: the last {@code @}
   * of the authority, or -1 without one. A {@code user:pass} cut short by an unencoded {@code /},
   * {@code ?} or {@code #} (a colon not followed by a port, and an {@code @} further on) is refused.
   */
  private static int userInfoEnd(String raw, String rest) {
    int authorityEnd = indexOfAny(rest, "/?#");
    int at = rest.lastIndexOf('@', authorityEnd - 1);
    if (at >= 0) {
      return at;
    }
    int colon = rest.indexOf(':');
    if (colon >= 0 && colon < authorityEnd && rest.indexOf('@', authorityEnd) > 0
        && !rest.substring(colon + 1, authorityEnd).matches("[0-9]*")) {
      throw invalidUrl(raw, "its user information holds an unencoded '/', '?' or '#':"
          + " percent-encode the user name and password (%2F, %3F, %23)");
    }
    return -1;
  }

  private static int indexOfAny(String s, String chars) {
    for (int i = 0; i < s.length(); i++) {
      if (chars.indexOf(s.charAt(i)) >= 0) {
        return i;
      }
    }
    return s.length();
  }

  private static String decode(String s, String raw) {
    try {
      return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      throw invalidUrl(raw, "its user information is not valid percent-encoding");
    }
  }

  private static AgentException invalidUrl(String raw, String why) {
    String shown = PathErrors.shorten(redact(raw));
    return new AgentException(ErrorCode.INVALID_GIT_URL, "invalid repoUrl '" + shown + "': " + why,
        Map.of("field", "repoUrl", "repoUrl", shown));
  }

  /** Replaces the user information of every URL in {@code text} with {@code ***}. */
  static String redact(String text) {
    return USERINFO.matcher(text).replaceAll("$1***@");
  }

}
