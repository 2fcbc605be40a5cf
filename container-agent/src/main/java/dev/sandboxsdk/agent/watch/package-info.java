/**
 * File watches ({@code POST /api/watch}): the kernel's change events (inotify, through the JDK's
 * WatchService) under a directory of the workspace, filtered by globs and queued for a reader. The
 * domain classes ({@code Watches}, {@code FileWatch}, {@code WatchRules}) know no HTTP; {@code
 * WatchRoutes} is thin: it parses the request, opens the watch, and writes its events.
 *
 * <p><b>Internal</b> to the agent; what the routes accept and answer is the wire protocol
 * (docs/protocol/README.md).
 */
package dev.sandboxsdk.agent.watch;
