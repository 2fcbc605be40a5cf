/**
 * The agent on its own: {@code AgentBench} (exec, streams, processes and memory through a
 * minimal HTTP client; {@code benchmarks/scripts/agent.sh}) and {@code IsolationBench} (what
 * {@code --isolation bwrap} costs per command; {@code benchmarks/scripts/isolation.sh}). Both
 * start the agent's jar and use the JDK only.
 */
package dev.sandboxsdk.bench.agent;
