package dev.sandboxsdk.agent;

/** The error codes of wire protocol v1, each with the HTTP status it travels with. */
public enum ErrorCode {
  VALIDATION_FAILED(400),
  INVALID_COMMAND(400),
  UNAUTHORIZED(401),
  PROCESS_NOT_FOUND(404),
  /** No session of that id (POST /api/sessions creates one). */
  SESSION_NOT_FOUND(404),
  /** A session of that id exists already. */
  SESSION_ALREADY_EXISTS(409),
  /** A command of the session still runs after the wait for it. */
  SESSION_BUSY(409),
  /** The agent holds as many sessions as it may. */
  TOO_MANY_SESSIONS(429),
  /** File routes: the path does not exist (Cloudflare's code). */
  FILE_NOT_FOUND(404),
  /** File routes: a directory where a file is expected (Cloudflare's code). */
  IS_DIRECTORY(400),
  /** File routes: a file where a directory is expected (Cloudflare's code). */
  NOT_DIRECTORY(400),
  /** File routes: a name longer than the file system allows (Cloudflare's code). */
  NAME_TOO_LONG(400),
  /** File routes: too many levels of symbolic links (Cloudflare's code; 500 there, a client's path here). */
  TOO_MANY_LINKS(400),
  /** File routes: outside the workspace, or the file system says no (Cloudflare's code). */
  PERMISSION_DENIED(403),
  /** File routes: a read-only file system (Cloudflare's code). */
  READ_ONLY(403),
  COMMAND_NOT_FOUND(404),
  /** Code contexts: no context with that id (ours). */
  CONTEXT_NOT_FOUND(404),
  /** Code contexts: the language's interpreter (python3, node) is not installed in the sandbox (ours). */
  INTERPRETER_NOT_AVAILABLE(422),
  /** Code contexts: the interpreter started but its runner did not become ready (ours). */
  INTERPRETER_FAILED(502),
  /** Code contexts: the agent's cap on open contexts is reached (ours). */
  TOO_MANY_CONTEXTS(429),
  /** git/checkout: the repository does not exist or cannot be read (Cloudflare's code). */
  GIT_REPOSITORY_NOT_FOUND(404),
  /** git/checkout: the requested branch is not in the repository (Cloudflare's code). */
  GIT_BRANCH_NOT_FOUND(404),
  /** git/checkout: a repository URL the agent does not accept (Cloudflare's code). */
  INVALID_GIT_URL(400),
  /**
   * git/checkout: the remote refused the credentials (Cloudflare's code; 401 there, 403 here: a 401
   * from the agent means its own bearer token was refused).
   */
  GIT_AUTH_FAILED(403),
  NOT_FOUND(404),
  /** Checkpoints: no checkpoint with that id (ours). */
  CHECKPOINT_NOT_FOUND(404),
  /** Ports: the port is not exposed, so it is not proxied either (Cloudflare's code). */
  PORT_NOT_EXPOSED(404),
  /** Ports: the port is exposed already (Cloudflare's code). */
  PORT_ALREADY_EXPOSED(409),
  /** Ports: not 1 to 65535, or the agent's own port (Cloudflare's code). */
  INVALID_PORT_NUMBER(400),
  /** Proxy: nothing accepts connections on the exposed port (Cloudflare's code). */
  SERVICE_NOT_RESPONDING(502),
  /** Proxy: the server's answer is not HTTP/1.x the proxy can pass on (ours). */
  UPSTREAM_INVALID_RESPONSE(502),
  /** Proxy: the server did not answer within the agent's proxy timeout (ours). */
  UPSTREAM_TIMEOUT(504),
  METHOD_NOT_ALLOWED(405),
  PROCESS_ALREADY_EXISTS(409),
  PROCESS_NOT_RUNNING(409),
  /** process/{id}/resize: the process does not run on a terminal (ours). */
  NOT_A_TERMINAL(409),
  /** Checkpoints: a restore needs no process to run; kill them, or restore with force (ours). */
  PROCESSES_RUNNING(409),
  /** Checkpoints: another checkpoint, restore or delete is in progress (ours). */
  CHECKPOINT_BUSY(409),
  /** File routes: the target already exists (Cloudflare's code). */
  FILE_EXISTS(409),
  PAYLOAD_TOO_LARGE(413),
  /** File routes: a file too large for a JSON answer; use the stream or the raw route (Cloudflare's code). */
  FILE_TOO_LARGE(413),
  TOO_MANY_PROCESSES(429),
  /** watch: too many watch streams, or directories for one, or the system's inotify limits (ours). */
  TOO_MANY_WATCHES(429),
  /** expose-port: 256 ports are exposed already (ours). */
  TOO_MANY_EXPOSED_PORTS(429),
  /** proxy: preview (non-bearer) clients use their whole share of connections already (ours). */
  TOO_MANY_PROXIED_REQUESTS(429),
  INTERNAL_ERROR(500),
  /** process/start with a pty on an agent that cannot give commands a terminal ({@code --spawn jdk}) (ours). */
  TERMINAL_UNAVAILABLE(501),
  /** File routes: an I/O failure the agent cannot attribute to the request (Cloudflare's code). */
  FILESYSTEM_ERROR(500),
  /** git/checkout: git failed for a reason none of the other git codes names (Cloudflare's code). */
  GIT_CLONE_FAILED(500),
  /** git/checkout: the remote could not be reached, or the clone timed out (Cloudflare's code). */
  GIT_NETWORK_ERROR(502),
  /** The agent's output budget is in use; retry later (docs/protocol/semantics.md, "Memory"). */
  OUTPUT_BUDGET_EXHAUSTED(503),
  SHUTTING_DOWN(503),
  /** File routes: no space left on the device or quota exceeded (Cloudflare's code, 500 there). */
  NO_SPACE(507);

  private final int httpStatus;

  ErrorCode(int httpStatus) {
    this.httpStatus = httpStatus;
  }

  public int httpStatus() {
    return httpStatus;
  }
}
