package dev.sandboxsdk.mcp.internal;

import dev.sandboxsdk.GitCheckout;
import dev.sandboxsdk.GitCheckoutOptions;
import dev.sandboxsdk.SandboxException;
import java.time.Duration;
import java.util.Map;

/**
 * The git tool group: {@code gitCheckout}. Credentials never pass through the model: the call
 * names a variable the server was given with {@code --pass-env}, whose value the server looks
 * up itself (and redacts from every output, as it does for commands). Thread-safe.
 */
final class GitTools implements ToolGroup {
  static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(10);

  private final Sandboxes sandboxes;
  private final Map<String, String> passEnv;

  GitTools(Sandboxes sandboxes, Map<String, String> passEnv) {
    this.sandboxes = sandboxes;
    this.passEnv = passEnv;
  }

  @Override
  public void register(Map<String, ToolHandler> tools) {
    tools.put("gitCheckout", ToolHandler.blocking(GitArgs.Checkout.class, this::gitCheckout));
  }

  /** What gitCheckout returns. */
  record CheckedOut(String repoUrl, String branch, String targetDir, String sandboxId) {
  }

  ToolOutcome gitCheckout(GitArgs.Checkout args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    String url = args.repoUrl();
    GitCheckoutOptions.Builder options = GitCheckoutOptions.builder()
        .timeout(SandboxTools.seconds(args.timeoutSeconds(), DEFAULT_TIMEOUT));
    if (args.branch() != null) {
      options.branch(args.branch());
    }
    if (args.depth() != null) {
      options.depth(args.depth());
    }
    if (args.targetDir() != null) {
      options.targetDir(args.targetDir());
    }
    if (args.passwordEnv() != null) {
      String name = args.passwordEnv();
      String secret = passEnv.get(name);
      if (secret == null) {
        throw new ToolException("passwordEnv names '" + name + "', which this server was not given: start the server"
            + " with --pass-env " + name + " (the variable set in its environment). Variables it has: "
            + (passEnv.isEmpty() ? "none" : String.join(", ", passEnv.keySet())) + ".");
      }
      options.credentials(args.username() != null ? args.username() : "x-access-token", secret);
    } else if (args.username() != null) {
      throw new ToolException("username needs passwordEnv: the name of a variable passed to this server with"
          + " --pass-env that holds the password or token.");
    }
    GitCheckout co;
    try {
      co = sb.sandbox().git().checkout(url, options.build());
    } catch (SandboxException e) {
      if (e.code() != null && e.code().startsWith("GIT_") || "INVALID_GIT_URL".equals(e.code())) {
        throw new ToolException("git clone failed (" + e.code() + "): " + e.getMessage() + hint(e.code()));
      }
      throw e;
    }
    return ToolOutcome.ok(SandboxTools.json(new CheckedOut(co.repoUrl(), co.branch(), co.targetDir(), sb.id())));
  }

  static String hint(String code) {
    switch (code) {
      case "GIT_REPOSITORY_NOT_FOUND":
        return ". Check the URL; a private repository also answers 'not found' without credentials (passwordEnv).";
      case "GIT_BRANCH_NOT_FOUND":
        return ". Leave branch out for the remote's default branch.";
      case "GIT_AUTH_FAILED":
        return ". The remote wants credentials: give username and passwordEnv (a variable passed with --pass-env).";
      case "INVALID_GIT_URL":
        return ". A sandbox without network can only clone file:// URLs or paths inside its workspace.";
      default:
        return ".";
    }
  }
}
