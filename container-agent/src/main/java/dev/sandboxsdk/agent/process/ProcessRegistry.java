package dev.sandboxsdk.agent.process;

import static dev.sandboxsdk.agent.process.ProcessManager.EXEC_ID_HEADER;
import static dev.sandboxsdk.agent.process.ProcessManager.abbreviate;

import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * The registry of the agent's processes: the live set, the background processes by id, the
 * running execs by id, the count against {@code --max-processes}, and every process group the
 * agent started (which the watchdog tracks too). Hands out and checks ids, finds processes, and
 * drops finished ones. Thread-safe.
 */
final class ProcessRegistry {
  private static final Pattern PROCESS_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
  private static final Set<String> RESERVED_IDS = Set.of("list", "start", "kill-all", "cleanup");

  private final AgentConfig config;
  private final ScheduledExecutorService scheduler;
  private final Map<String, ManagedProcess> background = new ConcurrentHashMap<>();
  private final Set<String> reservedIds = ConcurrentHashMap.newKeySet();
  /**
   * Running execs (execute and execute/stream) by id, for {@code DELETE /api/execute/{id}}. An id
   * is reserved while its process spawns, and dropped once it has finished.
   */
  private final Map<String, ExecSlot> execs = new ConcurrentHashMap<>();

  /** An exec id's process, once spawned, and whether a kill came while it was spawning. */
  private static final class ExecSlot {
    private ManagedProcess process;
    private boolean killRequested;
  }
  private final Set<ManagedProcess> live = ConcurrentHashMap.newKeySet();
  private final AtomicInteger running = new AtomicInteger();
  private final AtomicLong idSequence = new AtomicLong();
  /**
   * Every process group this agent started whose members may still live, including groups of
   * finished or cleaned-up processes: their leftover children are ours to stop too.
   */
  private final Set<Long> startedGroups = ConcurrentHashMap.newKeySet();
  /**
   * Stops this run's processes if the agent dies without doing so; null if it could not start.
   * Set on the agent-start thread, read only after ProcessManager#awaitStarted() has joined it.
   */
  private Watchdog watchdog;

  ProcessRegistry(AgentConfig config, ScheduledExecutorService scheduler) {
    this.config = config;
    this.scheduler = scheduler;
  }

  void useWatchdog(Watchdog watchdog) {
    this.watchdog = watchdog;
  }

  /** Closes the watchdog, if it started; everything must be stopped by then. */
  void closeWatchdog() {
    if (watchdog != null) {
      watchdog.close(); // everything is stopped: it can go without a sweep
    }
  }

  /** See {@link ProcessManager#spawnForeground(ExecSpec, ManagedProcess.Kind, String)}. */
  ManagedProcess startExec(String requestedId, Function<String, ManagedProcess> spawn) {
    String id;
    if (requestedId != null) {
      if (!PROCESS_ID.matcher(requestedId).matches() || requestedId.equals("stream")) {
        throw AgentException.invalid(EXEC_ID_HEADER, "the " + EXEC_ID_HEADER + " header must match "
            + PROCESS_ID.pattern() + " and not be 'stream': '" + abbreviate(requestedId) + "'");
      }
      id = requestedId;
      if (execs.putIfAbsent(id, new ExecSlot()) != null) {
        throw new AgentException(ErrorCode.PROCESS_ALREADY_EXISTS, "an exec with id '" + id
            + "' is already running; send a fresh " + EXEC_ID_HEADER, Map.of("processId", id));
      }
    } else {
      do {
        id = "exec_" + idSequence.incrementAndGet(); // a client may have chosen this one
      } while (execs.putIfAbsent(id, new ExecSlot()) != null);
    }
    ExecSlot slot = execs.get(id);
    ManagedProcess p;
    try {
      p = spawn.apply(id);
    } catch (RuntimeException | Error e) {
      execs.remove(id, slot);
      throw e;
    }
    boolean killNow;
    synchronized (slot) {
      slot.process = p;
      killNow = slot.killRequested;
    }
    if (killNow) { // the client gave up while the process was being spawned
      p.terminate(Signal.SIGTERM, config.graceMs(), ManagedProcess.KillReason.DISCONNECT);
    }
    String key = id;
    p.finished().whenComplete((done, e) -> execs.remove(key, slot));
    return p;
  }

