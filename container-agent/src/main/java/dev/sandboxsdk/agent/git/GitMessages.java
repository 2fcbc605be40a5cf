package dev.sandboxsdk.agent.git;

/** Wire records of POST /api/git/checkout ({@link GitRoutes}); every component is always written. */
final class GitMessages {
  private GitMessages() {
  }

  /** The clone: the URL without credentials, the branch checked out, the absolute target directory. */
  record CheckedOut(String repoUrl, String branch, String targetDir) {
  }
}
