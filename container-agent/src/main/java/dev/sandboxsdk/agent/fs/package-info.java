/**
 * The agent's file system access: paths resolved one name at a time from a descriptor of the
 * workspace, so no route can be steered outside it by links.
 *
 * <p><b>Internal</b> to the agent.
 */
package dev.sandboxsdk.agent.fs;
