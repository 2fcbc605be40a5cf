package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.GitCheckout;
import dev.sandboxsdk.GitCheckoutOptions;
import dev.sandboxsdk.ProcessInfo;
import dev.sandboxsdk.ProviderCapabilities;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The lifecycle tool group: {@code getSandbox} (which can make a persistent sandbox and clone a
 * repository into it), {@code listSandboxes} (with each sandbox's status and times, also the
 * persistent ones other servers left), {@code shutdownSandbox}, {@code wakeSandbox} and
 * {@code destroy}. A persistent sandbox is a named sandbox of the provider: its files and
 * checkpoints outlive this server; shutting it down ends its processes and keeps its files. On
 * Kubernetes a persistent sandbox is a named pod, which outlives this server but cannot shut down
 * and wake (a pod does not start again): those two tools say so and what to do instead.
 * Thread-safe.
 */
final class LifecycleTools implements ToolGroup {
  private final Sandboxes sandboxes;
  private final Map<String, String> passEnv;

  LifecycleTools(Sandboxes sandboxes, Map<String, String> passEnv) {
    this.sandboxes = sandboxes;
    this.passEnv = passEnv;
  }

  @Override
  public void register(Map<String, ToolHandler> tools) {
    tools.put("getSandbox", ToolHandler.blocking(LifecycleArgs.Get.class, this::getSandbox));
    tools.put("listSandboxes", ToolHandler.blocking(LifecycleArgs.Listing.class, this::listSandboxes));
    tools.put("shutdownSandbox", ToolHandler.blocking(LifecycleArgs.Shutdown.class, this::shutdownSandbox));
    tools.put("wakeSandbox", ToolHandler.blocking(LifecycleArgs.Wake.class, this::wakeSandbox));
    tools.put("destroy", ToolHandler.blocking(LifecycleArgs.Destroy.class, this::destroy));
  }

  ToolOutcome getSandbox(LifecycleArgs.Get args, CallContext ctx) {
    String id = idOf(args.sandboxId());
    Boolean keepAlive = args.keepAlive();
    Integer idle = args.idleTimeoutSeconds();
    boolean persistent = args.persistent();
    String repository = args.repository();
    if (args.branch() != null && repository == null) {
      throw new ToolException("branch needs repository: the URL of the git repository to clone into the new sandbox.");
    }
    long t0 = System.nanoTime();
    Sandboxes.Got got = sandboxes.getOrCreate(id, new Sandboxes.Settings(keepAlive, idle, persistent));
    Sandboxes.Entry e = got.entry();
    ObjectNode r = Json.object();
    GitCheckout cloned = null;
    if (got.created() && repository != null) {
      cloned = cloneInto(e, repository, args.branch());
    }
    if (got.created()) {
      ctx.log("info", "created " + (e.persistent() ? "persistent " : "") + e.mode().wireName() + " sandbox '" + id
          + "' in " + (System.nanoTime() - t0) / 1_000_000 + " ms");
    }
    SandboxInfo info = sandboxes.status(e);
    r.set("sandbox", sandboxJson(id, e, info, null));
    r.put("created", got.created());
    if (cloned != null) {
      r.putObject("repository").put("repoUrl", cloned.repoUrl()).put("branch", cloned.branch())
          .put("targetDir", cloned.targetDir());
    }
    List<String> text = new ArrayList<>();
    if (got.created()) {
      text.add("Created " + (e.persistent() ? "persistent " : "") + "sandbox '" + id + "'"
          + (cloned != null ? " with " + cloned.repoUrl() + " (branch " + cloned.branch() + ") cloned into "
              + cloned.targetDir() : "") + ".");
      if (e.persistent() && !sandboxes.capabilities().resumable()) {
        text.add("Its pod outlives this server (a later server finds it) until destroy removes it or its idle timeout"
            + " ends it; a pod cannot be shut down and woken, and its files and checkpoints last as long as the pod.");
      } else if (e.persistent()) {
        text.add("Its files and checkpoints outlive this server; shutdownSandbox stops it, wakeSandbox starts it"
            + " again, destroy removes it.");
      }
    } else {
      text.add("Sandbox '" + id + "' exists already" + (e.persistent() ? " (persistent)" : "")
          + "; settings given now do not change it.");
      if (repository != null) {
        text.add("Nothing was cloned: repository applies when a sandbox is created (gitCheckout clones into an"
            + " existing one).");
      }
    }
    if (info != null && !info.isRunning() && !sandboxes.capabilities().resumable()) {
      text.add(SandboxLiveness.ended(id).getMessage());
      r.put("note", "The sandbox's pod has ended: destroy it and create a new one.");
    } else if (info != null && !info.isRunning()) {
      text.add("It is stopped: call wakeSandbox {\"sandboxId\":\"" + id + "\"} to start it again.");
      r.put("note", "The sandbox is stopped: call wakeSandbox before using it.");
    }
    return new ToolOutcome(r, String.join(" ", text), false);
  }

