package dev.sandboxsdk.agent.git;

import com.sun.net.httpserver.HttpExchange;
import dev.sandboxsdk.agent.AgentConfig;
import dev.sandboxsdk.agent.fs.Workspace;
import dev.sandboxsdk.agent.http.Json;
import dev.sandboxsdk.agent.http.Query;
import dev.sandboxsdk.agent.http.Responses;
import dev.sandboxsdk.agent.http.Routes;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.IOException;
import java.util.Set;

/**
 * POST /api/git/checkout: Cloudflare's clone of a repository into the workspace. The route parses
 * the request; {@link GitUrls} checks the URL and {@link GitCheckouts} runs the clone.
 */
public final class GitRoutes {
  private static final Set<String> FIELDS = Set.of("repoUrl", "branch", "targetDir", "sessionId", "depth", "timeoutMs");

  private final ProcessManager processes;
  private final AgentConfig config;
  private final GitCheckouts checkouts;

  public GitRoutes(ProcessManager processes, Workspace workspace) {
    this.processes = processes;
    this.config = processes.config();
    this.checkouts = new GitCheckouts(processes, workspace);
  }

  /** Registers the checkout. */
  public void register(Routes routes) {
    routes.on("POST", "/api/git/checkout", this::checkout);
  }

  void checkout(HttpExchange exchange) throws IOException {
    Query.none(exchange);
    Json body = Json.read(exchange, config.maxBodyBytes(), processes.outputBudget()).allowOnly(FIELDS);
    GitUrls.Source source = GitUrls.source(body.string("repoUrl"));
    String branch = GitCheckouts.branch(body.string("branch"));
    Long depth = body.integer("depth", 1, Integer.MAX_VALUE);
    Long timeout = body.integer("timeoutMs", 1, GitCheckouts.MAX_TIMEOUT_MS);
    body.string("sessionId"); // accepted for Cloudflare's clients; there are no sessions here
    GitCheckouts.Checkout done = checkouts.checkout(source, branch, depth, timeout, body.string("targetDir"));
    Responses.ok(exchange, new GitMessages.CheckedOut(done.repoUrl(), done.branch(), done.targetDir()));
  }
}
