/**
 * Background processes ({@code /api/process/*}): start, list, logs, log streams, stdin, kill and
 * clean up. Terminals are background processes started with a {@code pty}: the terminal itself is
 * the spawner's ({@code agent.process}), and its one route of its own, resize, is here. The domain
 * class {@code BackgroundProcesses} looks processes up, decodes log windows, writes stdin and
 * resizes terminals, and knows no HTTP; {@code ProcessRoutes} is thin: it parses the request,
 * calls the domain, and writes the answer or relays the logs as events.
 *
 * <p><b>Internal</b> to the agent; what the routes accept and answer is the wire protocol
 * (docs/protocol/README.md).
 */
package dev.sandboxsdk.agent.background;
