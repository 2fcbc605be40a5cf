package dev.sandboxsdk.mcp.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Result records write the JSON the tools wrote when they built it by hand: the same fields, in
 * the same order, with {@code null} written rather than left out.
 */
class ToolResultsTest {
  private static String json(Record r) {
    return Json.write(SandboxTools.json(r));
  }

  @Test
  void portResults() {
    assertThat(json(new PortTools.Ready(8080, true, "http", 12, "default")))
        .isEqualTo("{\"port\":8080,\"ready\":true,\"mode\":\"http\",\"waitedMs\":12,\"sandboxId\":\"default\"}");
    assertThat(json(new PortTools.Exposed(3000, "http://x/", null, null, "s")))
        .isEqualTo("{\"port\":3000,\"url\":\"http://x/\",\"name\":null,\"exposedAt\":null,\"sandboxId\":\"s\"}");
    assertThat(json(new PortTools.Listed(1, List.of(new PortTools.Port(1, "u", "n", "t")), "s")))
        .isEqualTo("{\"count\":1,\"ports\":[{\"port\":1,\"url\":\"u\",\"name\":\"n\",\"exposedAt\":\"t\"}],"
            + "\"sandboxId\":\"s\"}");
    assertThat(json(new PortTools.Unexposed(1, false, "s"))).isEqualTo("{\"port\":1,\"exposed\":false,\"sandboxId\":\"s\"}");
  }

  @Test
  void gitAndCheckpointResults() {
    assertThat(json(new GitTools.CheckedOut("file:///r", null, "r", "s")))
        .isEqualTo("{\"repoUrl\":\"file:///r\",\"branch\":null,\"targetDir\":\"r\",\"sandboxId\":\"s\"}");
    CheckpointTools.Info c = new CheckpointTools.Info("c1", "n", 5_000_000_000L, "2026-01-01T00:00:00Z");
    String info = "{\"id\":\"c1\",\"name\":\"n\",\"sizeBytes\":5000000000,\"createdAt\":\"2026-01-01T00:00:00Z\"}";
    assertThat(json(new CheckpointTools.Created(c, 7, "s")))
        .isEqualTo("{\"checkpoint\":" + info + ",\"durationMs\":7,\"sandboxId\":\"s\"}");
    assertThat(json(new CheckpointTools.Listed(List.of(c), 1, "s")))
        .isEqualTo("{\"checkpoints\":[" + info + "],\"count\":1,\"sandboxId\":\"s\"}");
    assertThat(json(new CheckpointTools.Restored(c, true, 2, 7, "s"))).isEqualTo("{\"checkpoint\":" + info
        + ",\"restored\":true,\"killedProcesses\":2,\"durationMs\":7,\"sandboxId\":\"s\"}");
    assertThat(json(new CheckpointTools.Deleted("c1", "n", true, "s")))
        .isEqualTo("{\"checkpointId\":\"c1\",\"name\":\"n\",\"deleted\":true,\"sandboxId\":\"s\"}");
  }

  @Test
  void fileAndProcessResults() {
    assertThat(json(new FileTools.Stat("a", "/w/a", "file", 3, "644", "rw-r--r--", "t", 1000, 1000, null, "s")))
        .isEqualTo("{\"path\":\"a\",\"absolutePath\":\"/w/a\",\"type\":\"file\",\"size\":3,\"mode\":\"644\","
            + "\"permissions\":\"rw-r--r--\",\"modifiedAt\":\"t\",\"uid\":1000,\"gid\":1000,\"symlinkTarget\":null,"
            + "\"sandboxId\":\"s\"}");
    assertThat(json(new FileTools.Moved("a", "b", "s"))).isEqualTo("{\"from\":\"a\",\"to\":\"b\",\"sandboxId\":\"s\"}");
    assertThat(json(new FileTools.Exists("a", false, "s")))
        .isEqualTo("{\"path\":\"a\",\"exists\":false,\"sandboxId\":\"s\"}");
    assertThat(json(new FileTools.Deleted("a", true, "s")))
        .isEqualTo("{\"path\":\"a\",\"deleted\":true,\"sandboxId\":\"s\"}");
    assertThat(json(new FileTools.Made("a", "s"))).isEqualTo("{\"path\":\"a\",\"sandboxId\":\"s\"}");
    assertThat(json(new ProcessTools.KilledAll(2, "s"))).isEqualTo("{\"killed\":2,\"sandboxId\":\"s\"}");
    assertThat(json(new ProcessTools.Cleaned(0, "s"))).isEqualTo("{\"removed\":0,\"sandboxId\":\"s\"}");
  }
}
