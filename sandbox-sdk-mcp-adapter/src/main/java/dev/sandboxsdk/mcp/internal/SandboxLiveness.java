package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.ProviderCapabilities;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxInfo;
import dev.sandboxsdk.mcp.internal.Sandboxes.Entry;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether sandboxes still run: forgets the ones that stopped, asks a provider about the ones not
 * seen for {@link Sandboxes#SEEN_FOR}, and words the errors of calls on stopped or ended ones.
 */
final class SandboxLiveness {
  /** Logs as {@link Sandboxes}, as before the split: operators filter the log by its name. */
  private static final Logger log = LoggerFactory.getLogger(Sandboxes.class);

  private final SandboxProviders providers;

  SandboxLiveness(SandboxProviders providers) {
    this.providers = providers;
  }

  /**
   * Forgets sandboxes that have stopped: local ones whose agent has gone (destroyed by the SDK
   * after their idle timeout, found closed by a call, or killed), and provider sandboxes that
   * the provider no longer lists as running (their agent stopped after the idle timeout, or the
   * container was killed or removed). They must not be listed or handed out any more. Provider
   * sandboxes are checked only when not seen for {@link Sandboxes#SEEN_FOR}, or all with {@code checkAll};
   * one listing of the provider covers all of them. Never throws: if the provider cannot be asked,
   * its sandboxes are kept, and calls on them say what is wrong.
   */
  void expire(List<Entry> started, boolean checkAll, Predicate<Entry> forget) {
    List<Entry> stopped = new ArrayList<>();
    List<Entry> toCheck = new ArrayList<>();
    long now = System.nanoTime();
    for (Entry e : started) {
      if (e.persistent()) {
        continue; // stopped ones stay (listSandboxes shows them, wakeSandbox starts them); destroy removes them
      }
      if (e.dead().get()) { // a local agent that exited (a remote agent's entry is never marked dead)
        stopped.add(e);
      } else if (e.fromProvider() && (checkAll || now - e.seenAt().get() > Sandboxes.SEEN_FOR.toNanos())) {
        toCheck.add(e);
      }
    }
    if (!toCheck.isEmpty()) {
      stopped.addAll(providers.notRunning(toCheck, checkAll));
    }
    for (Entry e : stopped) {
      if (!forget.test(e)) {
        continue; // another call found it first
      }
      log.info("sandbox {}: {} has stopped (idle timeout, or killed); forgetting it", e.id(),
          e.fromProvider() ? "its " + providers.provider().name() + " " + e.providerId() : "its agent");
      try {
        if (e.fromProvider()) {
          e.sandbox().destroy(); // removes the stopped container and its workspace volume, or the ended pod
        } else {
          e.sandbox().close();
        }
      } catch (RuntimeException ex) {
        log.debug("closing stopped sandbox {}: {}", e.id(), ex.toString());
      }
    }
  }

  /**
   * Throws the error a call on a stopped persistent sandbox gets, which says to wake it. Asks the
   * provider only when the sandbox has not answered for {@link Sandboxes#SEEN_FOR}.
   */
  static void requireRunning(Entry e, SandboxProviders providers) {
    if (!e.persistent() || System.nanoTime() - e.seenAt().get() <= Sandboxes.SEEN_FOR.toNanos()) {
      return;
    }
    SandboxInfo info;
    try {
      info = e.managed().info();
    } catch (SandboxException ex) {
      throw new ToolException("Cannot tell whether sandbox '" + e.id() + "' runs: " + ex.getMessage());
    }
    if (!info.isRunning()) {
      throw stopped(e, providers.capabilities());
    }
    e.seenAt().set(System.nanoTime());
  }

  /**
   * The error for a call on stopped sandbox {@code e} of a provider that {@code can} do so much:
   * what to call next (wake it, or where a stopped sandbox has ended, destroy it).
   */
  static ToolException stopped(Entry e, ProviderCapabilities can) {
    return can.resumable() ? stopped(e.id()) : ended(e.id());
  }

  /**
   * The error for a call on a Kubernetes sandbox whose agent ended (its idle timeout): a pod
   * cannot start again, so the only way on is a new sandbox.
   */
  static ToolException ended(String id) {
    return new ToolException("sandbox '" + id + "' has ended (its idle timeout, or its pod was stopped) and cannot be"
        + " woken: a Kubernetes pod does not start again, and its files and checkpoints went with it. Call destroy"
        + " {\"sandboxId\":\"" + id + "\"} to remove what is left, then getSandbox to create a new one.");
  }

  /** The error for a call on stopped sandbox {@code id}: what to call next. */
  static ToolException stopped(String id) {
    return new ToolException("sandbox '" + id + "' is stopped: call wakeSandbox {\"sandboxId\":\"" + id
        + "\"} to start it again (its files and checkpoints are kept; processes that ran before it stopped do not"
        + " come back).");
  }

  /** What the provider says about persistent sandbox {@code e} now; null for other sandboxes or when it cannot say. */
  static SandboxInfo status(Entry e) {
    if (!e.persistent()) {
      return null;
    }
    try {
      SandboxInfo info = e.managed().info();
      if (info.isRunning()) {
        e.seenAt().set(System.nanoTime());
      }
      return info;
    } catch (RuntimeException ex) {
      log.debug("sandbox {}: info failed: {}", e.id(), ex.toString());
      return null;
    }
  }

  /** A persistent sandbox was shut down or woken: its state is asked again before the next call. */
  static void stateChanged(Entry e, boolean running) {
    e.seenAt().set(running ? System.nanoTime() : System.nanoTime() - 2 * Sandboxes.SEEN_FOR.toNanos());
  }
}
