package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.Checkpoint;
import dev.sandboxsdk.SandboxCheckpoints;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The {@link SandboxCheckpoints} of a {@link RealSandbox}, over {@code /api/checkpoints}. A checkpoint or restore
 * answers when the agent's tar is done, which for a large workspace takes long: those calls wait
 * up to the agent's own limit for tar. Stateless and thread-safe.
 */
final class RealCheckpoints implements SandboxCheckpoints {
  /** The agent stops a tar that runs longer than an hour; wait a little more for its answer. */
  private static final Duration TAR_ANSWER = Duration.ofMinutes(61);

  private final RealSandbox sandbox;
  private final AgentHttp http;

  RealCheckpoints(RealSandbox sandbox) {
    this.sandbox = sandbox;
    this.http = sandbox.http;
  }

  @Override
  public Checkpoint create(String name) {
    Objects.requireNonNull(name, "name == null");
    if (!Checks.isCheckpointName(name)) {
      throw new IllegalArgumentException("not a valid checkpoint name: '" + name + "' (1 to 64 of A-Z a-z 0-9 . _ -)");
    }
    JsonNode n = http.callWaitingAtLeast(http.post(http.url("api", "checkpoints"),
        Wire.MAPPER.createObjectNode().put("name", name)), "checkpoints().create " + name, TAR_ANSWER);
    return checkpoint(n.path("checkpoint"));
  }

  @Override
  public List<Checkpoint> list() {
    JsonNode n = http.call(http.get(http.url("api", "checkpoints")), "checkpoints().list");
    JsonNode items = n.path("checkpoints");
    if (!items.isArray()) {
      throw Wire.malformed("checkpoints().list", "no 'checkpoints' array");
    }
    List<Checkpoint> all = new ArrayList<>();
    for (JsonNode item : items) {
      all.add(checkpoint(item));
    }
    return List.copyOf(all);
  }

  @Override
  public void restore(String id, boolean force) {
    checkId(id);
    http.callWaitingAtLeast(http.post(http.url("api", "checkpoints", id, "restore"),
        Wire.MAPPER.createObjectNode().put("force", force)), "checkpoints().restore " + id, TAR_ANSWER);
  }

  @Override
  public void delete(String id) {
    checkId(id);
    http.call(http.delete(http.url("api", "checkpoints", id)), "checkpoints().delete " + id);
  }

  /** The id goes into the URL path: anything the agent cannot have made is refused here. */
  private static void checkId(String id) {
    Objects.requireNonNull(id, "checkpointId == null");
    if (!Checks.isCheckpointId(id)) {
      throw new IllegalArgumentException("not a checkpoint id: '" + id + "' (ids look like ckpt_0123456789abcdef)");
    }
  }

  private static Checkpoint checkpoint(JsonNode n) {
    if (!n.isObject()) {
      throw Wire.malformed("checkpoint", "not an object");
    }
    return new Checkpoint(Wire.text(n, "id"), Wire.text(n, "name"), Wire.longValue(n, "sizeBytes"),
        Wire.instant(n, "createdAt"));
  }
}
