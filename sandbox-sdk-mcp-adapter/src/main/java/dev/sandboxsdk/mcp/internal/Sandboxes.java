package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.ProviderCapabilities;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxConnectionException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxProvider;
import dev.sandboxsdk.SandboxSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server's sandboxes by id. Locally each id is its own {@link LocalSandbox}; with
 * {@code --provider container} or {@code kubernetes} each id is a sandbox (a container, a pod) the
 * {@link SandboxProvider} creates from the configured {@link SandboxSpec}; with an agent URL there is a single sandbox, {@code default}, on
 * that agent. The {@code default} sandbox is created on first use; other ids only by
 * {@code getSandbox}. Thread-safe.
 */
public final class Sandboxes implements AutoCloseable {
  public static final String DEFAULT_ID = "default";
  static final Duration DEFAULT_IDLE = Duration.ofMinutes(10);
  /**
   * A provider's sandbox that a call reached, or that the provider listed as running, this
   * recently counts as alive without asking the provider again. It cannot have stopped for
   * idleness since (the shortest idle timeout is 10 s); if it was killed, the next call fails and
   * marks it for a check.
   */
  static final Duration SEEN_FOR = Duration.ofSeconds(5);
  /** Labels on every provider sandbox: the MCP sandbox id, and the server process that made it. */
  static final String ID_LABEL = "mcp.sandbox-id";
  static final String SERVER_LABEL = "mcp.server-pid";
  /** Label of a persistent sandbox the server made (a provider's): listSandboxes finds it from any server. */
  static final String PERSISTENT_LABEL = "mcp.persistent";
  private static final Duration CLOSE_WAIT = Duration.ofSeconds(30);
  static final Pattern ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
  private static final Logger log = LoggerFactory.getLogger(Sandboxes.class);

  /**
   * One sandbox and how it was made.
   *
   * @param mode where the server's sandboxes run, as the configuration says; for the sandbox records
   *     only: what the server does with a sandbox follows from {@link Sandboxes#capabilities()} and the
   *     other components
   * @param workspace the directory commands start in, when known (null for a remote agent)
   * @param agentPid the process id of a local agent that is this JVM's child; -1 for any other sandbox
   *     (a provider's, a persistent one, the remote agent)
   * @param providerId the engine's id of a sandbox the provider of every sandbox made (a container id, a
   *     pod name); null for local sandboxes and the remote agent
   * @param dead set once the sandbox is known to be gone; it is then forgotten. For a local sandbox
   *     the agent's exit sets it (see {@link SandboxLauncher#localEntry}), so that no call reads /proc
   * @param seenAt {@link System#nanoTime()} when a call last reached it or its provider last listed it running
   * @param persistent a named sandbox of the provider (getSandbox {@code persistent: true}, or one an
   *     earlier server left): it outlives this server, and is stopped rather than forgotten when idle
   * @param keepAlive null when not known (a persistent sandbox this server did not create)
   * @param isolation what keeps its commands from this machine, as listSandboxes reports it ({@code bwrap},
   *     {@code none}, {@code container}, {@code pod}); null when unknown
   */
  public record Entry(String id, Sandbox sandbox, SandboxMode mode, Boolean keepAlive, Duration idleTimeout,
      Instant createdAt, String workspace, long agentPid, String providerId, AtomicBoolean dead,
      AtomicLong seenAt, boolean persistent, String isolation) {

    /** Whether the provider of every sandbox made it (a container, a pod): its listing says whether it runs. */
    boolean fromProvider() {
      return providerId != null;
    }

    /** Whether its agent is this JVM's child (a local sandbox): the agent's exit marks it dead. */
    boolean childAgent() {
      return agentPid >= 0;
    }

    /** The provider's handle of a persistent sandbox. */
    ManagedSandbox managed() {
      return (ManagedSandbox) sandbox;
    }
  }

