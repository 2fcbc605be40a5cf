package dev.sandboxsdk.agent.checkpoint;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Instant;

/** A checkpoint as its metadata file records it. */
public record Checkpoint(String id, String name, long sizeBytes, Instant createdAt) {
  /** The fields of its metadata file (the wire answer is {@code CheckpointMessages.CheckpointInfo}, the same fields). */
  public ObjectNode toJson() {
    ObjectNode n = JsonNodeFactory.instance.objectNode();
    n.put("id", id);
    n.put("name", name);
    n.put("sizeBytes", sizeBytes);
    n.put("createdAt", createdAt.toString());
    return n;
  }
}
