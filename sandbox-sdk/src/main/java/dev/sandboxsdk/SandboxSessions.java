package dev.sandboxsdk;

import java.util.List;
import java.util.Optional;

/**
 * Shell sessions of a sandbox ({@link Sandbox#sessions()}): each keeps one shell's state, so that
 * {@code cd}, {@code export}, variables, functions, aliases and shell options carry over from one
 * command to the next.
 *
 * <pre>{@code
 * try (Session s = sandbox.sessions().create(SessionOptions.defaults().withCwd("app"))) {
 *   s.exec("python3 -m venv .venv && . .venv/bin/activate && export DEBUG=1");
 *   ExecResult r = s.exec("pip install -q requests && python3 -c 'import requests'"); // in the venv
 * }
 * }</pre>
 *
 * <p>Every command of a session is an ordinary exec run by bash: it has its own exit code,
 * output, timeout and kill, exactly as {@link Sandbox#exec}. Sessions are isolated from each other
 * (each has its own state; they share the sandbox's files and processes), and a command without
 * a session runs as always. Commands of one session run one at a time: a second waits for the
 * first (up to 30 s, then {@link SandboxConflictException} with code {@code SESSION_BUSY}).
 * A command that times out or is killed leaves the state as it was before it; background jobs
 * ({@code cmd &}) do not survive their command. An agent holds at most 64 sessions
 * ({@link SandboxServerException} with code {@code TOO_MANY_SESSIONS} beyond).
 *
 * <p><b>Errors.</b> Every method throws unchecked exceptions: the ones each method names, plus
 * the connection, timeout and auth exceptions of every {@link Sandbox} call.
 *
 * <p><b>Threading.</b> Thread-safe and stateless: each call is one request, which blocks the
 * calling thread until the agent answered. After the sandbox is closed every method throws
 * {@link IllegalStateException}.
 */
public interface SandboxSessions {

  /** A new session with a generated id, in the workspace, with the sandbox's environment. */
  default Session create() {
    return create(SessionOptions.defaults());
  }

  /**
   * A new session.
   *
   * @throws SandboxConflictException ({@code SESSION_ALREADY_EXISTS}) if a session has the
   *     options' id
   * @throws SandboxInvalidRequestException ({@code VALIDATION_FAILED}) for an id or variable name
   *     the agent refuses
   * @throws SandboxServerException ({@code TOO_MANY_SESSIONS}) if the agent holds its limit
   */
  Session create(SessionOptions options);

  /** The sessions of the sandbox, oldest first. */
  List<SessionInfo> list();

  /** A handle on the session of this id, or empty if there is none. */
  Optional<Session> get(String id);

  /**
   * Deletes a session; a command running in it is stopped (SIGTERM, then SIGKILL) and its state
   * is gone.
   *
   * @throws SandboxNotFoundException ({@code SESSION_NOT_FOUND}) if there is no such session
   */
  void delete(String id);
}
