/**
 * The agent's checkpoints: tar archives of the whole workspace, kept in the agent's checkpoint
 * directory, made and restored by GNU tar run as the command user.
 *
 * <p><b>Internal</b> to the agent; the routes of {@code /api/checkpoints} are in the HTTP package.
 */
package dev.sandboxsdk.agent.checkpoint;
