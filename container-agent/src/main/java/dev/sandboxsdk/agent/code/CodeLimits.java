package dev.sandboxsdk.agent.code;

/**
 * The bounds of code contexts.
 *
 * @param maxContexts contexts open at once in the agent
 * @param readyMs how long an interpreter may take to start its runner
 * @param graceMs how long interrupted code may take to stop before its interpreter is restarted
 * @param defaultMaxOutputBytes stdout plus stderr text a run keeps unless it asks otherwise
 * @param maxOutputBytesLimit the most a run may ask for
 */
public record CodeLimits(int maxContexts, long readyMs, long graceMs, long defaultMaxOutputBytes,
    long maxOutputBytesLimit) {
  /** 64 contexts, 15 s to start, 2 s grace, 1 MiB of output per run (at most 16 MiB). */
  public static final CodeLimits DEFAULT = new CodeLimits(64, 15_000, 2_000, 1 << 20, 16 << 20);
}
