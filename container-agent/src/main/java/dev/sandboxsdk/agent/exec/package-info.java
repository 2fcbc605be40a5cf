/**
 * Exec: a command run in the foreground, its result answered whole ({@code POST /api/execute}) or
 * streamed as events ({@code POST /api/execute/stream}), and killed by its id. The command is
 * spawned and timed by the process manager ({@code agent.process}); this package's domain classes
 * keep a result's output within the output budget ({@code ExecOutput}) and encode output as stream
 * events ({@code OutputEvents}), and know no HTTP. {@code ExecRoutes} is thin: it parses the
 * request (with {@code ExecRequests}, also used by process/start), spawns, and writes the answer.
 *
 * <p><b>Internal</b> to the agent; what the routes accept and answer is the wire protocol
 * (docs/protocol/README.md).
 */
package dev.sandboxsdk.agent.exec;
