package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.Checkpoint;
import dev.sandboxsdk.ProcessInfo;
import dev.sandboxsdk.SandboxException;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The checkpoint tool group: {@code createCheckpoint}, {@code listCheckpoints},
 * {@code restoreCheckpoint}, {@code deleteCheckpoint}. A checkpoint is a copy of the sandbox's
 * whole workspace kept by its agent outside the workspace; restoring one makes the workspace
 * that copy again, byte for byte. A checkpoint is named by the id createCheckpoint returned,
 * or by its name (the newest of that name). Thread-safe.
 */
final class CheckpointTools implements ToolGroup {
  private final Sandboxes sandboxes;

  CheckpointTools(Sandboxes sandboxes) {
    this.sandboxes = sandboxes;
  }

  @Override
  public void register(Map<String, ToolHandler> tools) {
    tools.put("createCheckpoint", ToolHandler.blocking(CheckpointArgs.Create.class, this::createCheckpoint));
    tools.put("listCheckpoints", ToolHandler.blocking(CheckpointArgs.Listing.class, this::listCheckpoints));
    tools.put("restoreCheckpoint", ToolHandler.blocking(CheckpointArgs.Restore.class, this::restoreCheckpoint));
    tools.put("deleteCheckpoint", ToolHandler.blocking(CheckpointArgs.Delete.class, this::deleteCheckpoint));
  }

  // ---- results, in the order their fields are written

  /** A checkpoint as the results show it. */
  record Info(String id, String name, long sizeBytes, String createdAt) {
    static Info of(Checkpoint c) {
      return new Info(c.id(), c.name(), c.sizeBytes(), c.createdAt().toString());
    }
  }

  record Created(Info checkpoint, long durationMs, String sandboxId) {
  }

  record Listed(List<Info> checkpoints, int count, String sandboxId) {
  }

  record Restored(Info checkpoint, boolean restored, int killedProcesses, long durationMs, String sandboxId) {
  }

  record Deleted(String checkpointId, String name, boolean deleted, String sandboxId) {
  }

