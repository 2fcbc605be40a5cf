package dev.sandboxsdk.agent.ports;

import dev.sandboxsdk.agent.process.InternalCommand;
import dev.sandboxsdk.agent.process.ManagedProcess;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Whether a port in the sandbox is ready: it accepts connections (tcp), or answers an HTTP GET
 * with a status in range (http). The check runs where the sandbox's servers listen. Without
 * isolation, or with the network on, that is the agent's own network namespace and the agent
 * connects itself. An isolated agent without network keeps its commands in a namespace of their
 * own, which the agent's JVM cannot enter: there every check is a short bash process started the
 * way commands are started ({@link InternalCommand}: nsenter into that namespace, bubblewrap, the
 * command user), bounded by the agent's timeout, and given the port and path as arguments, never
 * as shell text.
 */
final class PortChecks {
  /** How long one check may take (Cloudflare's 5 s), less when the watch's deadline is nearer. */
  static final long CHECK_TIMEOUT_MS = 5_000;
  /**
   * The in-sandbox check: connect to the port on 127.0.0.1 (else ::1); in http mode send a GET for
   * {@code $2} and print the status code of the answer. Exit 3: no connection; 4: no status line.
   */
  static final String PROBE_SCRIPT = "{ exec 3<>\"/dev/tcp/127.0.0.1/$1\"; } 2>/dev/null"
      + " || { exec 3<>\"/dev/tcp/::1/$1\"; } 2>/dev/null || exit 3\n"
      + "[ -z \"$2\" ] && exit 0\n"
      // The request goes out in one write (coreutils' printf; bash's builtin writes line by line):
      // a server that answers after the first line and closes would otherwise reset the
      // connection under a later write (SIGPIPE, and no status read).
      + "printf -v req 'GET %s HTTP/1.0\\r\\nHost: localhost:%s\\r\\nUser-Agent: sandbox-agent-port-watch\\r\\n"
      + "Connection: close\\r\\n\\r\\n' \"$2\" \"$1\"\n"
      + "env printf '%s' \"$req\" >&3\n"
      + "IFS=' ' read -r version status rest <&3 || exit 4\n"
      + "printf '%s' \"$status\"\n";

  private final ProcessManager processes;

  PortChecks(ProcessManager processes) {
    this.processes = processes;
  }

  /** A validated watch request. */
  record Watch(int port, boolean http, String path, int statusMin, int statusMax, ManagedProcess process,
      long intervalMs, Long timeoutMs) {
  }

  /** The result of one check. */
  record Check(boolean ready, Integer statusCode, String reason) {
  }

  /** Waits for the next round; a watched process that ends cuts the wait short. */
  static void pause(Watch w, long ms) throws InterruptedException {
    if (ms <= 0) {
      return;
    }
    if (w.process() == null) {
      Thread.sleep(ms);
      return;
    }
    try {
      w.process().finished().get(ms, TimeUnit.MILLISECONDS);
    } catch (TimeoutException | ExecutionException e) {
      // the interval passed first: check again
    }
  }

  /** One check, where the sandbox's servers are. */
  Check check(Watch w, long timeoutMs) throws InterruptedException {
    Integer status;
    if (processes.network()) {
      status = checkHere(w, timeoutMs);
    } else {
      status = checkInSandbox(w, timeoutMs);
    }
    if (status == null) {
      return new Check(false, null, "connection refused or timed out");
    }
    if (!w.http()) {
      return new Check(true, null, null);
    }
    if (status < 0) {
      return new Check(false, null, "no HTTP status line in the answer");
    }
    boolean ready = status >= w.statusMin() && status <= w.statusMax();
    return new Check(ready, status, ready ? null
        : "HTTP status " + status + " not in expected range " + w.statusMin() + "-" + w.statusMax());
  }

  /**
   * From the agent's JVM: null if nothing accepts a connection, else 0 in tcp mode, and in http
   * mode the status code of the answer, or -1 if it is not HTTP.
   */
  private static Integer checkHere(Watch w, long timeoutMs) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    for (InetAddress host : List.of(InetAddress.getLoopbackAddress(), loopback6())) {
      if (host == null) {
        continue;
      }
      long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (left <= 0) {
        return null;
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(host, w.port()), (int) Math.max(1, left));
        if (!w.http()) {
          return 0;
        }
        s.setSoTimeout((int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
        OutputStream out = s.getOutputStream();
        out.write(("GET " + w.path() + " HTTP/1.0\r\nHost: localhost:" + w.port()
            + "\r\nUser-Agent: sandbox-agent-port-watch\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.flush();
        return statusOf(readLine(s.getInputStream()));
      } catch (IOException e) {
        // refused, reset or timed out: try the next address, else not ready
      }
    }
    return null;
  }

  private static InetAddress loopback6() {
    try {
      return InetAddress.getByName("::1");
    } catch (IOException e) {
      return null;
    }
  }

  /** The first line of an answer, up to 1 KiB. */
  private static String readLine(InputStream in) throws IOException {
    StringBuilder line = new StringBuilder();
    int c;
    while (line.length() < 1024 && (c = in.read()) != -1 && c != '\n') {
      line.append((char) c);
    }
    return line.toString();
  }

  /** The status code of an HTTP status line, or -1. */
  static int statusOf(String line) {
    String[] parts = line.trim().split(" ", 3);
    if (parts.length < 2 || !parts[0].toUpperCase(Locale.ROOT).startsWith("HTTP/") || !parts[1].matches("[1-5][0-9][0-9]")) {
      return -1;
    }
    return Integer.parseInt(parts[1]);
  }

  /** The same, from a short process inside the sandbox's network namespace. */
  private Integer checkInSandbox(Watch w, long timeoutMs) throws InterruptedException {
    List<String> argv = w.http()
        ? List.of("bash", "-c", PROBE_SCRIPT, "port-watch", Integer.toString(w.port()), w.path())
        : List.of("bash", "-c", PROBE_SCRIPT, "port-watch", Integer.toString(w.port()));
    InternalCommand.Outcome o = InternalCommand.run(processes, argv, Map.of(), null, timeoutMs, 1024);
    if (o.timedOut() || o.exitCode() == 3 || o.exitCode() > 128) {
      return null; // refused, or the probe was killed before it had an answer
    }
    if (o.exitCode() != 0) {
      return w.http() ? -1 : null;
    }
    return w.http() ? statusOf("HTTP/1.0 " + o.stdout().trim()) : 0;
  }
}
