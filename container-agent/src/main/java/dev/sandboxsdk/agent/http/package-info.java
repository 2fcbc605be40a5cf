/**
 * The agent's HTTP transport, shared by every capability: the handler that assembles the route
 * groups ({@code ApiHandler}), routing ({@code Routes}), the bearer token and admission, the strict
 * JSON and query readers, answers and error replies, the server-sent events writer, and the sweep
 * of silent connections. The routes themselves live with their capability ({@code agent.exec},
 * {@code agent.background}, {@code agent.files}, {@code agent.watch}, {@code agent.ports}, {@code
 * agent.git}, {@code agent.checkpoint}).
 *
 * <p><b>Internal</b> to the agent; what the routes accept and answer is the wire protocol
 * (docs/protocol/README.md).
 */
package dev.sandboxsdk.agent.http;
