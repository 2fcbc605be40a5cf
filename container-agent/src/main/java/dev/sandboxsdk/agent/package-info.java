/**
 * The sandbox agent ({@code container-agent.jar}): its command line, configuration, HTTP server
 * and error codes.
 *
 * <p><b>An application, not a library.</b> Its public contract is the wire protocol v1
 * (docs/protocol/README.md) and its command line (docs/protocol/command-line.md); the classes
 * are internal and may change in any release.
 */
package dev.sandboxsdk.agent;