  /**
   * Clones {@code url} into the sandbox just created; if that fails, the sandbox is destroyed
   * again, so that the same getSandbox call can be repeated.
   */
  private GitCheckout cloneInto(Sandboxes.Entry e, String url, String branch) {
    GitCheckoutOptions.Builder options = GitCheckoutOptions.builder().timeout(GitTools.DEFAULT_TIMEOUT);
    if (branch != null) {
      options.branch(branch);
    }
    try {
      return e.sandbox().git().checkout(url, options.build());
    } catch (RuntimeException ex) {
      try {
        e.sandbox().destroy();
      } catch (RuntimeException ignored) {
        // the clone's failure is what the model needs to see
      }
      sandboxes.remove(e);
      String why = ex instanceof SandboxException se && se.code() != null
          ? "git clone failed (" + se.code() + "): " + ex.getMessage() + GitTools.hint(se.code())
          : "git clone failed: " + ex.getMessage();
      throw new ToolException(why + " Sandbox '" + e.id() + "' was not kept; call getSandbox again with a"
          + " repository it can clone" + (passEnv.isEmpty() ? "" : ", or create it without one and clone with"
          + " gitCheckout (which takes credentials)") + ".");
    }
  }

  ToolOutcome listSandboxes(LifecycleArgs.Listing args) {
    ObjectNode r = Json.object();
    ArrayNode arr = r.putArray("sandboxes");
    List<Sandboxes.Listed> list = sandboxes.listAll();
    ProviderCapabilities can = list.stream().allMatch(l -> l.entry() != null) ? null : sandboxes.capabilities();
    int running = 0;
    for (Sandboxes.Listed l : list) {
      ObjectNode o = sandboxJson(l.id(), l.entry(), l.info(), can);
      if (l.entry() == null) {
        o.put("workspace", l.workspace());
      }
      if ("running".equals(o.get("status").asText())) {
        running++;
      }
      arr.add(o);
    }
    r.put("count", list.size());
    int stopped = list.size() - running;
    String text = list.isEmpty() ? "No sandboxes. getSandbox creates one."
        : list.size() + " sandbox(es): " + running + " running, " + stopped + " stopped"
            + (stopped == 0 ? "." : !sandboxes.capabilities().resumable()
                ? " (a stopped pod has ended and cannot be woken: destroy it)." : " (wakeSandbox starts a stopped one).");
    return new ToolOutcome(r, text, false);
  }

