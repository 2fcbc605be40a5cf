/**
 * The SDK's implementation: the HTTP client of the agent's wire protocol, the wire JSON, the
 * {@code Flow} publishers, and the launcher of the local agent.
 *
 * <p><b>Internal.</b> Not public API: it may change in any release without notice. Use the types
 * of {@code dev.sandboxsdk} instead.
 */
package dev.sandboxsdk.internal;
