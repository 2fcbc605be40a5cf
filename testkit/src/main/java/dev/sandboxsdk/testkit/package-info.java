/**
 * Test helpers that the agent's tests and the SDK's, the providers' and the MCP adapter's tests
 * share: processes seen through {@code /proc}, waiting for a condition, the set-up of the path-race
 * attacks and seeded random inputs. The agent and the SDK never depend on each other, so their
 * shared test code lives here; this module depends on the JDK only and is never a runtime
 * dependency of anything.
 */
package dev.sandboxsdk.testkit;
