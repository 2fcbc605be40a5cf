package dev.sandboxsdk.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.HostBait;
import dev.sandboxsdk.testkit.PathSwapper;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The file tools driven as a model would while a command in the (default, local) sandbox swaps a
 * workspace directory with a link to a host directory as fast as it can: readFile, writeFile,
 * listFiles, deleteFile, moveFile, fileExists and statFile must never read, name, change, delete
 * or move a host file.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class HostileFilePathsIT {
  private static final long RACE_MS = 6_000;
  private static final int VICTIMS = 200;

  @TempDir
  Path tmp;

  @Test
  void fileToolsNeverLeaveTheWorkspaceWhileACommandSwapsLinksIn() throws Exception {
    HostBait bait = HostBait.plant(tmp.resolve("host"), VICTIMS);
    Path host = bait.dir();
    try (JarClient.Stdio server = JarClient.Stdio.start(tmp, List.of(), Map.of())) {
      server.initialize();
      String setup = "set -e; mkdir d; printf inside > d/f; for i in $(seq 0 " + (VICTIMS - 1) + "); do"
          + " printf inside > d/victim-$i; done; ln -s " + host + " l; cat > swap.py <<'EOF'\n"
          + PathSwapper.python("d", "l") + "EOF\n";
      JsonNode made = server.call("exec", args("command", setup));
      assertThat(made.path("isError").asBoolean()).as("setup: %s", made).isFalse();
      JsonNode swapper = server.call("startProcess", args("command", "exec python3 swap.py"));
      assertThat(swapper.path("isError").asBoolean()).as("swapper: %s", swapper).isFalse();
      assertThat(Await.until(10_000, () -> exists(server, PathSwapper.READY)))
          .as("the swapper created %s", PathSwapper.READY).isTrue();

      List<String> escapes = new ArrayList<>();
      long end = System.currentTimeMillis() + RACE_MS;
      int calls = 0;
      for (int i = 0; System.currentTimeMillis() < end; i++, calls++) {
        JsonNode r = server.call(tool(i), arguments(i));
        String text = r.toString();
        boolean found = (tool(i).equals("fileExists") || tool(i).equals("statFile")) && !r.path("isError").asBoolean()
            && (r.path("structuredContent").path("exists").asBoolean(true));
        if (text.contains("HOSTSECRET") || text.contains(host.toString()) || found) {
          escapes.add(tool(i) + ": " + text);
        }
      }
      System.out.printf("MCP file tools race: %d calls in %d ms, %d left the workspace%n", calls, RACE_MS,
          escapes.size());
      server.call("killAllProcesses", args());

      assertThat(escapes).as("tool results that left the workspace").isEmpty();
      assertThat(bait.changes()).as("what the race did to the host directory's files").isEmpty();
    }
  }

  private static final String[] TOOLS = {"readFile", "writeFile", "listFiles", "deleteFile", "moveFile", "fileExists",
      "statFile"};

  private static String tool(int i) {
    return TOOLS[i % TOOLS.length];
  }

  private static ObjectNode arguments(int i) {
    int victim = i % VICTIMS;
    switch (tool(i)) {
      case "readFile":
        return args("path", "d/f");
      case "writeFile":
        return args("path", "d/w-" + i, "content", "x");
      case "listFiles":
        return args("path", "d");
      case "deleteFile":
        return args("path", "d/victim-" + victim);
      case "moveFile":
        return args("from", "d/victim-" + victim, "to", "moved-" + i);
      case "fileExists":
        return args("path", "d/hostonly");
      default:
        return args("path", "d/hostonly");
    }
  }

  /** Whether the fileExists tool finds {@code path} in the workspace. */
  private static boolean exists(JarClient.Stdio server, String path) {
    try {
      return server.call("fileExists", args("path", path)).path("structuredContent").path("exists").asBoolean();
    } catch (Exception e) {
      throw new IllegalStateException("fileExists " + path, e);
    }
  }

  private static ObjectNode args(Object... kv) {
    ObjectNode o = JarClient.MAPPER.createObjectNode();
    for (int i = 0; i < kv.length; i += 2) {
      o.set((String) kv[i], JarClient.MAPPER.valueToTree(kv[i + 1]));
    }
    return o;
  }
}
