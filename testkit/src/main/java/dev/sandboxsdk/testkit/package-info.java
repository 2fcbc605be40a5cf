/**
 * Test helpers that the agent's tests and the SDK's, the providers' and the MCP adapter's tests
 * share: processes seen through {@code /proc}, waiting for a condition, the set-up of the path-race
 * attacks, seeded random inputs, and the destinations and clients of the egress tests (an HTTPS
 * host with its own certificate that serves a private git repository, the clients' scripts, a
 * search for a secret's value). The agent and the SDK never depend on each other, so their
 * shared test code lives here; this module depends on the JDK only and is never a runtime
 * dependency of anything.
 */
package dev.sandboxsdk.testkit;
