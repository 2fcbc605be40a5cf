/**
 * Kubernetes sandboxes: one hardened pod per sandbox, reached through a port-forward or the pod's
 * address ({@link dev.sandboxsdk.kubernetes.KubernetesProvider}).
 *
 * <p><b>Public API.</b> Covered by the project's versioning policy (docs/versioning.md).
 */
package dev.sandboxsdk.kubernetes;
