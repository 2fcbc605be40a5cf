package dev.sandboxsdk.agent.checkpoint;

import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.http.Json;
import dev.sandboxsdk.agent.http.Query;
import dev.sandboxsdk.agent.http.Replies;
import dev.sandboxsdk.agent.http.Responses;
import dev.sandboxsdk.agent.http.Routes;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * {@code /api/checkpoints}: the routes of checkpoints of the whole workspace; the {@link
 * CheckpointStore} keeps them and says what may run when.
 */
public final class CheckpointRoutes {
  private final ProcessManager processes;
  private final AgentConfig config;
  private final CheckpointStore store;

  public CheckpointRoutes(ProcessManager processes) {
    this.processes = processes;
    this.config = processes.config();
    this.store = new CheckpointStore(processes);
  }

  /** Registers creating, listing, restoring and deleting checkpoints. */
  public void register(Routes routes) {
    routes.on("GET", "/api/checkpoints", this::list)
        .on("POST", "/api/checkpoints", this::create)
        .on("DELETE", "/api/checkpoints/", "", id -> Replies.decode(id, "checkpointId"), this::delete)
        .on("POST", "/api/checkpoints/", "/restore", id -> Replies.decode(id, "checkpointId"), this::restore);
  }

  /** POST /api/checkpoints {"name": ...}: 201 with the new checkpoint. */
  void create(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Json body = Json.read(exchange, config.maxBodyBytes(), processes.outputBudget()).allowOnly(Set.of("name"));
    Checkpoint c = store.create(body.string("name"));
    Responses.send(exchange, 201, Responses.stamped(new CheckpointMessages.OneCheckpoint(
        CheckpointMessages.CheckpointInfo.of(c)), true));
  }

  /** GET /api/checkpoints: every checkpoint, oldest first. */
  void list(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    List<CheckpointMessages.CheckpointInfo> items = new ArrayList<>();
    for (Checkpoint c : store.list()) {
      items.add(CheckpointMessages.CheckpointInfo.of(c));
    }
    Responses.ok(exchange, new CheckpointMessages.CheckpointList(items));
  }

  /** POST /api/checkpoints/{id}/restore {"force": false}. */
  void restore(HttpExchange exchange, String id) throws IOException {
    Query.none(exchange);
    Json body = Json.read(exchange, config.maxBodyBytes(), processes.outputBudget()).allowOnly(Set.of("force"));
    Boolean forceField = body.bool("force");
    boolean force = forceField != null && forceField;
    CheckpointStore.Restored r = store.restore(id, force);
    Responses.ok(exchange, new CheckpointMessages.Restored(CheckpointMessages.CheckpointInfo.of(r.checkpoint()),
        r.killedProcesses()));
  }

  /** DELETE /api/checkpoints/{id}. */
  void delete(HttpExchange exchange, String id) throws IOException {
    Query.none(exchange);
    Responses.ok(exchange, new CheckpointMessages.OneCheckpoint(CheckpointMessages.CheckpointInfo.of(store.delete(id))));
  }

  /** Deletes the temporary checkpoint directory; a given one stays with its checkpoints. */
  public void close() {
    store.close();
  }
}
