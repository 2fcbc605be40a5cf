/**
 * Git: Cloudflare's clone of a repository into the workspace ({@code POST /api/git/checkout}).
 * The domain classes know no HTTP: {@code GitUrls} validates a repository URL, takes an http(s)
 * URL's credentials out for git's credential helper and redacts URLs, and {@code GitCheckouts}
 * checks the target and runs {@code git clone} as a command runs. {@code GitRoutes} is thin: it
 * parses the request, calls the domain, and writes the answer.
 *
 * <p><b>Internal</b> to the agent; what the routes accept and answer is the wire protocol
 * (docs/protocol/README.md).
 */
package dev.sandboxsdk.agent.git;
