package dev.sandboxsdk.agent.egress;

import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The secrets an agent holds for its commands, and the one place their placeholders become their
 * values: {@link #rewrite}. Immutable and thread-safe.
 *
 * <p>In a request head (request line and headers, never the body) every placeholder of a known
 * secret is either replaced by the value, when the request goes to a host the secret is bound to
 * (and, for a secret bound to a header, only in that header's value), or makes the whole request
 * refused, naming the secret: {@value #UNBOUND_HOST} for another host, {@value #UNBOUND_HEADER} for
 * another place in the head, {@value #PLAIN_HTTP} when the request would carry it unencrypted. The
 * credentials of an {@code Authorization: Basic} header are looked at decoded, so a token in a URL
 * ({@code https://user:$TOKEN@host/}, as git sends it) is replaced (and re-encoded) or refused like
 * one in the header itself.
 */
public final class EgressSecrets {
  /** A placeholder in a request to a host its secret is not bound to. */
  public static final String UNBOUND_HOST = "secret-to-unbound-host";
  /** A placeholder outside the header its secret is bound to (the request line, another header). */
  public static final String UNBOUND_HEADER = "secret-outside-bound-header";
  /** A placeholder in a plain-HTTP request: a value is only ever sent over TLS. */
  public static final String PLAIN_HTTP = "secret-over-plain-http";
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final EgressSecrets NONE = new EgressSecrets(List.of());

  private final List<EgressSecret> secrets;

  private EgressSecrets(List<EgressSecret> secrets) {
    this.secrets = List.copyOf(secrets);
  }

  /** No secrets. */
  public static EgressSecrets none() {
    return NONE;
  }

  /** These secrets (validated by whoever made them: {@link SecretsFile}). */
  public static EgressSecrets of(List<EgressSecret> secrets) {
    return secrets.isEmpty() ? NONE : new EgressSecrets(secrets);
  }

  /** A fresh placeholder: {@code sandbox-secret-} and 128 random bits in hex. */
  static String newPlaceholder() {
    byte[] b = new byte[16];
    RANDOM.nextBytes(b);
    return EgressSecret.PLACEHOLDER_PREFIX + HexFormat.of().formatHex(b);
  }

  public boolean isEmpty() {
    return secrets.isEmpty();
  }

  public List<EgressSecret> secrets() {
    return secrets;
  }

  /** The variables commands get: each secret's name and its placeholder. */
  public Map<String, String> placeholders() {
    Map<String, String> out = new LinkedHashMap<>();
    for (EgressSecret s : secrets) {
      out.put(s.name(), s.placeholder());
    }
    return out;
  }

  /** Whether a secret is bound to {@code host:port}, so that the proxy terminates its TLS. */
  boolean intercepts(HostNames.Host host, int port) {
    for (EgressSecret s : secrets) {
      if (s.boundTo(host, port)) {
        return true;
      }
    }
    return false;
  }

  /** A request head with its placeholders replaced, or the reason it is refused. */
  record Rewrite(String target, List<String[]> headers, List<String> secrets, String refusal) {
    boolean refused() {
      return refusal != null;
    }
  }

  /**
   * Replaces the placeholders in a request head going to {@code host:port}, or refuses it.
   *
   * @param tls whether the request goes over TLS the proxy made (false: plain HTTP, where any
   *     placeholder refuses the request)
   * @return the head to send, with the names of the secrets put in; or, refused, the reason and
   *     the name of the secret that caused it
   */
  Rewrite rewrite(String target, List<String[]> headers, HostNames.Host host, int port, boolean tls) {
    List<String> used = new ArrayList<>();
    String newTarget = target;
    List<String[]> newHeaders = new ArrayList<>(headers.size());
    String[] basic = new String[headers.size()];
    for (int i = 0; i < headers.size(); i++) {
      newHeaders.add(headers.get(i).clone());
      basic[i] = basicCredentials(headers.get(i));
    }
    for (EgressSecret s : secrets) {
      String p = s.placeholder();
      boolean inTarget = target.contains(p);
      boolean anywhere = inTarget;
      for (int i = 0; i < headers.size(); i++) {
        anywhere |= occurs(p, headers.get(i), basic[i]);
      }
      if (!anywhere) {
        continue;
      }
      String why = !s.boundTo(host, port) ? UNBOUND_HOST : !tls ? PLAIN_HTTP : misplaced(s, inTarget, headers, basic);
      if (why != null) {
        return new Rewrite(null, null, List.of(s.name()), why);
      }
      newTarget = newTarget.replace(p, s.value().replace(" ", "%20"));
      for (int i = 0; i < newHeaders.size(); i++) {
        newHeaders.get(i)[1] = newHeaders.get(i)[1].replace(p, s.value());
        if (basic[i] != null && basic[i].contains(p)) {
          basic[i] = basic[i].replace(p, s.value());
          newHeaders.get(i)[1] = "Basic " + Base64.getEncoder().encodeToString(basic[i].getBytes(StandardCharsets.UTF_8));
        }
      }
      used.add(s.name());
    }
    return new Rewrite(newTarget, newHeaders, List.copyOf(used), null);
  }

  /**
   * The decoded {@code user:password} of an {@code Authorization: Basic} header (where git and
   * most HTTP clients put a token given in the URL), or null for any other header or a value that
   * is not base64: a placeholder there counts as one in the header itself.
   */
  private static String basicCredentials(String[] header) {
    String v = header[1].strip();
    if (!header[0].equalsIgnoreCase("authorization") || v.length() < 6 || !v.regionMatches(true, 0, "Basic ", 0, 6)) {
      return null;
    }
    try {
      String decoded = new String(Base64.getDecoder().decode(v.substring(6).strip()), StandardCharsets.UTF_8);
      return decoded.contains(EgressSecret.PLACEHOLDER_PREFIX) ? decoded : null;
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  private static boolean occurs(String placeholder, String[] header, String basic) {
    return header[0].contains(placeholder) || header[1].contains(placeholder)
        || (basic != null && basic.contains(placeholder));
  }

  /** Why a placeholder of a secret bound to this host is in the wrong place, or null if it is not. */
  private static String misplaced(EgressSecret s, boolean inTarget, List<String[]> headers, String[] basic) {
    String p = s.placeholder();
    for (int i = 0; i < headers.size(); i++) {
      String[] h = headers.get(i);
      if (h[0].contains(p)) {
        return UNBOUND_HEADER;
      }
      boolean inValue = h[1].contains(p) || (basic[i] != null && basic[i].contains(p));
      if (s.header() != null && inValue && !h[0].toLowerCase(Locale.ROOT).equals(s.header())) {
        return UNBOUND_HEADER;
      }
    }
    return inTarget && s.header() != null ? UNBOUND_HEADER : null;
  }

  /** Names and hosts only: never a value. */
  @Override
  public String toString() {
    return secrets.toString();
  }
}