  /**
   * What a getSandbox call asks for when it creates a sandbox.
   *
   * @param keepAlive null for the default (false)
   * @param idleTimeoutSeconds null for {@link #DEFAULT_IDLE}
   * @param persistent create a named sandbox of the provider, which outlives this server
   */
  public record Settings(Boolean keepAlive, Integer idleTimeoutSeconds, boolean persistent) {
  }

  /**
   * A sandbox as listSandboxes shows it: one this server holds ({@code entry}), one its provider
   * lists that this server has not used yet ({@code info} only), or both.
   */
  public record Listed(String id, Entry entry, SandboxInfo info, String workspace) {
  }

  /** The outcome of {@link #getOrCreate}. */
  public record Got(Entry entry, boolean created) {
  }

  private final AdapterConfig config;
  private final SandboxProviders providers;
  private final SandboxLauncher launcher;
  private final SandboxLiveness liveness;
  private final Map<String, CompletableFuture<Entry>> byId = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> inFlight = new ConcurrentHashMap<>();
  private volatile boolean closed;

  public Sandboxes(AdapterConfig config) {
    this(config, config.providerFactory());
  }

  /**
   * With {@code provider} making the sandboxes of a configuration with {@code --provider container} or
   * {@code kubernetes} (tests pass a fake).
   */
  Sandboxes(AdapterConfig config, SandboxProvider provider) {
    this(config, provider == null ? null : () -> SandboxProviders.Made.of(provider));
  }

  private Sandboxes(AdapterConfig config, Supplier<SandboxProviders.Made> providerFactory) {
    this.providers = new SandboxProviders(config, providerFactory);
    this.config = config;
    this.launcher = new SandboxLauncher(config, providers);
    this.liveness = new SandboxLiveness(providers);
  }

  /**
   * What this server's sandboxes can do: its provider's capabilities, or a remote agent's (which
   * the server neither starts nor stops). Makes the provider if it is not made yet.
   */
  public ProviderCapabilities capabilities() {
    return providers.capabilities();
  }

  /**
   * With a provider: makes it and logs whether its engine answers, on a background thread, so
   * the first sandbox does not wait for the engine client to load and an operator sees a missing
   * engine in the log at start. For the server's start.
   */
  public void logProviderInBackground() {
    providers.logInBackground();
  }

  /**
   * A tool call on sandbox {@code id} (null meaning default) begins: it is in flight until
   * {@link #end}. Stopped sandboxes are forgotten first, so the call never gets one.
   */
  public void begin(String id) {
    liveness.expire(started(), false, this::remove);
    inFlight.computeIfAbsent(id == null ? DEFAULT_ID : id, k -> new AtomicInteger()).incrementAndGet();
  }

  public void end(String id) {
    AtomicInteger n = inFlight.get(id == null ? DEFAULT_ID : id);
    if (n != null) {
      n.decrementAndGet();
    }
  }

  /**
   * Whether a call on sandbox {@code id} can {@link #begin} and {@link #require} it without waiting:
   * the sandbox exists and has started, and no sandbox is due for the checks that {@link #begin}
   * makes on the way (closing a local sandbox whose agent has gone, asking the container engine
   * about a container not seen for {@link #SEEN_FOR}). A call for which this is false may wait
   * (for a sandbox to start, or for the engine), so it belongs on a worker thread.
   */
  public boolean ready(String id) {
    CompletableFuture<Entry> f = byId.get(id == null ? DEFAULT_ID : id);
    if (f == null || !f.isDone() || f.isCompletedExceptionally() || closed) {
      return false;
    }
    long now = System.nanoTime();
    for (Entry e : started()) {
      boolean unseen = now - e.seenAt().get() > SEEN_FOR.toNanos();
      // a persistent sandbox: requireRunning asks its provider; a provider's: expire lists the provider
      boolean due = e.dead().get() || unseen && (e.persistent() || e.fromProvider());
      if (due) {
        return false;
      }
    }
    return true;
  }

