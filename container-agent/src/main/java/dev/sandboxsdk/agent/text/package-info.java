/**
 * Byte buffers and text helpers of the agent: incremental UTF-8 decoding that never splits a
 * code point, and JSON string escaping.
 *
 * <p><b>Internal</b> to the agent.
 */
package dev.sandboxsdk.agent.text;
