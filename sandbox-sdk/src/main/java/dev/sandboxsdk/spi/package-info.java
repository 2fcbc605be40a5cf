/**
 * For provider authors: the seam between the SDK and a place that runs sandboxes. A provider
 * implements {@link dev.sandboxsdk.spi.SandboxBackend} (start, stop, remove, describe one sandbox)
 * and hands out {@link dev.sandboxsdk.spi.SandboxHandle}s, which implement the lifecycle that every
 * {@link dev.sandboxsdk.ManagedSandbox} shares once: close and destroy, the JVM-exit hook of an
 * unnamed sandbox, shutdown and wake, the error of a call on a stopped sandbox, and the clone of a
 * spec's repository at creation. Users of the SDK never need this package.
 */
package dev.sandboxsdk.spi;
