/**
 * Shell sessions: {@code Sessions} holds each {@code Session}'s state file (in a directory of the
 * commands' temporary directory, outside the workspace) and the permit that runs its commands one
 * at a time; {@code SessionScript} is the bash wrapper that restores the state before a command
 * and saves it after. A command in a session is an ordinary exec of that wrapper, so isolation,
 * limits, timeouts, kill and streaming are those of every exec. The domain classes know no HTTP;
 * {@code SessionRoutes} and {@code SessionMessages} are the capability's wire.
 */
package dev.sandboxsdk.agent.session;