  /** Tool calls in flight on sandbox {@code id}. */
  public int callsInFlight(String id) {
    AtomicInteger n = inFlight.get(id);
    return n == null ? 0 : Math.max(0, n.get());
  }

  /** A call on sandbox {@code id} got an answer from its agent: it is alive. */
  public void reached(String id) {
    Entry e = done(id);
    if (e != null) {
      e.seenAt().set(System.nanoTime());
    }
  }

  /**
   * A call on sandbox {@code id} failed with {@code cause}. A local sandbox the SDK has closed
   * (for example after its idle timeout; an {@link IllegalStateException}) is forgotten at once
   * rather than when its agent has finished exiting. A provider's sandbox that could not be
   * reached is checked with its provider before the next call.
   */
  public void failed(String id, Throwable cause) {
    Entry e = done(id);
    if (e == null) {
      return;
    }
    if (e.persistent()) {
      e.seenAt().set(System.nanoTime() - 2 * SEEN_FOR.toNanos()); // the next call asks the provider first
    } else if (e.childAgent() && cause instanceof IllegalStateException) {
      e.dead().set(true);
    } else if (e.fromProvider()
        && (cause instanceof IllegalStateException || cause instanceof SandboxConnectionException)) {
      e.seenAt().set(System.nanoTime() - 2 * SEEN_FOR.toNanos());
    }
  }

  private Entry done(String id) {
    CompletableFuture<Entry> f = byId.get(id == null ? DEFAULT_ID : id);
    return f != null && f.isDone() && !f.isCompletedExceptionally() ? f.join() : null;
  }
  /**
   * The sandbox a tool call names (null meaning {@code default}); only {@code default} is created
   * on demand. Callers {@link #begin} first, which forgets stopped sandboxes.
   */
  public Entry require(String id) {
    Entry e = find(id);
    requireRunning(e);
    return e;
  }

  /**
   * {@link #require} without the check that a persistent sandbox runs: for the tools that act on
   * stopped ones too (destroy, wakeSandbox, shutdownSandbox). A persistent sandbox of the
   * provider that this server has not used yet (an earlier server's) is taken up here.
   */
  public Entry find(String id) {
    return find(id, true);
  }

  /** {@link #find(String)}; with {@code createDefault} false, a missing default sandbox is an error too. */
  public Entry find(String id, boolean createDefault) {
    String sid = id == null ? DEFAULT_ID : id;
    CompletableFuture<Entry> f = byId.get(sid);
    if (f == null) {
      Entry adopted = adopt(sid);
      if (adopted != null) {
        return adopted;
      }
      if (sid.equals(DEFAULT_ID) && !createDefault) {
        throw new ToolException("There is no sandbox 'default' yet (it is made on first use, and is not persistent)."
            + " Give the sandboxId of a persistent sandbox: listSandboxes shows them.");
      }
      if (!sid.equals(DEFAULT_ID)) {
        throw new ToolException("There is no sandbox '" + sid + "'. Create it with getSandbox {\"sandboxId\": \""
            + sid + "\"}, or leave sandboxId out to use the default sandbox. listSandboxes shows the existing ones.");
      }
      return getOrCreate(sid, null).entry();
    }
    return await(sid, f);
  }

