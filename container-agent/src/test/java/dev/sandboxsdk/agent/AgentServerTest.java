package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AgentServerTest {
  @TempDir Path workspace;

  @Test
  void aBusyPortFailsTheStartWithoutLeavingItsPipeDirectoryBehind() throws Exception {
    List<Path> before = pipeDirectories();
    try (ServerSocket busy = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      AgentConfig config = AgentConfig.builder().bind("127.0.0.1").port(busy.getLocalPort()).workspace(workspace)
          .token("t").build();

      assertThatThrownBy(() -> AgentServer.start(config)).isInstanceOf(IOException.class);
    }
    assertThat(pipeDirectories()).isEqualTo(before);
  }

  /**
   * Closing the agent stops the proxy's timeout thread and cuts a proxied request whose server
   * never answers, rather than leaving both to the proxy timeout in a JVM that goes on.
   */
  @Test
  void closeStopsTheProxyTimeoutThreadAndCutsServerConnections() throws Exception {
    Set<Thread> before = timeoutThreads();
    try (ServerSocket silent = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      AgentServer agent = AgentServer.start(AgentConfig.builder().bind("127.0.0.1").port(0).workspace(workspace)
          .token("t").proxyTimeoutMs(AgentConfig.MAX_PROXY_TIMEOUT_MS).build());
      Socket client = null;
      Socket accepted = null;
      try {
        call(agent, "POST /api/expose-port", "{\"port\":" + silent.getLocalPort() + "}");
        client = new Socket(InetAddress.getLoopbackAddress(), agent.port());
        client.getOutputStream().write(("GET /proxy/" + silent.getLocalPort() + "/ HTTP/1.1\r\nHost: a\r\n"
            + "Authorization: Bearer t\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        accepted = silent.accept(); // the agent's connection; it now waits for an answer
        assertThat(ChildAgent.await(10_000, () -> timeoutThreads().size() > before.size()))
            .as("the proxy's timeout thread runs").isTrue();
      } finally {
        agent.close();
      }
      accepted.setSoTimeout(30_000);
      assertThat(accepted.getInputStream().readAllBytes()).as("the request head, then the end").isNotEmpty();
      Set<Thread> after = timeoutThreads();
      for (Thread t : after) {
        if (!before.contains(t)) {
          t.join(30_000);
        }
      }
      after.removeIf(t -> !t.isAlive());
      assertThat(after).as("timeout threads after close").isSubsetOf(before);
      client.close();
    }
  }

  private static Set<Thread> timeoutThreads() {
    Set<Thread> threads = new HashSet<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().equals("agent-proxy-timeouts") && t.isAlive()) {
        threads.add(t);
      }
    }
    return threads;
  }

  private static void call(AgentServer agent, String requestLine, String body) throws IOException {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), agent.port())) {
      byte[] b = body.getBytes(StandardCharsets.UTF_8);
      s.getOutputStream().write((requestLine + " HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer t\r\nConnection: close\r\n"
          + "Content-Type: application/json\r\nContent-Length: " + b.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      s.getOutputStream().write(b);
      s.setSoTimeout(30_000);
      assertThat(new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8)).startsWith("HTTP/1.1 200");
    }
  }

  /** This JVM's FIFO directories (the agent names them after its pid). */
  private static List<Path> pipeDirectories() throws IOException {
    List<Path> dirs = new ArrayList<>();
    String prefix = "sandbox-agent-pipes-" + ProcessHandle.current().pid() + "-";
    try (DirectoryStream<Path> all = Files.newDirectoryStream(Path.of(System.getProperty("java.io.tmpdir")),
        prefix + "*")) {
      all.forEach(dirs::add);
    }
    dirs.sort(null);
    return dirs;
  }
}
