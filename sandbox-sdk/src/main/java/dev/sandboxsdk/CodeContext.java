package dev.sandboxsdk;

import java.time.Duration;
import java.util.concurrent.Flow;

/**
 * A stateful interpreter in the sandbox ({@link SandboxCode#createContext}). Runs in one context
 * are serialised by the sandbox: a run started while another runs waits for it.
 *
 * <p>{@link #close()} deletes the context (its interpreter stops and its state is gone), so a
 * try-with-resources block owns it; {@link #delete()} is the same and is idempotent.
 *
 * <p><b>Threading.</b> Thread-safe: the handle holds only the context's id. {@link #interrupt()}
 * is meant to be called from another thread while {@link #run} blocks.
 */
public interface CodeContext extends AutoCloseable {

  String id();

  CodeLanguage language();

  /** The context as the sandbox reports it now. @throws SandboxNotFoundException if it was deleted */
  CodeContextInfo info();

  /**
   * Runs {@code code} and waits for it to end, without a timeout of its own.
   *
   * @throws SandboxNotFoundException ({@code CONTEXT_NOT_FOUND}) if the context was deleted
   */
  CodeResult run(String code);

  /**
   * Runs {@code code}; once {@code timeout} has passed the run is interrupted as by {@link
   * #interrupt()}, and {@link CodeResult#timedOut()} says so. An error in the code is {@link
   * CodeResult#error()}, never an exception. Output beyond 1 MiB per run is dropped and the text
   * ends with a marker ({@link CodeResult#truncated()}).
   *
   * @param timeout how long the code may run; {@link Duration#ZERO} for no limit
   * @throws SandboxNotFoundException ({@code CONTEXT_NOT_FOUND}) if the context was deleted
   */
  CodeResult run(String code, Duration timeout);

  /**
   * Runs {@code code} and publishes its events while it runs. Lazy (nothing is sent until
   * subscribed), single-subscriber, demand-driven (a slow subscriber pauses the code's output);
   * cancelling interrupts the run. Ends with one {@link CodeEvent.Complete}.
   *
   * @param timeout as for {@link #run(String, Duration)}
   */
  Flow.Publisher<CodeEvent> runStream(String code, Duration timeout);

  /**
   * Interrupts the run in progress like Ctrl-C ({@code KeyboardInterrupt} in Python); the
   * context keeps its state. Code that ignores the interrupt for 2 s has its interpreter
   * restarted (state lost; the result says {@link CodeResult#restarted()}).
   *
   * @return whether a run was in progress
   */
  boolean interrupt();

  /** Starts a fresh interpreter: every variable, import and definition is gone. */
  void restart();

  /** Deletes the context and stops its interpreter. Idempotent. */
  void delete();

  /** Same as {@link #delete()}. */
  @Override
  void close();
}
