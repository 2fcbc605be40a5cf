/**
 * How the agent runs commands: native spawn in a process group, bubblewrap isolation, terminals,
 * output windows and budgets, signals, timeouts and the watchdog, and the agent's own short
 * commands ({@code InternalCommand}). The capabilities that run commands (exec, background
 * processes, ports, git, checkpoints) use it; it has no routes.
 *
 * <p><b>Internal</b> to the agent.
 */
package dev.sandboxsdk.agent.process;
