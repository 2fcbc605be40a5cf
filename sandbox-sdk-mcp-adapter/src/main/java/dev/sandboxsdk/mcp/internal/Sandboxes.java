package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.LocalSandbox;
import dev.sandboxsdk.ManagedSandbox;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxConnectionException;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.SandboxProvider;
import dev.sandboxsdk.SandboxSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server's sandboxes by id. Locally each id is its own {@link LocalSandbox}; with
 * {@code --provider container} each id is a sandbox the {@link SandboxProvider} creates from the
 * configured {@link SandboxSpec}; with an agent URL there is a single sandbox, {@code default}, on
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
  /** Where the container provider's commands start (its image's workspace volume). */
  static final String CONTAINER_WORKSPACE = "/workspace";
  /** Labels on every provider sandbox: the MCP sandbox id, and the server process that made it. */
  static final String ID_LABEL = "mcp.sandbox-id";
  static final String SERVER_LABEL = "mcp.server-pid";
  private static final Duration CLOSE_WAIT = Duration.ofSeconds(30);
  private static final Pattern ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
  private static final Logger log = LoggerFactory.getLogger(Sandboxes.class);

  /**
   * One sandbox and how it was made.
   *
   * @param workspace the directory commands start in, when known (null for a remote agent)
   * @param agentPid the local agent's process id; -1 unless {@link SandboxMode#LOCAL}
   * @param providerId the provider's id of the sandbox (a container id); null unless {@link SandboxMode#CONTAINER}
   * @param dead set once the sandbox is known to be gone; it is then forgotten
   * @param seenAt {@link System#nanoTime()} when a call last reached it or its provider last listed it running
   */
  public record Entry(String id, Sandbox sandbox, SandboxMode mode, boolean keepAlive, Duration idleTimeout,
      Instant createdAt, String workspace, long agentPid, String providerId, AtomicBoolean dead,
      AtomicLong seenAt) {
  }

  /** The outcome of {@link #getOrCreate}. */
  public record Got(Entry entry, boolean created) {
  }

  private final AdapterConfig config;
  /** Makes the provider on first use: its engine client (docker-java) takes a third of a second to load. */
  private final Supplier<SandboxProvider> providerFactory;
  private volatile SandboxProvider provider;
  private final Map<String, CompletableFuture<Entry>> byId = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> inFlight = new ConcurrentHashMap<>();
  private final Object providerCheck = new Object();
  private volatile boolean closed;

  public Sandboxes(AdapterConfig config) {
    this(config, config.mode() == SandboxMode.CONTAINER ? ContainerProviders::fromEnvironment : null);
  }

  /** With {@code provider} making the sandboxes of a {@link SandboxMode#CONTAINER} configuration (tests pass a fake). */
  Sandboxes(AdapterConfig config, SandboxProvider provider) {
    this(config, provider == null ? null : () -> provider);
  }

  private Sandboxes(AdapterConfig config, Supplier<SandboxProvider> providerFactory) {
    if ((config.mode() == SandboxMode.CONTAINER) != (providerFactory != null)) {
      throw new IllegalArgumentException("a provider is needed exactly with --provider container");
    }
    this.config = config;
    this.providerFactory = providerFactory;
  }

  /** The provider, made on first use; only with {@link SandboxMode#CONTAINER}. */
  private SandboxProvider provider() {
    SandboxProvider p = provider;
    if (p == null) {
      synchronized (this) {
        p = provider;
        if (p == null) {
          try {
            p = providerFactory.get();
          } catch (SandboxException e) {
            throw e;
          } catch (RuntimeException e) { // e.g. a DOCKER_HOST that is not a URI
            throw new SandboxException("cannot set up the container provider: " + e.getMessage(), e);
          }
          provider = p;
        }
      }
    }
    return p;
  }

  /**
   * With a provider: makes it and logs whether its engine answers, on a background thread, so
   * the first sandbox does not wait for the engine client to load and an operator sees a missing
   * engine in the log at start. For the server's start.
   */
  public void logProviderInBackground() {
    if (providerFactory == null) {
      return;
    }
    Thread t = new Thread(() -> {
      try {
        ContainerProviders.logEngine(provider(), config.containerSpec().image());
      } catch (RuntimeException e) {
        log.warn("container provider: {}", e.getMessage());
      }
    }, "mcp-provider-check");
    t.setDaemon(true);
    t.start();
  }

  /**
   * A tool call on sandbox {@code id} (null meaning default) begins: it is in flight until
   * {@link #end}. Stopped sandboxes are forgotten first, so the call never gets one.
   */
  public void begin(String id) {
    expire(false);
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
    for (Entry e : list0()) {
      boolean due = switch (e.mode()) {
        case LOCAL -> e.dead().get() || !ProcessHandle.of(e.agentPid()).map(ProcessHandle::isAlive).orElse(false);
        case CONTAINER -> e.dead().get() || now - e.seenAt().get() > SEEN_FOR.toNanos();
        case REMOTE -> false;
      };
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
    if (e.mode() == SandboxMode.LOCAL && cause instanceof IllegalStateException) {
      e.dead().set(true);
    } else if (e.mode() == SandboxMode.CONTAINER
        && (cause instanceof IllegalStateException || cause instanceof SandboxConnectionException)) {
      e.seenAt().set(System.nanoTime() - 2 * SEEN_FOR.toNanos());
    }
  }

  private Entry done(String id) {
    CompletableFuture<Entry> f = byId.get(id == null ? DEFAULT_ID : id);
    return f != null && f.isDone() && !f.isCompletedExceptionally() ? f.join() : null;
  }

  /**
   * Forgets sandboxes that have stopped: local ones whose agent has gone (destroyed by the SDK
   * after their idle timeout, found closed by a call, or killed), and provider sandboxes that
   * the provider no longer lists as running (their agent stopped after the idle timeout, or the
   * container was killed or removed). They must not be listed or handed out any more. Provider
   * sandboxes are checked only when not seen for {@link #SEEN_FOR}, or all with {@code checkAll};
   * one listing of the provider covers all of them. Never throws: if the provider cannot be asked,
   * its sandboxes are kept, and calls on them say what is wrong.
   */
  private void expire(boolean checkAll) {
    List<Entry> stopped = new ArrayList<>();
    List<Entry> toCheck = new ArrayList<>();
    long now = System.nanoTime();
    for (Entry e : list0()) {
      switch (e.mode()) {
        case LOCAL -> {
          if (e.dead().get() || !ProcessHandle.of(e.agentPid()).map(ProcessHandle::isAlive).orElse(false)) {
            stopped.add(e);
          }
        }
        case CONTAINER -> {
          if (e.dead().get()) {
            stopped.add(e);
          } else if (checkAll || now - e.seenAt().get() > SEEN_FOR.toNanos()) {
            toCheck.add(e);
          }
        }
        case REMOTE -> {
        }
      }
    }
    if (!toCheck.isEmpty()) {
      stopped.addAll(notRunning(toCheck, checkAll));
    }
    for (Entry e : stopped) {
      if (!remove(e)) {
        continue; // another call found it first
      }
      log.info("sandbox {}: {} has stopped (idle timeout, or killed); forgetting it", e.id(),
          e.mode() == SandboxMode.LOCAL ? "its agent" : "its " + provider().name() + " " + e.providerId());
      try {
        if (e.mode() == SandboxMode.LOCAL) {
          e.sandbox().close();
        } else {
          e.sandbox().destroy(); // removes the stopped container and its workspace volume
        }
      } catch (RuntimeException ex) {
        log.debug("closing stopped sandbox {}: {}", e.id(), ex.toString());
      }
    }
  }

  /** The entries among {@code entries} whose sandbox the provider does not list as running. */
  private List<Entry> notRunning(List<Entry> entries, boolean checkAll) {
    synchronized (providerCheck) { // one listing at a time; a call that waited finds the entries just seen
      long now = System.nanoTime();
      List<Entry> stale = entries.stream().filter(e -> checkAll || now - e.seenAt().get() > SEEN_FOR.toNanos())
          .collect(Collectors.toList());
      if (stale.isEmpty()) {
        return List.of();
      }
      Set<String> running;
      try {
        running = provider().list().stream().filter(SandboxInfo::isRunning).map(SandboxInfo::id)
            .collect(Collectors.toSet());
      } catch (RuntimeException e) {
        log.debug("cannot ask the provider which sandboxes run: {}", e.toString());
        return List.of();
      }
      long listed = System.nanoTime();
      List<Entry> out = new ArrayList<>();
      for (Entry e : stale) {
        if (running.contains(e.providerId())) {
          e.seenAt().set(listed);
        } else {
          out.add(e);
        }
      }
      return out;
    }
  }

  /**
   * The sandbox a tool call names (null meaning {@code default}); only {@code default} is created
   * on demand. Callers {@link #begin} first, which forgets stopped sandboxes.
   */
  public Entry require(String id) {
    String sid = id == null ? DEFAULT_ID : id;
    CompletableFuture<Entry> f = byId.get(sid);
    if (f == null) {
      if (!sid.equals(DEFAULT_ID)) {
        throw new ToolException("There is no sandbox '" + sid + "'. Create it with getSandbox {\"sandboxId\": \""
            + sid + "\"}, or leave sandboxId out to use the default sandbox. listSandboxes shows the existing ones.");
      }
      return getOrCreate(sid, null, null).entry();
    }
    return await(sid, f);
  }

  /** Gets the sandbox {@code id}, creating it with these settings if it does not exist; after {@link #begin}. */
  public Got getOrCreate(String id, Boolean keepAlive, Integer idleTimeoutSeconds) {
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
      e = create(id, keepAlive != null && keepAlive, idleTimeoutSeconds);
    } catch (RuntimeException ex) {
      byId.remove(id, mine);
      mine.completeExceptionally(ex);
      throw ex;
    }
    mine.complete(e);
    if (closed) { // the server began to shut down while this one started: close() did not see it
      remove(e);
      dispose(e);
      throw new ToolException("the server is shutting down");
    }
    return new Got(e, true);
  }

  private Entry create(String id, boolean keepAlive, Integer idleSeconds) {
    long t0 = System.nanoTime();
    if (config.agentUrl() != null) {
      Sandbox s = Sandbox.connect(config.agentUrl(), config.agentToken());
      log.info("sandbox {}: connected to remote agent {}", id, config.agentUrl());
      return new Entry(id, s, SandboxMode.REMOTE, true, null, Instant.now(), null, -1, null, new AtomicBoolean(),
          new AtomicLong(t0));
    }
    Duration idle = idleSeconds != null ? Duration.ofSeconds(idleSeconds) : DEFAULT_IDLE;
    try {
      if (providerFactory != null) {
        SandboxProvider provider = provider();
        SandboxSpec.Builder spec = config.containerSpec().toBuilder()
            .env(config.passEnv()) // in the sandbox's own environment, so every command gets them
            .label(ID_LABEL, id)
            .label(SERVER_LABEL, Long.toString(ProcessHandle.current().pid()));
        if (keepAlive) {
          spec.keepAlive();
        } else {
          spec.idleTimeout(idle);
        }
        ManagedSandbox s = provider.create(spec.build());
        log.info("sandbox {}: created {} sandbox {} in {} ms", id, provider.name(), s.id(),
            (System.nanoTime() - t0) / 1_000_000);
        return new Entry(id, s, SandboxMode.CONTAINER, keepAlive, keepAlive ? null : idle, Instant.now(),
            CONTAINER_WORKSPACE, -1, s.id(), new AtomicBoolean(), new AtomicLong(System.nanoTime()));
      }
      LocalSandbox s = LocalSandbox.builder().keepAlive(keepAlive).idleTimeout(idle)
          .isolation(config.localIsolation()).network(config.localNetwork()).start();
      log.info("sandbox {}: started local agent in {} ms, workspace {}, isolation {}", id,
          (System.nanoTime() - t0) / 1_000_000, s.workspace(), s.isolation());
      return new Entry(id, s, SandboxMode.LOCAL, keepAlive, keepAlive ? null : idle, Instant.now(),
          s.workspace().toString(), s.agentPid(), null, new AtomicBoolean(), new AtomicLong(System.nanoTime()));
    } catch (SandboxException e) {
      throw new ToolException("Could not start sandbox '" + id + "': " + e.getMessage());
    }
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
    expire(true);
    return list0();
  }

  private List<Entry> list0() {
    List<Entry> out = new ArrayList<>();
    for (CompletableFuture<Entry> f : byId.values()) {
      if (f.isDone() && !f.isCompletedExceptionally()) {
        out.add(f.join());
      }
    }
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
      Thread t = new Thread(() -> dispose(e), "mcp-close-" + e.id());
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
    SandboxProvider p = provider;
    if (p != null) {
      p.close();
    }
  }

  /** Ends a sandbox the server no longer keeps: removes a provider's sandbox, stops a local one, leaves a remote agent. */
  private void dispose(Entry e) {
    try {
      if (e.mode() == SandboxMode.CONTAINER) {
        e.sandbox().destroy();
      } else {
        e.sandbox().close();
      }
    } catch (RuntimeException ex) {
      log.warn("closing sandbox {} failed: {}", e.id(), ex.toString());
    }
  }
}
