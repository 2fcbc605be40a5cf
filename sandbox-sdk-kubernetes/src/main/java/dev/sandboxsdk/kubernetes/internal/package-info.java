/**
 * The Kubernetes provider's implementation on fabric8: pod and Secret specs, the port-forward,
 * lookup and deletion.
 *
 * <p><b>Internal.</b> Not public API: it may change in any release without notice.
 */
package dev.sandboxsdk.kubernetes.internal;