  ToolOutcome createCheckpoint(CheckpointArgs.Create args, CallContext ctx) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    String name = args.name();
    long t0 = System.nanoTime();
    Checkpoint c;
    try {
      c = sb.sandbox().checkpoints().create(name);
    } catch (SandboxException e) {
      throw explained(e, sb);
    }
    long ms = (System.nanoTime() - t0) / 1_000_000;
    ctx.log("info", "checkpoint '" + name + "' of sandbox '" + sb.id() + "': " + c.sizeBytes() + " bytes in " + ms
        + " ms");
    return new ToolOutcome(SandboxTools.json(new Created(Info.of(c), ms, sb.id())), "Checkpoint '" + c.name() + "' (id " + c.id()
        + ", " + size(c.sizeBytes()) + ") of sandbox '" + sb.id() + "' holds its workspace as it is now."
        + " restoreCheckpoint {\"sandboxId\":\"" + sb.id() + "\",\"checkpointId\":\"" + c.id()
        + "\"} brings these files back.", false);
  }

  ToolOutcome listCheckpoints(CheckpointArgs.Listing args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    List<Checkpoint> all = sb.sandbox().checkpoints().list();
    String text = all.isEmpty()
        ? "Sandbox '" + sb.id() + "' has no checkpoints; createCheckpoint makes one."
        : "Sandbox '" + sb.id() + "' has " + all.size() + " checkpoint(s), oldest first: "
            + String.join(", ", all.stream().map(c -> "'" + c.name() + "' (" + c.id() + ")").toList()) + ".";
    Listed r = new Listed(all.stream().map(Info::of).toList(), all.size(), sb.id());
    return new ToolOutcome(SandboxTools.json(r), text, false);
  }

  ToolOutcome restoreCheckpoint(CheckpointArgs.Restore args, CallContext ctx) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    Checkpoint c = resolve(sb, args.checkpointId());
    boolean force = args.force();
    int running = force ? (int) sb.sandbox().listProcesses().stream().filter(ProcessInfo::isRunning).count() : 0;
    long t0 = System.nanoTime();
    try {
      sb.sandbox().checkpoints().restore(c.id(), force);
    } catch (SandboxException e) {
      if ("PROCESSES_RUNNING".equals(e.code())) {
        List<String> what = sb.sandbox().listProcesses().stream().filter(ProcessInfo::isRunning)
            .map(p -> p.id() + " (" + p.command() + ")").toList();
        throw new ToolException("Sandbox '" + sb.id() + "' has running processes" + (what.isEmpty() ? ""
            : ": " + String.join(", ", what)) + ". Restoring replaces the files under them: stop them (killProcess,"
            + " killAllProcesses) or call restoreCheckpoint with force: true, which kills them first. Nothing was"
            + " changed.");
      }
      throw explained(e, sb);
    }
    long ms = (System.nanoTime() - t0) / 1_000_000;
    ctx.log("info", "restored checkpoint '" + c.name() + "' of sandbox '" + sb.id() + "' in " + ms + " ms");
    Restored r = new Restored(Info.of(c), true, running, ms, sb.id());
    return new ToolOutcome(SandboxTools.json(r), "Sandbox '" + sb.id() + "' has its workspace as at"
        + " checkpoint '" + c.name() + "' (" + c.createdAt() + ") again; files made since are gone"
        + (running > 0 ? ", and " + running + " running process(es) were killed first" : "") + ".", false);
  }

  ToolOutcome deleteCheckpoint(CheckpointArgs.Delete args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    Checkpoint c = resolve(sb, args.checkpointId());
    try {
      sb.sandbox().checkpoints().delete(c.id());
    } catch (SandboxException e) {
      throw explained(e, sb);
    }
    return new ToolOutcome(SandboxTools.json(new Deleted(c.id(), c.name(), true, sb.id())), "Deleted checkpoint '" + c.name() + "' (" + c.id()
        + ") of sandbox '" + sb.id() + "'.", false);
  }

  /** The checkpoint errors a model can act on, with what to do; others as they are. */
  private static RuntimeException explained(SandboxException e, Sandboxes.Entry sb) {
    if ("CHECKPOINT_BUSY".equals(e.code())) {
      return new ToolException("Another checkpoint, restore or delete is running in sandbox '" + sb.id() + "': "
          + e.getMessage() + ". Try again when it has finished.");
    }
    if ("CHECKPOINT_NOT_FOUND".equals(e.code())) {
      return new ToolException(e.getMessage() + ". It was deleted meanwhile; listCheckpoints shows the checkpoints"
          + " that exist.");
    }
    return e;
  }

  /** The checkpoint with this id, else the newest with this name; an error that lists them if none. */
  private static Checkpoint resolve(Sandboxes.Entry sb, String idOrName) {
    List<Checkpoint> all = sb.sandbox().checkpoints().list();
    Optional<Checkpoint> byId = all.stream().filter(c -> c.id().equals(idOrName)).findFirst();
    if (byId.isPresent()) {
      return byId.get();
    }
    return all.stream().filter(c -> c.name().equals(idOrName)).max(Comparator.comparing(Checkpoint::createdAt))
        .orElseThrow(() -> new ToolException("There is no checkpoint '" + idOrName + "' in sandbox '" + sb.id() + "'"
            + (all.isEmpty() ? ": it has none (createCheckpoint makes one)."
                : ". Its checkpoints: " + String.join(", ", all.stream().map(c -> "'" + c.name() + "' (id " + c.id()
                    + ")").toList()) + "; give an id or a name.")));
  }

  private static String size(long bytes) {
    if (bytes < 1024) {
      return bytes + " bytes";
    }
    double kib = bytes / 1024.0;
    return kib < 1024 ? String.format(Locale.ROOT, "%.1f KiB", kib) : String.format(Locale.ROOT, "%.1f MiB", kib / 1024);
  }
}
