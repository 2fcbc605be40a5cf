/**
 * The embedded default, with no Docker: {@link dev.sandboxsdk.local.LocalSandbox} starts the agent
 * as a child JVM on 127.0.0.1 and stops it with everything it started on {@code close()};
 * {@link dev.sandboxsdk.local.LocalProvider} keeps named local sandboxes in a state directory so
 * that they can shut down, wake and be found again from any JVM of the same OS user;
 * {@link dev.sandboxsdk.local.Isolation} says how commands are kept from the host (bubblewrap or
 * nothing). A provider's running agents belong to that provider instance, not to static state.
 *
 * <p><b>Public API.</b> Everything public in this package is covered by the project's versioning
 * policy (docs/versioning.md).
 */
package dev.sandboxsdk.local;
