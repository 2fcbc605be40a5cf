package dev.sandboxsdk;

import java.util.Objects;

/**
 * The outcome of {@link SandboxGit#checkout}.
 *
 * @param repoUrl the repository's URL as cloned, without credentials
 * @param branch the branch checked out (read from the clone), e.g. {@code main}
 * @param targetDir the clone's absolute path in the sandbox
 */
public record GitCheckout(String repoUrl, String branch, String targetDir) {

  /** Checks that no part is null. */
  public GitCheckout {
    Objects.requireNonNull(repoUrl, "repoUrl == null");
    Objects.requireNonNull(branch, "branch == null");
    Objects.requireNonNull(targetDir, "targetDir == null");
  }
}
