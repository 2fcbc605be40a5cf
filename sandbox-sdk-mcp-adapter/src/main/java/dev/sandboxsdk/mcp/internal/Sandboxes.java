package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.LocalSandbox;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server's sandboxes by id. Without an agent URL each id is its own {@link LocalSandbox};
 * with one, there is a single sandbox, {@code default}, on that agent. The {@code default}
 * sandbox is created on first use; other ids only by {@code getSandbox}. Thread-safe.
 */
public final class Sandboxes implements AutoCloseable {
  public static final String DEFAULT_ID = "default";
  static final Duration DEFAULT_IDLE = Duration.ofMinutes(10);
  private static final Pattern ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
  private static final Logger log = LoggerFactory.getLogger(Sandboxes.class);

  /** One sandbox and how it was made; {@code agentPid} is -1 for a remote agent. */
  public record Entry(String id, Sandbox sandbox, boolean local, boolean keepAlive, Duration idleTimeout,
      Instant createdAt, String workspace, long agentPid, AtomicBoolean dead) {
  }

  /** The outcome of {@link #getOrCreate}. */
  public record Got(Entry entry, boolean created) {
  }

  private final AdapterConfig config;
  private final Map<String, CompletableFuture<Entry>> byId = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> inFlight = new ConcurrentHashMap<>();
  private volatile boolean closed;

  public Sandboxes(AdapterConfig config) {
    this.config = config;
  }

  /**
   * A tool call on sandbox {@code id} (null meaning default) begins: it is in flight until
   * {@link #end}. Stopped sandboxes are forgotten first, so the call never gets one.
   */
  public void begin(String id) {
    expire();
    inFlight.computeIfAbsent(id == null ? DEFAULT_ID : id, k -> new AtomicInteger()).incrementAndGet();
  }

  public void end(String id) {
    AtomicInteger n = inFlight.get(id == null ? DEFAULT_ID : id);
    if (n != null) {
      n.decrementAndGet();
    }
  }

  /** Tool calls in flight on sandbox {@code id}. */
  public int callsInFlight(String id) {
    AtomicInteger n = inFlight.get(id);
    return n == null ? 0 : Math.max(0, n.get());
  }

  /**
   * A call found the sandbox closed (the SDK destroyed it, for example after its idle timeout):
   * it is forgotten at once rather than when its agent has finished exiting.
   */
  public void closed(String id) {
    CompletableFuture<Entry> f = byId.get(id == null ? DEFAULT_ID : id);
    if (f != null && f.isDone() && !f.isCompletedExceptionally() && f.join().local()) {
      f.join().dead().set(true);
    }
  }

  /**
   * Forgets local sandboxes whose agent has gone: destroyed by the SDK after their idle timeout,
   * found closed by a call, or killed. They must not be listed or handed out any more.
   */
  private void expire() {
    for (Entry e : list0()) {
      if (e.local() && (e.dead().get() || !ProcessHandle.of(e.agentPid()).map(ProcessHandle::isAlive).orElse(false))) {
        log.info("sandbox {}: its agent has stopped (idle timeout or killed); forgetting it", e.id());
        remove(e);
        try {
          e.sandbox().close();
        } catch (RuntimeException ex) {
          log.debug("closing stopped sandbox {}: {}", e.id(), ex.toString());
        }
      }
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
    try {
      Entry e = create(id, keepAlive != null && keepAlive, idleTimeoutSeconds);
      mine.complete(e);
      return new Got(e, true);
    } catch (RuntimeException e) {
      byId.remove(id, mine);
      mine.completeExceptionally(e);
      throw e;
    }
  }

  private Entry create(String id, boolean keepAlive, Integer idleSeconds) {
    long t0 = System.nanoTime();
    if (config.agentUrl() != null) {
      Sandbox s = Sandbox.connect(config.agentUrl(), config.agentToken());
      log.info("sandbox {}: connected to remote agent {}", id, config.agentUrl());
      return new Entry(id, s, false, true, null, Instant.now(), null, -1, new AtomicBoolean());
    }
    Duration idle = idleSeconds != null ? Duration.ofSeconds(idleSeconds) : DEFAULT_IDLE;
    try {
      LocalSandbox s = LocalSandbox.builder().keepAlive(keepAlive).idleTimeout(idle).start();
      log.info("sandbox {}: started local agent in {} ms, workspace {}", id,
          (System.nanoTime() - t0) / 1_000_000, s.workspace());
      return new Entry(id, s, true, keepAlive, keepAlive ? null : idle, Instant.now(), s.workspace().toString(),
          s.agentPid(), new AtomicBoolean());
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

  /** The sandboxes that exist, oldest first. */
  public List<Entry> list() {
    expire();
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

  /** Forgets {@code entry} (after destroy, or once found gone) and closes it. */
  public void remove(Entry entry) {
    CompletableFuture<Entry> f = byId.get(entry.id());
    if (f != null && f.isDone() && !f.isCompletedExceptionally() && f.join() == entry) {
      byId.remove(entry.id(), f);
    }
  }

  @Override
  public void close() {
    closed = true;
    for (Entry e : list0()) {
      try {
        e.sandbox().close();
      } catch (RuntimeException ex) {
        log.warn("closing sandbox {} failed: {}", e.id(), ex.toString());
      }
    }
    byId.clear();
  }
}