  /** See {@link ProcessManager#killExec(String)}. */
  void killExec(String id) {
    ExecSlot slot = execs.get(id);
    ManagedProcess p = null;
    if (slot != null) {
      synchronized (slot) {
        p = slot.process;
        if (p == null) {
          slot.killRequested = true; // startExec kills it once spawned
          return;
        }
      }
    }
    if (p == null || p.isFinished()) {
      throw new AgentException(ErrorCode.PROCESS_NOT_FOUND,
          "no running exec with id '" + abbreviate(id) + "' (it never existed or has finished)",
          Map.of("processId", abbreviate(id)));
    }
    p.terminate(Signal.SIGTERM, config.graceMs(), ManagedProcess.KillReason.DISCONNECT);
  }

  /**
   * Starts a background process under {@code requestedId} or a generated {@code proc_…} id, and
   * registers it under that id.
   */
  ManagedProcess startBackground(String requestedId, Function<String, ManagedProcess> spawn) {
    String id = requestedId;
    if (id != null) {
      if (!PROCESS_ID.matcher(id).matches() || RESERVED_IDS.contains(id)) {
        throw AgentException.invalid("processId", "processId must match " + PROCESS_ID.pattern()
            + " and not be one of " + new java.util.TreeSet<>(RESERVED_IDS) + ": '" + abbreviate(id) + "'");
      }
    } else {
      id = "proc_" + Long.toHexString(System.currentTimeMillis()) + "_" + idSequence.incrementAndGet();
    }
    if (!reservedIds.add(id)) {
      throw alreadyExists(id);
    }
    try {
      if (background.containsKey(id)) {
        throw alreadyExists(id);
      }
      ManagedProcess p = spawn.apply(id);
      background.put(id, p);
      p.startLoggedPumps();
      return p;
    } finally {
      reservedIds.remove(id);
    }
  }

  private static AgentException alreadyExists(String id) {
    return new AgentException(ErrorCode.PROCESS_ALREADY_EXISTS,
        "a process with id '" + id + "' already exists; pick another id or clean it up first",
        Map.of("processId", id));
  }

  /**
   * Counts a process about to be spawned against {@code --max-processes}; a spawn that fails
   * afterwards gives it back with {@link #releaseAdmission()}.
   *
   * @throws AgentException TOO_MANY_PROCESSES when the limit is reached
   */
  void admit() {
    if (running.incrementAndGet() > config.effectiveMaxProcesses()) {
      running.decrementAndGet();
      throw new AgentException(ErrorCode.TOO_MANY_PROCESSES,
          "the agent already runs " + config.effectiveMaxProcesses()
              + " processes (its --max-processes limit); wait for some to finish or kill them",
          Map.of("limit", config.effectiveMaxProcesses()));
    }
  }

  /** Gives back the count {@link #admit()} took for a process that did not start. */
  void releaseAdmission() {
    running.decrementAndGet();
  }

  /** Tracks a process that has just been spawned (and admitted) until it has finished. */
  void register(ManagedProcess p) {
    live.add(p);
    startedGroups.add(p.pid());
    if (watchdog != null) {
      watchdog.register(p.pid());
    }
  }

  void onFinished(ManagedProcess p) {
    live.remove(p);
    running.decrementAndGet();
    if (p.kind() == ManagedProcess.Kind.BACKGROUND && p.spec().autoCleanup()) {
      scheduler.schedule(() -> {
        if (background.remove(p.id(), p)) {
          p.releaseOutput();
        }
      }, config.autoCleanupDelayMs(), TimeUnit.MILLISECONDS);
    }
  }

