/**
 * Start-up of container sandboxes beside local ones: {@code StartBench}, run by
 * {@code benchmarks/scripts/container.sh} (needs a container engine and the agent image).
 */
package dev.sandboxsdk.bench.container;
