package dev.sandboxsdk.samples;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.LogMatch;
import dev.sandboxsdk.ProcessInfo;
import dev.sandboxsdk.ProcessOptions;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxNotFoundException;
import dev.sandboxsdk.SandboxProcess;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.regex.Pattern;

/**
 * Runs a web server as a background process: starts {@code python3 -m http.server} under a
 * fixed process id, waits for its "Serving HTTP" line, fetches a page from it (inside the
 * sandbox and from Java), kills it and prints its final state.
 */
public final class BackgroundWebServer {
  private BackgroundWebServer() {}

  public static void main(String[] args) throws Exception {
    // An isolated command has only the sandbox's own loopback, which this JVM cannot reach: to
    // fetch the page from Java too, the sandbox shares this machine's network, so pick a port
    // that is free here. (Without network(true) the server is reachable from the sandbox's
    // other commands only.)
    int port = freePort();
    long t0 = System.nanoTime();
    try (LocalSandbox sandbox = LocalSandbox.builder().network(true).start()) {
      sandbox.exec("mkdir -p site && echo '<h1>hello from the sandbox</h1>' > site/index.html").requireSuccess();

      SandboxProcess web = sandbox.startProcess(
          // argv, not a shell string: the port is passed as data and no shell stays in between.
          Command.of("python3", "-m", "http.server", Integer.toString(port), "--bind", "127.0.0.1"),
          ProcessOptions.builder()
              .processId("web")                   // a fixed id: any client can find it as "web"
              .cwd("site")                        // relative to the sandbox workspace
              .env("PYTHONUNBUFFERED", "1")       // else Python holds back stdout written to a pipe
              .build());
      System.out.printf("started process '%s' (pid %d): %s%n", web.id(), web.pid(), web.command());

      // startProcess returns at once; the server is usable only when it says so.
      LogMatch ready = web.waitForLog(Pattern.compile("Serving HTTP on \\S+ port (\\d+)"), Duration.ofSeconds(10));
      System.out.printf("ready after %d ms: %s (port %s, on %s)%n", (System.nanoTime() - t0) / 1_000_000,
          ready.line(), ready.groups().get(1), ready.stream());

      String url = "http://127.0.0.1:" + port + "/index.html";
      System.out.println("fetched inside the sandbox: " + fetchInside(sandbox, url));

      HttpResponse<String> response = HttpClient.newHttpClient().send(
          HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).build(),
          HttpResponse.BodyHandlers.ofString());
      System.out.printf("fetched from Java: HTTP %d %s%n", response.statusCode(), response.body().strip());

      // http.server writes its access log to stderr; the agent keeps it for us.
      System.out.println("access log of 'web':");
      web.logs().stderr().lines().forEach(line -> System.out.println("  " + line));

      System.out.println("running: " + sandbox.getProcess("web").map(ProcessInfo::status).orElseThrow());
      web.kill(); // SIGTERM to the whole process group, SIGKILL after the grace period
      ProcessInfo end = web.waitForExit(Duration.ofSeconds(10));
      System.out.printf("final state: id=%s status=%s exitCode=%d signal=%s timedOut=%s ran %d ms%n",
          end.id(), end.status(), end.exitCode(), end.signal(), end.timedOut(),
          Duration.between(end.startTime(), end.endTime()).toMillis());
    }
  }

  /** Fetches a URL from inside the sandbox: with curl if it is installed, else with Python. */
  static String fetchInside(Sandbox sandbox, String url) {
    try {
      return sandbox.exec(Command.of("curl", "-sS", "--max-time", "5", url), ExecOptions.defaults()).requireSuccess().stdout().strip()
          + " (curl)";
    } catch (SandboxNotFoundException noCurl) {
      // COMMAND_NOT_FOUND: slim images have no curl. The URL is an argument, never spliced into code.
      return sandbox.exec(Command.of("python3", "-c",
              "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())",
              url), ExecOptions.defaults())
          .requireSuccess().stdout().strip() + " (python urllib)";
    }
  }

  private static int freePort() throws IOException {
    // Another program could take the port before the server binds it; good enough for a sample.
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }
}
