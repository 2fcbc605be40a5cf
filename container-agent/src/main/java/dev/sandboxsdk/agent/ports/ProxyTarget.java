package dev.sandboxsdk.agent.ports;

/**
 * A proxied request that passed auth: the port in the sandbox, the request target to send its
 * server, and whether the client showed the agent's bearer token (else a preview token or cookie).
 */
public record ProxyTarget(int port, String pathAndQuery, boolean bearer) {
}
