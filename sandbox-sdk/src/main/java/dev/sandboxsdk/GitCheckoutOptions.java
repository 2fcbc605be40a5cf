package dev.sandboxsdk;

import dev.sandboxsdk.internal.Checks;
import java.time.Duration;
import java.util.Objects;

/**
 * Options of {@link SandboxGit#checkout(String, GitCheckoutOptions)}. Immutable; build with
 * {@link #builder()}.
 *
 * <p><b>Credentials</b> ({@link Builder#credentials}) go to the agent inside the request body
 * and from there to git through a credential helper's environment: never into an argument list
 * ({@code ps}), the clone's {@code .git/config}, a shell history, a log line or an error message.
 * They apply to {@code http(s)} URLs only. {@link #toString()} never prints the password.
 *
 * @param branch the branch or tag to check out; null for the remote's default branch
 * @param depth a shallow clone of this many commits; 0 for the full history
 * @param targetDir where to clone, relative to the workspace or absolute inside it; null for the
 *     repository's name in the workspace. Must not exist, or be an empty directory
 * @param timeout the agent kills git after this long; null for its default of 10 minutes
 * @param username the user name for an {@code http(s)} remote; null for none
 * @param password the password or token for an {@code http(s)} remote; null for none
 */
public record GitCheckoutOptions(String branch, int depth, String targetDir, Duration timeout, String username,
    String password) {

  private static final GitCheckoutOptions DEFAULTS = new GitCheckoutOptions(null, 0, null, null, null, null);

  /** Validates. */
  public GitCheckoutOptions {
    if (branch != null && (branch.isEmpty() || branch.length() > 255 || branch.startsWith("-")
        || !Checks.isVisibleAscii(branch))) {
      throw new IllegalArgumentException("branch must be 1-255 printable ASCII characters, not starting with '-': '"
          + branch + "'");
    }
    if (depth < 0) {
      throw new IllegalArgumentException("depth must be 0 (full history) or positive: " + depth);
    }
    if (targetDir != null && targetDir.isEmpty()) {
      throw new IllegalArgumentException("targetDir is empty");
    }
    Checks.positiveOrNull(timeout, "timeout");
    if (password != null && username == null) {
      throw new IllegalArgumentException("a password needs a username (for a token, use the name the host expects,"
          + " e.g. x-access-token or oauth2)");
    }
  }

  /** The remote's default branch, the full history, the repository's name as the directory. */
  public static GitCheckoutOptions defaults() {
    return DEFAULTS;
  }

  /** A builder with every option unset. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder initialised from these options. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.branch = branch;
    b.depth = depth;
    b.targetDir = targetDir;
    b.timeout = timeout;
    b.username = username;
    b.password = password;
    return b;
  }

  /** The password is never printed. */
  @Override
  public String toString() {
    return "GitCheckoutOptions{branch=" + branch + ", depth=" + depth + ", targetDir=" + targetDir + ", timeout="
        + timeout + ", username=" + username + ", password=" + (password == null ? "null" : "***") + "}";
  }

  /** Builds {@link GitCheckoutOptions}. Not thread-safe. */
  public static final class Builder {
    private String branch;
    private int depth;
    private String targetDir;
    private Duration timeout;
    private String username;
    private String password;

    private Builder() {}

    /** The branch or tag to check out. */
    public Builder branch(String branch) {
      this.branch = branch;
      return this;
    }

    /** A shallow clone of this many commits (0: the full history). */
    public Builder depth(int depth) {
      this.depth = depth;
      return this;
    }

    /** Where to clone, relative to the workspace. */
    public Builder targetDir(String targetDir) {
      this.targetDir = targetDir;
      return this;
    }

    /** The agent kills git after this long. */
    public Builder timeout(Duration timeout) {
      this.timeout = timeout;
      return this;
    }

    /** A user name and password (or token) for an {@code http(s)} remote. */
    public Builder credentials(String username, String password) {
      this.username = Objects.requireNonNull(username, "username == null");
      this.password = Objects.requireNonNull(password, "password == null");
      return this;
    }

    /** The options. */
    public GitCheckoutOptions build() {
      return new GitCheckoutOptions(branch, depth, targetDir, timeout, username, password);
    }
  }
}
