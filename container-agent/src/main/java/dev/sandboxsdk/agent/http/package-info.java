/**
 * The agent's HTTP routes: exec, processes, files, ports and the proxy, git, checkpoints; auth,
 * admission, JSON and server-sent events.
 *
 * <p><b>Internal</b> to the agent; what the routes accept and answer is the wire protocol
 * (docs/protocol/README.md).
 */
package dev.sandboxsdk.agent.http;