  ManagedProcess require(String id) {
    ManagedProcess p = background.get(id);
    if (p == null) {
      throw new AgentException(ErrorCode.PROCESS_NOT_FOUND,
          "no process with id '" + abbreviate(id) + "' (it never existed or was cleaned up)",
          Map.of("processId", abbreviate(id)));
    }
    return p;
  }

  /** Snapshots of the background processes, oldest first, optionally only those in one state. */
  List<ManagedProcess.Snapshot> list(ManagedProcess.Status filter) {
    List<ManagedProcess.Snapshot> result = new ArrayList<>();
    for (ManagedProcess p : background.values()) {
      ManagedProcess.Snapshot s = p.snapshot(); // one consistent view each, taken once
      if (filter == null || s.status() == filter) {
        result.add(s);
      }
    }
    result.sort(Comparator.comparing(ManagedProcess.Snapshot::startTime).thenComparing(ManagedProcess.Snapshot::id));
    return result;
  }

  /** Drops the records of finished background processes; returns how many were dropped. */
  int cleanupCompleted() {
    int n = 0;
    for (ManagedProcess p : background.values()) {
      if (p.isFinished() && background.remove(p.id(), p)) {
        p.releaseOutput();
        n++;
      }
    }
    return n;
  }

  /** Processes the agent started that still run: execs, background processes and its own (git). */
  int runningCount() {
    int n = 0;
    for (ManagedProcess p : live) {
      if (!p.isFinished()) {
        n++;
      }
    }
    return n;
  }

  /** The background processes that have not finished. */
  List<ManagedProcess> runningBackground() {
    List<ManagedProcess> result = new ArrayList<>();
    for (ManagedProcess p : background.values()) {
      if (!p.isFinished()) {
        result.add(p);
      }
    }
    return result;
  }

  /** The processes of any kind that have not finished. */
  List<ManagedProcess> runningLive() {
    List<ManagedProcess> result = new ArrayList<>();
    for (ManagedProcess p : live) {
      if (!p.isFinished()) {
        result.add(p);
      }
    }
    return result;
  }

  /** Every tracked process, finished or not, as it is now. */
  List<ManagedProcess> live() {
    return new ArrayList<>(live);
  }

  /** The markers of the live execs and of the agent's own commands (everything but background). */
  Set<String> foregroundMarks() {
    Set<String> marks = new HashSet<>();
    for (ManagedProcess p : live) {
      if (p.kind() != ManagedProcess.Kind.BACKGROUND) {
        marks.add(p.mark());
      }
    }
    return marks;
  }

  /** Groups whose leader finished (whatever its kind, listed or not): children may linger. */
  List<Long> finishedGroups() {
    Set<Long> running = livePids();
    List<Long> pgids = new ArrayList<>();
    for (Long pgid : startedGroups) {
      if (!running.contains(pgid)) {
        pgids.add(pgid);
      }
    }
    return pgids;
  }

  /** Pids (= group ids) of the processes that have not finished. */
  private Set<Long> livePids() {
    Set<Long> pids = new HashSet<>();
    for (ManagedProcess p : live) {
      pids.add(p.pid());
    }
    return pids;
  }

  /** Notices exits of processes whose pipes a leftover child keeps open (no EOF to wake a pump). */
  void watchExits() {
    for (ManagedProcess p : live) {
      if (!p.pipesClosed()) {
        p.checkExit();
      }
    }
  }

  /** Forgets groups that have no live member left, so the set stays as small as reality. */
  void pruneStartedGroups() {
    List<Long> finished = finishedGroups(); // groups of live leaders always stay
    if (finished.isEmpty()) {
      return; // no /proc scan while only live processes are tracked
    }
    Set<Long> alive = new HashSet<>(ProcessGroups.existing(finished));
    for (Long pgid : finished) {
      if (!alive.contains(pgid) && startedGroups.remove(pgid) && watchdog != null) {
        watchdog.forget(pgid);
      }
    }
  }
}
