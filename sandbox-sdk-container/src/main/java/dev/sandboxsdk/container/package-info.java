/**
 * Container sandboxes: one hardened container of the agent image per sandbox, through Docker or
 * Podman ({@link dev.sandboxsdk.container.ContainerSandbox}, {@link dev.sandboxsdk.container.ContainerProvider}).
 *
 * <p><b>Public API.</b> Covered by the project's versioning policy (docs/versioning.md).
 */
package dev.sandboxsdk.container;
