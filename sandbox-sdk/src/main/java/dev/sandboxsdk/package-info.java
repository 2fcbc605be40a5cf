/**
 * The Sandbox SDK's public API: run commands in a sandbox and manage the processes started there.
 *
 * <p>{@link dev.sandboxsdk.Sandbox} is the entry point ({@link dev.sandboxsdk.local.LocalSandbox} for the
 * embedded default, {@code Sandbox.connect} for an agent that already runs, a
 * {@link dev.sandboxsdk.SandboxProvider} for managed sandboxes); options are immutable builders,
 * results and events are records, and every failure is a {@link dev.sandboxsdk.SandboxException}.
 *
 * <p><b>Public API.</b> Everything in this package is covered by the project's versioning policy
 * (docs/versioning.md).
 */
package dev.sandboxsdk;
