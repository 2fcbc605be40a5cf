package dev.sandboxsdk.agent.code;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The open code contexts of an agent, by id, at most {@link CodeLimits#maxContexts()}. Thread-safe:
 * the map is guarded by this object; a context is created outside the lock (starting an
 * interpreter takes tens of milliseconds), its place reserved first so the cap holds.
 */
public final class CodeContexts implements AutoCloseable {
  private final ProcessManager processes;
  private final CodeLimits limits;
  private final Map<String, CodeContext> contexts = new LinkedHashMap<>();
  private int reserved;
  private boolean closed;

  public CodeContexts(ProcessManager processes, CodeLimits limits) {
    this.processes = processes;
    this.limits = limits;
  }

  public CodeLimits limits() {
    return limits;
  }

  /**
   * Starts a context's interpreter and registers it.
   *
   * @throws AgentException TOO_MANY_CONTEXTS at the cap, INTERPRETER_NOT_AVAILABLE when the
   *     language is not installed, INTERPRETER_FAILED when it does not start
   */
  public CodeContext create(CodeLanguage language, String cwd, Map<String, String> env) {
    synchronized (this) {
      if (closed) {
        throw new AgentException(ErrorCode.SHUTTING_DOWN, "the agent is shutting down");
      }
      if (contexts.size() + reserved >= limits.maxContexts()) {
        throw new AgentException(ErrorCode.TOO_MANY_CONTEXTS, limits.maxContexts() + " code contexts are open,"
            + " the most this agent allows: delete one first", Map.of("limit", limits.maxContexts()));
      }
      reserved++;
    }
    CodeContext context = null;
    try {
      context = new CodeContext("ctx_" + UUID.randomUUID().toString().replace("-", "").substring(0, 16), language,
          cwd, env, processes, limits);
    } finally {
      synchronized (this) {
        reserved--;
        if (context != null) {
          if (closed) {
            context.close();
          } else {
            contexts.put(context.id(), context);
          }
        }
      }
    }
    return context;
  }

  /** @throws AgentException CONTEXT_NOT_FOUND */
  public synchronized CodeContext require(String id) {
    CodeContext c = contexts.get(id);
    if (c == null) {
      throw new AgentException(ErrorCode.CONTEXT_NOT_FOUND, "no code context " + id, Map.of("contextId", id));
    }
    return c;
  }

  /** The open contexts, oldest first. */
  public synchronized List<CodeContext> list() {
    return new ArrayList<>(contexts.values());
  }

  /**
   * Kills the context's interpreter and forgets it.
   *
   * @throws AgentException CONTEXT_NOT_FOUND
   */
  public void delete(String id) {
    CodeContext c;
    synchronized (this) {
      c = contexts.remove(id);
    }
    if (c == null) {
      throw new AgentException(ErrorCode.CONTEXT_NOT_FOUND, "no code context " + id, Map.of("contextId", id));
    }
    c.close();
  }

  /** Kills every interpreter. Idempotent. */
  @Override
  public void close() {
    List<CodeContext> all;
    synchronized (this) {
      closed = true;
      all = new ArrayList<>(contexts.values());
      contexts.clear();
    }
    all.forEach(CodeContext::close);
  }
}
