/**
 * Egress: the proxy through which a sandbox's commands reach the network, and the policy it
 * enforces. {@code EgressPolicy} (a mode and ordered {@code EgressRule}s: domains, exact or {@code
 * *.} wildcard, and address blocks, each on a port range) decides each connection into a {@code
 * Decision} on the addresses the proxy resolved itself ({@code EgressResolver}), with the host's
 * private, loopback, link-local, metadata and reserved addresses blocked unless an address rule
 * allows them. {@code EgressProxy} serves HTTP {@code CONNECT} tunnels (with the TLS ClientHello's
 * SNI checked against the CONNECT host) and absolute-form HTTP requests, bounded by {@code
 * EgressLimits}, and records every connection as an {@code EgressEvent} in a bounded {@code
 * EgressAudit}. The domain classes know no agent route and no HTTP server; {@code EgressRoutes}
 * ({@code GET}/{@code PUT /api/egress/policy}, {@code GET /api/egress/events}) and {@code
 * EgressRequests} (the policy's JSON, also read from {@code --egress-policy FILE}) are the
 * capability's wire. {@code Egress} is the running proxy and the URL commands reach it at; the
 * process layer starts it ({@code EgressSetup}) and gives every command the proxy variables.
 *
 * <p>Secrets: {@code EgressSecrets} (read from {@code --egress-secrets FILE} by {@code
 * SecretsFile}) are put into requests for their placeholders by {@code Interception}, which
 * terminates TLS to the bound hosts with leaves of an in-memory {@code CertificateAuthority} over
 * {@code TlsChannel} and verifies the upstream against {@code EgressTrust}.
 */
package dev.sandboxsdk.agent.egress;