  /** The persistent sandbox {@code id} of the provider as an entry of this server, or null if there is none. */
  private Entry adopt(String id) {
    if (closed || !capabilities().managed()) {
      return null; // a remote agent has no persistent sandboxes
    }
    SandboxInfo info = providers.persistentInProvider().get(id);
    if (info == null) {
      return null;
    }
    ManagedSandbox handle = providers.persistentProvider().get(info.id()).orElse(null);
    if (handle == null) {
      return null; // removed since it was listed
    }
    Entry e = launcher.entry(id, handle, null, null);
    CompletableFuture<Entry> mine = CompletableFuture.completedFuture(e);
    CompletableFuture<Entry> existing = byId.putIfAbsent(id, mine);
    if (existing != null) { // another call took it up (or created it) first
      handle.close();
      return await(id, existing);
    }
    log.info("sandbox {}: found persistent {} sandbox {} ({})", id, providers.persistentProvider().name(), info.id(),
        info.state().wireName());
    return e;
  }
  /**
   * After a call on {@code id} failed: if it is a persistent sandbox that has stopped (idle
   * timeout, shut down by another server), the error that says to wake it; else null.
   */
  public ToolException stoppedError(String id) {
    Entry e = done(id);
    if (e == null || !e.persistent()) {
      return null;
    }
    try {
      return e.managed().info().isRunning() ? null : SandboxLiveness.stopped(e, capabilities());
    } catch (RuntimeException ex) {
      return null;
    }
  }
  /**
   * Throws the error a call on a stopped persistent sandbox gets, which says to wake it. Asks the
   * provider only when the sandbox has not answered for {@link #SEEN_FOR}.
   */
  public void requireRunning(Entry e) {
    SandboxLiveness.requireRunning(e, providers);
  }

  /** What the provider says about persistent sandbox {@code e} now; null for other sandboxes or when it cannot say. */
  public SandboxInfo status(Entry e) {
    return SandboxLiveness.status(e);
  }

  /** A persistent sandbox was shut down or woken: its state is asked again before the next call. */
  public void stateChanged(Entry e, boolean running) {
    SandboxLiveness.stateChanged(e, running);
  }

  /** Gets the sandbox {@code id}, creating it with these settings if it does not exist; after {@link #begin}. */
  public Got getOrCreate(String id, Boolean keepAlive, Integer idleTimeoutSeconds) {
    return getOrCreate(id, new Settings(keepAlive, idleTimeoutSeconds, false));
  }

