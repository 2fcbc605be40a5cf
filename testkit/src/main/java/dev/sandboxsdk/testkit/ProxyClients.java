package dev.sandboxsdk.testkit;

import java.util.List;

/**
 * The real HTTP clients of the egress tests, as the commands a sandbox runs: curl, python3, node and
 * git, each sending a header whose value a command-side variable holds (a secret's placeholder) to
 * an HTTPS URL through the proxy the sandbox's environment names, trusting the CA bundle it names.
 * Each is a {@code bash -c} script; the first three print the answer's status and body as {@code
 * STATUS BODY}.
 */
public final class ProxyClients {
  /**
   * Node's own {@code https} client does not read {@code HTTPS_PROXY}, so the program opens the
   * tunnel itself ({@code CONNECT}) and runs its TLS over it, as a proxy agent package does; it
   * trusts the CA through {@code NODE_EXTRA_CA_CERTS}.
   */
  static final String NODE = String.join("\n",
      "const http = require('http'), https = require('https'), tls = require('tls');",
      "const [url, name, variable] = process.argv.slice(1);",
      "const u = new URL(url), p = new URL(process.env.HTTPS_PROXY || process.env.https_proxy);",
      "const fail = (what) => (e) => { console.error(what + ': ' + (e.message || e)); process.exit(2); };",
      "const c = http.request({host: p.hostname, port: p.port, method: 'CONNECT', path: u.host});",
      "c.on('error', fail('proxy'));",
      "c.on('connect', (res, socket) => {",
      "  if (res.statusCode !== 200) { fail('CONNECT')(String(res.statusCode)); }",
      "  const agent = new https.Agent();",
      "  agent.createConnection = () => tls.connect({socket, servername: u.hostname, ALPNProtocols: ['http/1.1']});",
      "  const r = https.request({host: u.hostname, port: u.port, path: u.pathname + u.search, agent,",
      "      headers: {[name]: process.env[variable]}},",
      "    (a) => { let body = ''; a.setEncoding('utf8'); a.on('data', (d) => body += d);",
      "      a.on('end', () => process.stdout.write(a.statusCode + ' ' + body)); });",
      "  r.on('error', fail('request'));",
      "  r.end();",
      "});",
      "c.end();");

  private ProxyClients() {
  }

  /** The programs these scripts need, by client: {@code curl}, {@code python3}, {@code node}, {@code git}. */
  public static List<String> programs() {
    return List.of("curl", "python3", "node", "git");
  }

  /** curl, sending {@code header: $variable}. */
  public static String curl(String url, String header, String variable) {
    return "out=$(curl -sS -m 30 -w '\\n%{http_code}' -H \"" + header + ": $" + variable + "\" '" + url
        + "') && nl=$'\\n' && printf '%s %s' \"${out##*$nl}\" \"${out%$nl*}\"";
  }

  /** Python's urllib (which reads {@code https_proxy} and, through OpenSSL, {@code SSL_CERT_FILE}). */
  public static String python(String url, String header, String variable) {
    return "python3 -c \"import os, sys, urllib.request as u; r = u.urlopen(u.Request('" + url + "', headers={'"
        + header + "': os.environ['" + variable + "']}), timeout=30); "
        + "sys.stdout.write(str(r.status) + ' ' + r.read().decode())\"";
  }

  /** Node's https client over a tunnel it opens itself (see {@link #NODE}). */
  public static String node(String url, String header, String variable) {
    return "node -e \"$(cat <<'NODE'\n" + NODE + "\nNODE\n)\" '" + url + "' '" + header + "' '" + variable + "'";
  }

  /**
   * git clones {@code url} into {@code dir} with {@code Authorization: Bearer $variable} (a header
   * given on the command line, so it is in no file), then prints the clone's {@code file}.
   */
  public static String gitClone(String url, String variable, String dir, String file) {
    return "git -c http.extraHeader=\"Authorization: Bearer $" + variable + "\" clone -q '" + url + "' '" + dir
        + "' && cat '" + dir + "/" + file + "'";
  }

  /**
   * git clones {@code url} (https) into {@code dir} with the token in the URL as the password
   * ({@code https://x-access-token:$variable@host/...}, which git sends as Basic credentials), then
   * prints the clone's {@code file}.
   */
  public static String gitCloneWithUrlCredentials(String url, String variable, String dir, String file) {
    String withToken = url.replaceFirst("^https://", "https://x-access-token:\\$" + variable + "@");
    return "git clone -q \"" + withToken + "\" '" + dir + "' && cat '" + dir + "/" + file + "'";
  }
}
