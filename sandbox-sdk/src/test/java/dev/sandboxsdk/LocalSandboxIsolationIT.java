package dev.sandboxsdk;

import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.local.Isolation;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a {@link LocalSandbox} isolated by bubblewrap lets its commands see and do. Needs bwrap
 * (.ci/run installs it): the sandbox is started with {@link Isolation#REQUIRED}, so a machine
 * without it fails here instead of passing unnoticed.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LocalSandboxIsolationIT {
  private static LocalSandbox sandbox;

  @BeforeAll
  static void start() {
    sandbox = LocalSandbox.builder().isolation(Isolation.REQUIRED).keepAlive(true).start();
  }

  @AfterAll
  static void stop() {
    if (sandbox != null) {
      sandbox.close();
    }
  }

  @Test
  void isolatedIsIsolatedWhereBwrapWorksAndTheModeInForceIsReported() {
    try (LocalSandbox byDefault = LocalSandbox.builder().isolation(Isolation.ISOLATED).start()) {
      assertThat(byDefault.isolation()).isEqualTo(Isolation.ISOLATED);
      assertThat(byDefault.toString()).contains("isolation=ISOLATED");
      assertThat(byDefault.exec("ls /proc | grep -c '^[0-9]'").exitCode()).isZero();
    }
    assertThat(sandbox.isolation()).isEqualTo(Isolation.ISOLATED);
  }

  @Test
  void noneRunsCommandsOnTheHostAsBefore() throws Exception {
    Path hostOnly = Files.createTempDirectory("isolation-none-");
    try (LocalSandbox none = LocalSandbox.builder().isolation(Isolation.NONE).start()) {
      Files.writeString(hostOnly.resolve("seen"), "host file");
      assertThat(none.isolation()).isEqualTo(Isolation.NONE);
      assertThat(none.exec("cat '" + hostOnly.resolve("seen") + "'").stdout()).isEqualTo("host file");
      assertThat(none.exec("kill -0 " + none.agentPid() + " && echo agent-visible").stdout())
          .isEqualTo("agent-visible\n");
    } finally {
      deleteTree(hostOnly);
    }
  }

  @Test
  void theWorkspaceAndTmpAreWritableAndTheSystemDirectoriesAreNot() {
    ExecResult r = sandbox.exec("echo data > in-workspace && cat in-workspace && echo t > /tmp/t && cat /tmp/t"
        + " && echo \"home=$HOME\"");
    assertThat(r.stdout()).isEqualTo("data\nt\nhome=" + sandbox.workspace() + "\n");
    assertThat(sandbox.workspace().resolve("in-workspace")).hasContent("data");
    for (String dir : List.of("/usr", "/etc", "/bin")) {
      ExecResult denied = sandbox.exec("touch " + dir + "/sandbox-was-here");
      assertThat(denied.exitCode()).as("touch in %s", dir).isNotZero();
      assertThat(denied.stderr()).as("touch in %s", dir).contains("Read-only file system");
      assertThat(Path.of(dir, "sandbox-was-here")).doesNotExist();
    }
  }

  @Test
  void aServerOneCommandStartsIsReachableFromTheNextAndTmpIsTheSandboxes() throws Exception {
    SandboxProcess server = sandbox.startProcess(Command.of("python3", "-c", String.join("\n",
        "import socket",
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()",
        "open('/tmp/port', 'w').write(str(s.getsockname()[1]))",
        "while True:",
        "    c, _ = s.accept(); c.sendall(b'hello'); c.close()")), ProcessOptions.defaults());
    try {
      String client = "python3 -c \"import socket; print(socket.create_connection(('127.0.0.1', int(open('/tmp/port').read())),"
          + " 5).recv(10).decode())\"";
      ExecResult r = sandbox.exec(client);
      for (long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20); r.exitCode() != 0
          && System.nanoTime() < deadline; r = sandbox.exec(client)) {
        Thread.sleep(100);
      }
      assertThat(r.stdout()).as("%s", r).isEqualTo("hello\n");
      // Another sandbox has a loopback and a /tmp of its own.
      try (LocalSandbox other = LocalSandbox.builder().isolation(Isolation.REQUIRED).start()) {
        String port = sandbox.exec("cat /tmp/port").stdout();
        assertThat(other.exec("cat /tmp/port").exitCode()).isNotZero();
        ExecResult refused = other.exec("python3 -c \"import socket; socket.create_connection(('127.0.0.1', " + port
            + "), 5)\"");
        assertThat(refused.stderr()).as("%s", refused).contains("Connection refused");
        assertThat(other.exec("echo mine > /tmp/mine && ls /tmp").stdout()).contains("mine\n").doesNotContain("port");
      }
    } finally {
      server.kill(Signal.SIGKILL);
    }
  }

  @Test
  void theSandboxesTmpIsRemovedWithIt() throws Exception {
    String marker = "isolation-tmp-" + System.nanoTime();
    Path hostTmp;
    try (LocalSandbox shortLived = LocalSandbox.builder().isolation(Isolation.REQUIRED).start()) {
      assertThat(shortLived.exec("mkdir -p /tmp/d/e && echo x > /tmp/d/e/" + marker + " && chmod 000 /tmp/d/e /tmp/d")
          .exitCode()).isZero();
      try (var found = Files.find(Path.of(System.getProperty("java.io.tmpdir")), 2,
          (p, a) -> p.getFileName().toString().startsWith("sandbox-agent-tmp-") && Files.isDirectory(p.resolve("tmp/d")))) {
        hostTmp = found.findFirst().orElseThrow();
      }
    }
    assertThat(hostTmp).doesNotExist();
  }

  @Test
  void commandsHaveNoCapabilitiesEvenUnderARootAgent() {
    assertThat(sandbox.exec("grep -E '^Cap(Prm|Eff|Amb)' /proc/self/status").stdout())
        .isEqualTo("CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapAmb:\t0000000000000000\n");
  }

  @Test
  void theHostsOtherFilesAreInvisible() throws Exception {
    Path tmpDir = Files.createTempDirectory("isolation-host-");
    Path homeFile = Files.createTempFile(Path.of(System.getProperty("user.home")), "isolation-host-", ".txt");
    try {
      Files.writeString(tmpDir.resolve("secret"), "host temp file");
      Files.writeString(homeFile, "host home file");
      for (Path p : List.of(tmpDir.resolve("secret"), homeFile)) {
        ExecResult r = sandbox.exec("cat '" + p + "'");
        assertThat(r.exitCode()).as("cat %s", p).isNotZero();
        assertThat(r.stdout()).isEmpty();
        assertThat(r.stderr()).contains("No such file or directory");
      }
      assertThat(sandbox.exec("ls -A /home /root /work 2>&1; ls /").stdout())
          .contains("cannot access '/home'", "cannot access '/root'", "cannot access '/work'")
          .doesNotContain("sandbox-workspace");
    } finally {
      Files.deleteIfExists(homeFile);
      deleteTree(tmpDir);
    }
  }

  @Test
  void procShowsOnlyTheCommandsOwnProcesses() {
    SandboxProcess background = sandbox.startProcess("sleep 300");
    try {
      String ps = sandbox.exec("for p in /proc/[0-9]*; do printf '%s ' \"${p#/proc/}\"; tr '\\0' ' ' < $p/cmdline; echo; done")
          .stdout();
      assertThat(ps).doesNotContain("java", "dev.sandboxsdk.agent", "sleep 300");
      assertThat(ps.lines().count()).as("processes seen: %s", ps).isLessThanOrEqualTo(4);
      assertThat(ps).contains("1 ");
      ExecResult signal = sandbox.exec("kill -0 " + sandbox.agentPid() + " 2>&1; kill -TERM " + background.pid() + " 2>&1");
      assertThat(signal.stdout()).contains("No such process");
      assertThat(background.isAlive()).isTrue();
      assertThat(ProcessHandle.of(sandbox.agentPid())).isPresent();
    } finally {
      background.kill(Signal.SIGKILL);
    }
  }

  @Test
  void theNetworkIsUnreachableWhenOffAndReachableWhenOn() throws Exception {
    List<InetAddress> addresses = new ArrayList<>(List.of(InetAddress.getLoopbackAddress()));
    for (NetworkInterface nif : Collections.list(NetworkInterface.getNetworkInterfaces())) {
      if (nif.isUp() && !nif.isLoopback()) {
        for (InetAddress a : Collections.list(nif.getInetAddresses())) {
          if (a instanceof Inet4Address) {
            addresses.add(a);
          }
        }
      }
    }
    try (LocalSandbox withNetwork = LocalSandbox.builder().isolation(Isolation.REQUIRED).network(true).start()) {
      assertThat(withNetwork.isolation()).isEqualTo(Isolation.ISOLATED);
      for (InetAddress address : addresses) {
        try (ServerSocket server = new ServerSocket()) {
          server.bind(new InetSocketAddress(address, 0));
          String connect = "python3 -c 'import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 5);"
              + " print(\"connected\")' " + address.getHostAddress() + " " + server.getLocalPort();
          ExecResult off = sandbox.exec(connect);
          assertThat(off.exitCode()).as("network off, %s: %s", address, off).isNotZero();
          assertThat(off.stderr()).containsAnyOf("Connection refused", "Network is unreachable");
          server.setSoTimeout(10_000);
          ExecResult on = withNetwork.exec(connect);
          assertThat(on.stdout()).as("network on, %s: %s", address, on).isEqualTo("connected\n");
          try (Socket accepted = server.accept()) {
            assertThat(accepted.getInetAddress()).isNotNull();
          }
        }
      }
    }
  }

  @Test
  void aCommandCannotFindTheAgentsToken() throws Exception {
    java.lang.reflect.Field field = LocalSandbox.class.getDeclaredField("agent");
    field.setAccessible(true);
    String token = ((dev.sandboxsdk.internal.AgentLauncher.Agent) field.get(sandbox)).token();
    assertThat(token).hasSizeGreaterThan(16);
    // The command gets the token reversed, so that its own arguments do not contain it, and
    // looks for it everywhere it can read: its environment, every visible process's environment
    // and command line, and the files of every writable or small directory.
    String scan = String.join("\n",
        "import os, sys",
        "token = sys.argv[1][::-1].encode()",
        "hits = []",
        "if token in b''.join(k + b'=' + v for k, v in os.environb.items()): hits.append('env')",
        "for pid in [p for p in os.listdir('/proc') if p.isdigit()]:",
        "    for f in ('environ', 'cmdline'):",
        "        try:",
        "            if token in open('/proc/%s/%s' % (pid, f), 'rb').read(): hits.append('/proc/%s/%s' % (pid, f))",
        "        except OSError: pass",
        "for top in ('/tmp', '/var/tmp', '/dev/shm', '/etc', os.environ['SANDBOX_WORKSPACE']):",
        "    for root, dirs, files in os.walk(top):",
        "        for name in files:",
        "            try:",
        "                with open(os.path.join(root, name), 'rb') as fh:",
        "                    if token in fh.read(1 << 20): hits.append(os.path.join(root, name))",
        "            except OSError: pass",
        "print('hits', hits)");
    Files.writeString(sandbox.workspace().resolve("scan.py"), scan, StandardCharsets.UTF_8);
    String reversed = new StringBuilder(token).reverse().toString();
    ExecResult r = sandbox.exec(Command.of("python3", "scan.py", reversed), ExecOptions.defaults());
    assertThat(r.stdout()).as("stderr: %s", r.stderr()).isEqualTo("hits []\n");
    // The scan works: the same token in a visible file is found.
    Files.writeString(sandbox.workspace().resolve("planted"), token);
    assertThat(sandbox.exec(Command.of("python3", "scan.py", reversed), ExecOptions.defaults()).stdout()).contains("planted");
  }

  @Test
  void whatACommandLeavesRunningEndsWithIt() throws Exception {
    ExecResult r = sandbox.exec("(while :; do date +%s%N >> ticks; sleep 0.05; done) > /dev/null 2>&1 & echo started");
    assertThat(r.stdout()).isEqualTo("started\n");
    Path ticks = sandbox.workspace().resolve("ticks");
    Thread.sleep(300);
    long size = Files.exists(ticks) ? Files.size(ticks) : 0;
    Thread.sleep(500);
    assertThat(Files.exists(ticks) ? Files.size(ticks) : 0).as("the loop stopped with its command").isEqualTo(size);
  }

  @Test
  void killTimeoutsAndExitStatusesReachTheCommandThroughTheSandbox() throws Exception {
    SandboxProcess trapping = sandbox.startProcess(
        "trap 'echo got-TERM; exit 3' TERM; echo ready; while :; do sleep 0.05; done");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!trapping.logs().stdout().contains("ready") && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    trapping.kill(Signal.SIGTERM);
    ProcessInfo end = trapping.waitForExit(Duration.ofSeconds(10));
    assertThat(end.exitCode()).as("the command's own exit status, not the sandbox's").isEqualTo(3);
    assertThat(trapping.logs().stdout()).contains("got-TERM");

    ExecResult timedOut = sandbox.exec(Command.shell("sleep 30"),
        ExecOptions.builder().timeout(Duration.ofMillis(500)).build());
    assertThat(timedOut.timedOut()).isTrue();
    assertThat(sandbox.exec("exit 7").exitCode()).isEqualTo(7);
  }

  private static void deleteTree(Path dir) throws IOException {
    try (var paths = Files.walk(dir)) {
      for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
