/**
 * The container provider's implementation on docker-java: container settings, launch, labels and
 * lookup.
 *
 * <p><b>Internal.</b> Not public API: it may change in any release without notice.
 */
package dev.sandboxsdk.container.internal;
