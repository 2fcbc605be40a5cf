/**
 * The benchmarks behind docs/performance.md, one subpackage per layer measured, and what they
 * share: the SVG plot writer {@link dev.sandboxsdk.bench.Svg}, the memory sampler
 * {@link dev.sandboxsdk.bench.RssSampler}, percentiles ({@link dev.sandboxsdk.bench.Percentiles}),
 * the machine and its processes from /proc ({@link dev.sandboxsdk.bench.Machine},
 * {@link dev.sandboxsdk.bench.Procs}), and a raw HTTP/1.1 client on a plain socket
 * ({@link dev.sandboxsdk.bench.RawHttp}, with {@link dev.sandboxsdk.bench.JsonBytes} to read
 * JSON fields from bytes). All of it uses the JDK only. Each benchmark has a launcher in
 * {@code benchmarks/scripts/}; {@code benchmarks/all.sh} runs them all.
 *
 * <p><b>Not published.</b> Programs to run, not an API.
 */
package dev.sandboxsdk.bench;
