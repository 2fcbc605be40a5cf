package dev.sandboxsdk;

/**
 * Git in a sandbox ({@link Sandbox#git()}): clone repositories into the workspace with the
 * sandbox's own {@code git}.
 *
 * <pre>{@code
 * GitCheckout co = sandbox.git().checkout("https://github.com/octocat/Hello-World.git");
 * sandbox.exec("git -C " + co.targetDir() + " log --oneline");
 * }</pre>
 *
 * <p><b>Threading.</b> Thread-safe: any number of threads may use the view at once (two clones
 * into the same directory are not: the second finds it not empty). Each call blocks the calling
 * thread until git is done. The view costs nothing to get. After the sandbox is closed every
 * method throws {@link IllegalStateException}.
 */
public interface SandboxGit {

  /** Clones a repository into the workspace; see {@link #checkout(String, GitCheckoutOptions)}. */
  default GitCheckout checkout(String repoUrl) {
    return checkout(repoUrl, GitCheckoutOptions.defaults());
  }

  /**
   * Clones a repository into the sandbox with the sandbox's {@code git} ({@code git clone}, run
   * as a command: the sandbox's user, isolation and network). Blocks until the clone is done.
   *
   * <pre>{@code
   * GitCheckout co = sandbox.git().checkout("https://github.com/octocat/Hello-World.git",
   *     GitCheckoutOptions.builder().branch("master").depth(1).targetDir("hello").build());
   * sandbox.exec("git -C hello log --oneline");
   * }</pre>
   *
   * <p>Private repositories: pass {@link GitCheckoutOptions.Builder#credentials}, not a URL with
   * a password in it; either way the agent keeps them out of git's argument list and the clone's
   * configuration, so {@code origin} is stored without them.
   *
   * @param repoUrl {@code https://}, {@code http://}, {@code ssh://}, {@code git://},
   *     {@code file://}, scp-like {@code git@host:owner/repo.git}, or a path in the sandbox
   * @throws SandboxNotFoundException if the repository or the branch does not exist
   *     ({@code GIT_REPOSITORY_NOT_FOUND}, {@code GIT_BRANCH_NOT_FOUND})
   * @throws SandboxPermissionException if the remote refused the credentials ({@code GIT_AUTH_FAILED})
   * @throws SandboxInvalidRequestException for a URL the agent does not accept, a target directory
   *     that exists and is not empty, or a remote URL on an isolated sandbox without network
   * @throws SandboxServerException if the remote could not be reached ({@code GIT_NETWORK_ERROR})
   *     or git failed otherwise ({@code GIT_CLONE_FAILED}); {@link SandboxException#code()} says which
   */
  GitCheckout checkout(String repoUrl, GitCheckoutOptions options);
}