  /**
   * Gets the sandbox {@code id}: one this server holds, else a persistent one its provider has
   * (an earlier server's), else a new one with {@code settings} (null: the defaults); after {@link #begin}.
   */
  public Got getOrCreate(String id, Settings settings) {
    Settings how = settings != null ? settings : new Settings(null, null, false);
    if (!ID.matcher(id).matches()) {
      throw new ToolException("sandboxId must match " + ID.pattern() + ", got '" + id + "'");
    }
    if (closed) {
      throw new ToolException("the server is shutting down");
    }
    if (config.agentUrl() != null && !id.equals(DEFAULT_ID)) {
      throw new ToolException("This server drives one remote sandbox agent (" + config.agentUrl()
          + "), whose sandbox id is \"default\"; it cannot create sandbox '" + id + "'. Leave sandboxId out.");
    }
    if (how.persistent() && id.equals(DEFAULT_ID) && !byId.containsKey(id)) {
      // it would be taken up by every later server on the same state directory or engine
      throw new ToolException("The default sandbox cannot be persistent: it is made on first use by any call without"
          + " a sandboxId. Give the persistent sandbox an id of its own, e.g. getSandbox {\"sandboxId\": \"proj\","
          + " \"persistent\": true}.");
    }
    if (how.persistent() && !capabilities().managed()) {
      throw new ToolException("This server drives one remote sandbox agent (--agent-url); it cannot create"
          + " persistent sandboxes. Leave persistent out.");
    }
    if (!byId.containsKey(id)) {
      Entry adopted = adopt(id);
      if (adopted != null) {
        return new Got(adopted, false);
      }
    }
    CompletableFuture<Entry> mine = new CompletableFuture<>();
    CompletableFuture<Entry> existing;
    synchronized (byId) {
      existing = byId.get(id);
      if (existing == null) {
        if (byId.size() >= config.maxSandboxes()) {
          throw new ToolException("There are already " + byId.size() + " sandboxes, the most this server allows"
              + " (--max-sandboxes). Destroy one you no longer need (listSandboxes shows them) and try again.");
        }
        byId.put(id, mine);
      }
    }
    if (existing != null) {
      return new Got(await(id, existing), false);
    }
    Entry e;
    try {
      e = launcher.create(id, how);
    } catch (RuntimeException ex) {
      byId.remove(id, mine);
      mine.completeExceptionally(ex);
      throw ex;
    }
    mine.complete(e);
    if (closed) { // the server began to shut down while this one started: close() did not see it
      remove(e);
      launcher.dispose(e);
      throw new ToolException("the server is shutting down");
    }
    return new Got(e, true);
  }
  private Entry await(String id, CompletableFuture<Entry> f) {
    try {
      return f.join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof RuntimeException re) {
        throw re;
      }
      throw new ToolException("Could not start sandbox '" + id + "': " + e.getCause());
    }
  }

  /** The sandboxes that exist, oldest first; asks the provider, if any, which of its sandboxes still run. */
  public List<Entry> list() {
    liveness.expire(started(), true, this::remove);
    return list0();
  }

  /**
   * What listSandboxes shows: the sandboxes this server holds and the persistent sandboxes its
   * provider has (also stopped ones, also ones other servers made), oldest first. Asks the
   * provider; if it cannot be asked, only the held ones.
   */
  public List<Listed> listAll() {
    List<Entry> held = list();
    Map<String, SandboxInfo> persistent = closed ? Map.of() : providers.persistentInProvider();
    Map<String, Listed> out = new java.util.LinkedHashMap<>();
    for (Entry e : held) {
      SandboxInfo info = e.persistent() ? persistent.get(e.id()) : null;
      if (e.persistent() && info == null) {
        info = status(e);
      }
      out.put(e.id(), new Listed(e.id(), e, info, e.workspace()));
    }
    persistent.forEach((id, info) -> out.putIfAbsent(id, new Listed(id, null, info, providers.workspaceOf(id))));
    List<Listed> all = new ArrayList<>(out.values());
    all.sort((a, b) -> createdAt(a).compareTo(createdAt(b)));
    return all;
  }

  private static Instant createdAt(Listed l) {
    return l.entry() != null ? l.entry().createdAt() : l.info().createdAt();
  }
  /** The sandboxes that have started, in no particular order: for the checks every call makes. */
  private List<Entry> started() {
    List<Entry> out = new ArrayList<>(byId.size());
    for (CompletableFuture<Entry> f : byId.values()) {
      if (f.isDone() && !f.isCompletedExceptionally()) {
        out.add(f.join());
      }
    }
    return out;
  }

  private List<Entry> list0() {
    List<Entry> out = started();
    out.sort((a, b) -> a.createdAt().compareTo(b.createdAt()));
    return out;
  }

  /** Forgets {@code entry} (after destroy, or once found gone); false if it was already forgotten. */
  public boolean remove(Entry entry) {
    CompletableFuture<Entry> f = byId.get(entry.id());
    return f != null && f.isDone() && !f.isCompletedExceptionally() && f.join() == entry && byId.remove(entry.id(), f);
  }

  /**
   * Stops every sandbox: local ones with their processes and workspaces, provider sandboxes are
   * removed (containers with their workspace volumes), in parallel, since each waits for its
   * agent to stop its processes. Remote agents keep running. Then releases the provider.
   */
  @Override
  public void close() {
    closed = true;
    List<Entry> all = list0();
    byId.clear();
    List<Thread> stopping = new ArrayList<>();
    for (Entry e : all) {
      Thread t = new Thread(() -> launcher.dispose(e), "mcp-close-" + e.id());
      t.setDaemon(true);
      t.start();
      stopping.add(t);
    }
    long deadline = System.nanoTime() + CLOSE_WAIT.toNanos();
    for (Thread t : stopping) {
      try {
        t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
        break;
      }
      if (t.isAlive()) {
        log.warn("{} did not finish within {}", t.getName(), CLOSE_WAIT);
      }
    }
    providers.close();
  }
}
