/**
 * The SDK against the real agent: exec and streams ({@code SdkBench}), cancel to killed
 * ({@code CancelBench}), file transfer ({@code FilesBench}), checkpoints ({@code CheckpointBench})
 * and terminals ({@code TerminalBench}); each has a launcher in {@code benchmarks/scripts/}.
 */
package dev.sandboxsdk.bench.sdk;
