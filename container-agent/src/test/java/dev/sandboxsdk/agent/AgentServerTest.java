package dev.sandboxsdk.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
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
