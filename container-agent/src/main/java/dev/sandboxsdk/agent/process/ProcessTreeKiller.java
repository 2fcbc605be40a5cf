package dev.sandboxsdk.agent.process;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Signals process trees: a command's group together with the processes that left it (escapees,
 * found by their {@link CommandEnvironment#RUN_VAR} marker), one command at a time or in batches
 * (kill-all, kill-everything, shutdown), waiting out the grace period with {@link KillWaits} and
 * escalating to SIGKILL. Thread-safe.
 */
final class ProcessTreeKiller {
  /** Logs as ProcessManager did before the split, so filters and the documented log lines hold. */
  private static final Logger log = LoggerFactory.getLogger(ProcessManager.class);

  private final ProcessGroups groups;
  private final ProcessRegistry registry;
  private final CommandEnvironment environment;
  /** The user commands run as, or null when they run as the agent's own. */
  private final CommandUser commandUser;
  private final long graceMs;

  ProcessTreeKiller(ProcessGroups groups, ProcessRegistry registry, CommandEnvironment environment,
      CommandUser commandUser, long graceMs) {
    this.groups = groups;
    this.registry = registry;
    this.environment = environment;
    this.commandUser = commandUser;
    this.graceMs = graceMs;
  }

  /** See {@link ProcessManager#killAll()}. */
  int killAll() {
    List<ManagedProcess> targets = registry.runningBackground();
    Set<String> spared = registry.foregroundMarks();
    terminateAll(targets, registry.finishedGroups(), mark -> !spared.contains(mark), ManagedProcess.KillReason.REQUEST);
    return targets.size();
  }

  /** See {@link ProcessManager#killEverything()}. */
  int killEverything() {
    List<ManagedProcess> targets = registry.runningLive();
    terminateAll(targets, registry.finishedGroups(), mark -> true, ManagedProcess.KillReason.REQUEST);
    return targets.size();
  }

  /** Terminates every process the agent started, for its shutdown, and waits for them. */
  void killForShutdown() {
    List<ManagedProcess> targets = registry.live();
    if (!targets.isEmpty()) {
      log.info("stopping {} process(es)", targets.size());
    }
    // Shutdown stops everything of the command user: it is there for the agent's commands only.
    terminateAll(targets, registry.finishedGroups(), commandUser != null ? null : mark -> true,
        ManagedProcess.KillReason.SHUTDOWN);
  }

  /**
   * Signals a process's group and the processes it started that left the group (found by its
   * {@link CommandEnvironment#RUN_VAR} marker); returns whether anything was signalled.
   */
  boolean signalTree(ManagedProcess p, Signal signal, boolean groupAlive) {
    if (groupAlive) {
      groups.signal(List.of(p.pid()), signal);
    }
    List<Long> escaped = new ArrayList<>();
    for (ProcessGroups.Marked m : groups.find(CommandEnvironment.RUN_VAR, p.mark())) {
      if (m.mark().equals(p.mark()) && m.pgid() != p.pid()) {
        escaped.add(m.pid());
      }
    }
    if (!escaped.isEmpty()) {
      log.debug("process {}: {} process(es) that left its group get {}", p.id(), escaped.size(), signal);
      groups.signalProcesses(escaped, signal);
    }
    return groupAlive || !escaped.isEmpty();
  }

  /**
   * This run's marked processes outside {@code pgids} whose marker {@code include} accepts; with
   * {@code include} null, every process of the command user outside them (shutdown: that finds
   * even a process that cleared its marker or made itself unreadable).
   */
  private List<Long> escapees(Collection<Long> pgids, Predicate<String> include) {
    Set<Long> inGroups = new HashSet<>(pgids);
    List<Long> pids = new ArrayList<>();
    if (include == null) {
      for (ProcessGroups.Marked m : ProcessGroups.ofUser(commandUser.uid())) {
        if (!inGroups.contains(m.pgid())) {
          pids.add(m.pid());
        }
      }
      return pids;
    }
    for (ProcessGroups.Marked m : groups.find(CommandEnvironment.RUN_VAR, environment.runId() + ".")) {
      if (!inGroups.contains(m.pgid()) && include.test(m.mark())) {
        pids.add(m.pid());
      }
    }
    return pids;
  }

  private void terminateAll(List<ManagedProcess> targets, List<Long> lingering, Predicate<String> escapeesToo,
      ManagedProcess.KillReason reason) {
    List<Long> pgids = new ArrayList<>();
    for (ManagedProcess p : targets) {
      p.noteSignalled(Signal.SIGTERM, reason);
      pgids.add(p.pid());
    }
    pgids.addAll(ProcessGroups.existing(lingering));
    // The groups first: a group signal reaches every member at once, even one forking right then
    // (a fork bomb), and it needs nothing the bomb may hold; the scan for escapees comes after.
    groups.signal(pgids, Signal.SIGTERM);
    List<Long> escaped = escapees(pgids, escapeesToo);
    if (pgids.isEmpty() && escaped.isEmpty()) {
      return;
    }
    if (!escaped.isEmpty()) {
      log.info("{} process(es) that left their process group: SIGTERM", escaped.size());
      groups.signalProcesses(escaped, Signal.SIGTERM);
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(graceMs);
    KillWaits.awaitFinished(targets, deadline);
    // Anything left after the grace period, including children of leaders that already exited.
    List<Long> leftovers = KillWaits.awaitGroupsGone(pgids, deadline);
    // Escapees still there, and any started meanwhile by a process that had not yet been signalled.
    List<Long> escapedLeft = awaitEscapeesGone(pgids, escapeesToo, escaped.isEmpty() ? System.nanoTime() : deadline);
    if (!escapedLeft.isEmpty()) {
      log.info("{} process(es) outside their group outlived the grace period: SIGKILL", escapedLeft.size());
      groups.signalProcesses(escapedLeft, Signal.SIGKILL);
    }
    if (!leftovers.isEmpty()) {
      for (ManagedProcess p : targets) {
        if (!p.isFinished()) {
          p.noteSignalled(Signal.SIGKILL, reason);
        }
      }
      log.info("{} process group(s) outlived the {} ms grace period: SIGKILL", leftovers.size(), graceMs);
      groups.signal(leftovers, Signal.SIGKILL);
      KillWaits.awaitFinished(targets, System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
      KillWaits.awaitGroupsGone(leftovers, System.nanoTime() + TimeUnit.SECONDS.toNanos(2));
    }
    KillWaits.awaitGroupsGone(pgids, System.nanoTime() + TimeUnit.SECONDS.toNanos(2)); // reaped, so a command has room
    registry.pruneStartedGroups();
  }

  /** Polls until no escapee is left or the deadline passes; returns those still there. */
  private List<Long> awaitEscapeesGone(List<Long> pgids, Predicate<String> include, long deadlineNanos) {
    return KillWaits.pollUntilEmpty(() -> escapees(pgids, include), deadlineNanos);
  }
}