  ToolOutcome shutdownSandbox(LifecycleArgs.Shutdown args, CallContext ctx) {
    String id = idOf(args.sandboxId());
    Sandboxes.Entry e = persistentEntry(id, "shut down");
    if (!sandboxes.capabilities().resumable()) {
      try {
        e.managed().shutdown(); // a pod cannot stop and start again: the provider refuses and says why
      } catch (SandboxException ex) {
        throw notOnKubernetes(id, "shut down", ex.getMessage());
      }
    }
    SandboxInfo before = sandboxes.status(e);
    int calls = sandboxes.callsInFlight(id) - 1; // not counting this call
    if (calls > 0 && !args.force()) {
      throw new ToolException("Sandbox '" + id + "' is in use: " + calls + " tool call(s) still running there."
          + " Wait for them or cancel them, or call shutdownSandbox with force: true.");
    }
    boolean wasRunning = before == null || before.isRunning();
    int processes = 0;
    if (wasRunning) {
      try {
        processes = (int) e.sandbox().listProcesses().stream().filter(ProcessInfo::isRunning).count();
      } catch (RuntimeException ex) {
        processes = 0; // it may be stopping on its own; shutdown below says what it finds
      }
      e.managed().shutdown();
    }
    sandboxes.stateChanged(e, false);
    SandboxInfo info = sandboxes.status(e);
    ctx.log("info", "shut down sandbox '" + id + "'");
    ObjectNode r = Json.object();
    r.set("sandbox", sandboxJson(id, e, info, null));
    r.put("wasRunning", wasRunning).put("stoppedProcesses", processes);
    String text = (wasRunning ? "Sandbox '" + id + "' is shut down" + (processes > 0 ? " (" + processes
        + " running process(es) ended)" : "") : "Sandbox '" + id + "' was stopped already")
        + ": its files and checkpoints are kept. wakeSandbox {\"sandboxId\":\"" + id + "\"} starts it again.";
    return new ToolOutcome(r, text, false);
  }

  ToolOutcome wakeSandbox(LifecycleArgs.Wake args, CallContext ctx) {
    String id = idOf(args.sandboxId());
    Sandboxes.Entry e = persistentEntry(id, "woken");
    SandboxInfo before = sandboxes.status(e);
    boolean wasRunning = before != null && before.isRunning();
    long t0 = System.nanoTime();
    // Always through the handle, also when the sandbox runs: something else may have woken it after
    // this server shut it down, and only wake() connects this server's handle to it again (a no-op
    // when the handle is connected already).
    try {
      e.managed().wake();
    } catch (SandboxException ex) {
      if (!sandboxes.capabilities().resumable()) {
        throw new ToolException(SandboxLiveness.ended(id).getMessage() + " (The provider says: " + ex.getMessage() + ".)");
      }
      throw ex;
    }
    sandboxes.stateChanged(e, true);
    SandboxInfo info = sandboxes.status(e);
    long ms = (System.nanoTime() - t0) / 1_000_000;
    if (!wasRunning) {
      ctx.log("info", "woke sandbox '" + id + "' in " + ms + " ms");
    }
    ObjectNode r = Json.object();
    r.set("sandbox", sandboxJson(id, e, info, null));
    r.put("wasRunning", wasRunning).put("durationMs", ms);
    String text = wasRunning ? "Sandbox '" + id + "' is running already."
        : "Sandbox '" + id + "' is running again with its files and checkpoints; processes that ran before it"
            + " stopped are gone (start them again).";
    return new ToolOutcome(r, text, false);
  }

  /** The persistent sandbox {@code id}, running or not; for shutdown and wake, which only persistent ones have. */
  private Sandboxes.Entry persistentEntry(String id, String verb) {
    Sandboxes.Entry e = sandboxes.find(id, false); // a default sandbox made only to refuse would be a waste
    if (e.persistent()) {
      return e;
    }
    ProviderCapabilities can = sandboxes.capabilities();
    if (can.managed() && !can.resumable()) { // a pod: no sandbox of the provider can shut down and wake
      throw notOnKubernetes(id, verb, null);
    }
    throw new ToolException("Sandbox '" + id + "' is not persistent, so it cannot be " + verb + ": only sandboxes"
        + " created with getSandbox {\"sandboxId\": \"...\", \"persistent\": true} keep their files while stopped."
        + (!can.managed() ? " This server drives a remote agent, which it does not start or stop."
            : " destroy removes this one; its files can be kept only by copying them out first."));
  }

  /**
   * The error for shutdownSandbox or wakeSandbox on a Kubernetes sandbox: a pod cannot stop and
   * start again with its files; what to do instead. {@code why} is the provider's own reason, if any.
   */
  static ToolException notOnKubernetes(String id, String verb, String why) {
    return new ToolException("Sandbox '" + id + "' cannot be " + verb + ": it is a Kubernetes pod, which cannot stop"
        + " and start again with its files (its workspace and checkpoints live as long as the pod)."
        + (why != null ? " The provider says: " + why + "." : "")
        + " It keeps running until its idle timeout or until you call destroy {\"sandboxId\":\"" + id + "\"} when done;"
        + " copy out what must survive first (readFile). To let sandboxes sleep and wake, run the server with"
        + " --provider container or local.");
  }

