/**
 * How the agent runs commands: native spawn in a process group, bubblewrap isolation, terminals,
 * output windows and budgets, signals, timeouts and the watchdog.
 *
 * <p><b>Internal</b> to the agent.
 */
package dev.sandboxsdk.agent.process;
