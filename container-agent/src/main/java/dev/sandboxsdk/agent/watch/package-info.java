/**
 * The agent's file watches: the kernel's change events (inotify, through the JDK's WatchService)
 * under a directory of the workspace, filtered by globs and queued for a reader.
 *
 * <p><b>Internal</b> to the agent; the route of {@code /api/watch} is in the HTTP package.
 */
package dev.sandboxsdk.agent.watch;