  ToolOutcome destroy(LifecycleArgs.Destroy args, CallContext ctx) {
    String id = idOf(args.sandboxId());
    if (sandboxes.listAll().stream().noneMatch(l -> l.id().equals(id))) {
      throw new ToolException("There is no sandbox '" + id + "' (listSandboxes shows the existing ones);"
          + " nothing was destroyed.");
    }
    Sandboxes.Entry sb = sandboxes.find(id);
    boolean force = args.force();
    SandboxInfo info = sandboxes.status(sb);
    boolean running = info == null || info.isRunning();
    List<ProcessInfo> processes = running
        ? sb.sandbox().listProcesses().stream().filter(ProcessInfo::isRunning).toList() : List.of();
    int calls = sandboxes.callsInFlight(id) - 1; // not counting this call
    if ((!processes.isEmpty() || calls > 0) && !force) {
      List<String> what = new ArrayList<>();
      processes.forEach(p -> what.add("process " + p.id() + " (" + p.command() + ")"));
      if (calls > 0) {
        what.add(calls + " tool call(s) still running there (exec, runCode, streamProcessLogs or a file tool)");
      }
      throw new ToolException("Sandbox '" + id + "' is in use: " + String.join(", ", what) + ". Stop them (killProcess,"
          + " killAllProcesses, or cancel the calls), or call destroy with force: true to kill everything.");
    }
    int killed = 0;
    if (sandboxes.capabilities().managed()) { // a local agent with its workspace, or a container with its volume
      killed = processes.size();
      sb.sandbox().destroy();
    } else {
      killed = sb.sandbox().killAllProcesses();
      sb.sandbox().cleanupCompletedProcesses();
      sb.sandbox().close();
    }
    sandboxes.remove(sb);
    ctx.log("info", "destroyed sandbox '" + id + "'" + (killed > 0 ? ", killing " + killed + " process(es)" : ""));
    ObjectNode r = Json.object().put("sandboxId", id).put("destroyed", true).put("killedProcesses", killed);
    return new ToolOutcome(r, "Destroyed sandbox '" + id + "'" + (sb.persistent() ? " with its files and checkpoints"
        : "") + (killed > 0 ? ", killing " + killed + " process(es)" : "") + ".", false);
  }

  private static String idOf(String id) {
    return id == null ? Sandboxes.DEFAULT_ID : id;
  }

  /**
   * A sandbox record: from the entry this server holds and, for a persistent sandbox, what its
   * provider says now ({@code info}; null when unknown). Either may be missing, not both; without the
   * entry, {@code can} (the server's capabilities) says where its workspace is and how it is isolated.
   */
  static ObjectNode sandboxJson(String id, Sandboxes.Entry e, SandboxInfo info, ProviderCapabilities can) {
    ObjectNode o = Json.object().put("sandboxId", id);
    o.put("mode", e != null ? e.mode().wireName() : info.provider()); // a provider's name is its mode's
    boolean persistent = e == null || e.persistent();
    o.put("persistent", persistent);
    String status = info != null ? (info.isRunning() ? "running" : "stopped") : e.persistent() ? "unknown" : "running";
    o.put("status", status);
    if (e != null && e.keepAlive() != null) {
      o.put("keepAlive", e.keepAlive());
    } else {
      o.putNull("keepAlive");
    }
    o.put("idleTimeoutSeconds", e == null || e.idleTimeout() == null ? null : e.idleTimeout().toSeconds());
    o.put("createdAt", (e != null ? e.createdAt() : info.createdAt()).toString());
    o.put("lastActivityAt", info != null && info.lastActivityAt() != null ? info.lastActivityAt().toString() : null);
    if (e != null) {
      return o.put("workspace", e.workspace()).put("providerId", e.providerId()).put("isolation", e.isolation());
    }
    boolean fromImage = can.fromImage(); // a container's or pod's id is the engine's; a local one's is its name
    return o.put("workspace", can.workspace()).put("providerId", fromImage ? info.id() : null)
        .put("isolation", can.isolation());
  }
}
