/**
 * The benchmarks behind docs/performance.md, one subpackage per layer measured, and what they
 * share: the SVG plot writer {@link dev.sandboxsdk.bench.Svg} and the memory sampler
 * {@link dev.sandboxsdk.bench.RssSampler}. Each benchmark has a launcher in
 * {@code benchmarks/scripts/}; {@code benchmarks/all.sh} runs them all.
 *
 * <p><b>Not published.</b> Programs to run, not an API.
 */
package dev.sandboxsdk.bench;
