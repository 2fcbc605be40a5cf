package dev.sandboxsdk;

import java.util.Locale;

/**
 * Where a managed sandbox is in its life, as its provider lists it ({@link SandboxInfo#state()}).
 * The same words on every provider; which of them a provider reports, and whether a stopped
 * sandbox can start again, {@link ProviderCapabilities} says. New states may be added.
 */
public enum SandboxState {
  /** Created, its agent not answering yet: a pod being scheduled, a container restarting. */
  STARTING,
  /** Its agent runs and answers. */
  RUNNING,
  /** Its processes are frozen by the engine (a paused container); its files are kept. */
  PAUSED,
  /**
   * Being stopped or removed: a container on its way to {@link #STOPPED}, or being removed; a
   * Kubernetes pod being deleted (a destroyed pod, until the kubelet has removed it).
   */
  STOPPING,
  /**
   * Shut down with its files and checkpoints kept ({@link ManagedSandbox#shutdown()}, its idle
   * timeout, or its JVM or engine stopped it): {@link ManagedSandbox#wake()} starts it again.
   */
  STOPPED,
  /**
   * Its agent ended (its idle timeout, or a failure) on a provider where a sandbox cannot start
   * again (a Kubernetes pod, a dead container): destroy it and create a new one.
   */
  EXITED,
  /** The provider cannot say (an engine state this SDK does not know). */
  UNKNOWN;

  /** The name that listings, logs and JSON show: the lower-case name, e.g. {@code "running"}. */
  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * Parses a {@link #wireName()} in any letter case.
   *
   * @throws IllegalArgumentException if the text names no state
   */
  public static SandboxState fromWire(String text) {
    if (text == null) {
      throw new IllegalArgumentException("state == null");
    }
    try {
      return valueOf(text.strip().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("unknown sandbox state '" + text + "'", e);
    }
  }
}
