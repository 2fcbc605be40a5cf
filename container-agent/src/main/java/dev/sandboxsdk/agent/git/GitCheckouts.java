package dev.sandboxsdk.agent.git;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.fs.Anchor;
import dev.sandboxsdk.agent.fs.PathErrors;
import dev.sandboxsdk.agent.fs.Workspace;
import dev.sandboxsdk.agent.git.GitUrls.Source;
import dev.sandboxsdk.agent.process.InternalCommand;
import dev.sandboxsdk.agent.process.ProcessManager;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Cloudflare's clone of a repository into the workspace, without HTTP. {@code git clone} runs as
 * a command does ({@link InternalCommand}: argv, the command user, bubblewrap, the agent's
 * timeout), never through a shell, with the target confined to the workspace. Credentials in an
 * http(s) URL ({@code https://user:token@host/...}) never reach an argument list or a log: the URL
 * git sees has them removed ({@link GitUrls}), and they travel in the environment of the git
 * process, read by a credential helper that the environment configures ({@code GIT_CONFIG_COUNT}).
 * The clone's {@code origin} is therefore stored without them. Every URL in a message or log is
 * redacted.
 */
final class GitCheckouts {
  private static final Logger log = LoggerFactory.getLogger(GitCheckouts.class);
  /** Cloudflare's default clone timeout: 10 minutes. */
  static final long DEFAULT_TIMEOUT_MS = 600_000;
  static final long MAX_TIMEOUT_MS = 24L * 60 * 60 * 1000;
  private static final int MAX_STDERR_CHARS = 4000;
  static final String USER_VAR = "SANDBOX_GIT_USERNAME";
  static final String PASSWORD_VAR = "SANDBOX_GIT_PASSWORD";
  /** Answers git's {@code get} with the two variables; stores and erases nothing. */
  static final String HELPER = "!f() { test \"$1\" = get || exit 0; echo \"username=${" + USER_VAR + "}\";"
      + " echo \"password=${" + PASSWORD_VAR + "}\"; }; f";

  private final ProcessManager processes;
  private final Workspace workspace;

  GitCheckouts(ProcessManager processes, Workspace workspace) {
    this.processes = processes;
    this.workspace = workspace;
  }

  /** A clone done: the URL without credentials, the branch checked out, the absolute target directory. */
  record Checkout(String repoUrl, String branch, String targetDir) {
  }

  /**
   * {@code branch} if it may be given to git: 1 to 255 printable ASCII characters without spaces,
   * not starting with '-' (null stays null).
   */
  static String branch(String branch) {
    if (branch != null && (branch.isEmpty() || branch.length() > 255 || branch.startsWith("-")
        || !branch.chars().allMatch(c -> c > 0x20 && c < 0x7f))) {
      throw AgentException.invalid("branch", "'branch' must be 1 to 255 printable ASCII characters without spaces,"
          + " not starting with '-'");
    }
    return branch;
  }

  /**
   * Clones {@code source} into {@code targetRaw} (null: the repository's name), at {@code branch}
   * (null: the remote's default), {@code depth} commits deep (null: all), within {@code timeout}
   * ms (null: {@value #DEFAULT_TIMEOUT_MS}).
   *
   * @throws AgentException INVALID_GIT_URL, FILE_EXISTS, the target's path error, or what the
   *     failed clone maps to (GIT_*_ERROR, GIT_*_NOT_FOUND, COMMAND_NOT_FOUND)
   */
  Checkout checkout(Source source, String branch, Long depth, Long timeout, String targetRaw) {
    long timeoutMs = timeout == null ? DEFAULT_TIMEOUT_MS : timeout;
    if (targetRaw == null) {
      targetRaw = repoName(source.url());
    }
    Path target = checkTarget(targetRaw);
    if (source.remote() && !processes.network()) {
      throw new AgentException(ErrorCode.INVALID_GIT_URL, "this agent runs commands without network"
          + " (--isolation bwrap, network off), so '" + source.redacted() + "' cannot be reached; clone from a file:// URL"
          + " or a path inside the workspace, or start the agent with the network on",
          Map.of("field", "repoUrl", "repoUrl", source.redacted()));
    }
    List<String> argv = new ArrayList<>(List.of("git", "-c", "protocol.ext.allow=never", "clone", "--quiet"));
    if (branch != null) {
      argv.addAll(List.of("--branch", branch));
    }
    if (depth != null) {
      argv.addAll(List.of("--depth", Long.toString(depth)));
    }
    argv.addAll(List.of("--", source.url(), target.toString()));
    long t0 = System.nanoTime();
    InternalCommand.Outcome o;
    try {
      o = InternalCommand.run(processes, argv, environment(source), null, timeoutMs, 64 * 1024);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentException(ErrorCode.SHUTTING_DOWN, "interrupted while cloning");
    }
    long ms = (System.nanoTime() - t0) / 1_000_000;
    if (o.exitCode() != 0) {
      AgentException failure = failure(o, source, targetRaw, timeoutMs);
      log.info("git clone of {} into {} failed in {} ms: {}", source.redacted(), PathErrors.shorten(targetRaw), ms,
          failure.code());
      throw failure;
    }
    log.info("git clone of {} into {} done in {} ms", source.redacted(), PathErrors.shorten(targetRaw), ms);
    return new Checkout(source.redacted(), currentBranch(target, branch), target.toString());
  }

  /** git's environment: no prompts, the C locale, and the credentials for the helper, if any. */
  private static Map<String, String> environment(Source source) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("GIT_TERMINAL_PROMPT", "0");
    env.put("GIT_ASKPASS", null);
    env.put("SSH_ASKPASS", null);
    env.put("LC_ALL", "C");
    env.put("LANGUAGE", null);
    // No interactive ssh questions: an unknown host key fails instead of hanging until the timeout.
    env.put("GIT_SSH_COMMAND", "ssh -o BatchMode=yes");
    if (source.user() != null) {
      // The first (empty) helper drops any configured ones, then ours answers from the environment.
      env.put("GIT_CONFIG_COUNT", "2");
      env.put("GIT_CONFIG_KEY_0", "credential.helper");
      env.put("GIT_CONFIG_VALUE_0", "");
      env.put("GIT_CONFIG_KEY_1", "credential.helper");
      env.put("GIT_CONFIG_VALUE_1", HELPER);
      env.put(USER_VAR, source.user());
      env.put(PASSWORD_VAR, source.password() == null ? "" : source.password());
    }
    return env;
  }

  /** Cloudflare's default target: the repository's name, without {@code .git}. */
  static String repoName(String url) {
    String s = url;
    while (s.endsWith("/")) {
      s = s.substring(0, s.length() - 1);
    }
    int cut = Math.max(s.lastIndexOf('/'), s.lastIndexOf(':'));
    String name = s.substring(cut + 1);
    if (name.endsWith(".git")) {
      name = name.substring(0, name.length() - 4);
    }
    if (name.isEmpty() || name.equals(".") || name.equals("..")) {
      throw AgentException.invalid("targetDir", "cannot take a directory name from the URL; give 'targetDir'");
    }
    return name;
  }

  /**
   * git clones into a missing or empty directory only; say so before it runs. Resolved through the
   * workspace's descriptors with the user's identity; git itself runs as a command does (as the
   * command user, inside the sandbox's view), so what it opens is what a command could.
   *
   * @return the target inside the workspace, links on the way followed
   */
  private Path checkTarget(String raw) {
    Path missing = workspace.root().resolve(String.join("/", workspace.relative("targetDir", raw)));
    try {
      return workspace.asUser(() -> {
        try (Anchor a = workspace.resolve("targetDir", raw, false, false)) {
          if (a.isWorkspace()) {
            throw AgentException.invalid("targetDir", "'targetDir' must be a directory inside the workspace, not the"
                + " workspace");
          }
          if (!Files.exists(a.path(), LinkOption.NOFOLLOW_LINKS)) {
            return a.logical();
          }
          boolean empty = false;
          if (Files.isDirectory(a.path(), LinkOption.NOFOLLOW_LINKS)) {
            try (Anchor held = a.hold("targetDir", raw); Stream<Path> entries = Files.list(held.path())) {
              empty = entries.findAny().isEmpty();
            }
          }
          if (!empty) {
            throw new AgentException(ErrorCode.FILE_EXISTS, "targetDir '" + PathErrors.shorten(raw)
                + "' already exists and is not an empty directory", Map.of("field", "targetDir",
                "path", PathErrors.shorten(raw)));
          }
          return a.logical();
        } catch (AgentException e) {
          if (e.code() == ErrorCode.FILE_NOT_FOUND) {
            return missing; // git makes the directories on the way
          }
          throw e;
        }
      });
    } catch (IOException e) {
      throw PathErrors.failure(e, "targetDir", raw);
    }
  }

  /** The branch checked out: what {@code .git/HEAD} names, else the one asked for. */
  private static String currentBranch(Path target, String requested) {
    try {
      String head = Files.readString(target.resolve(".git").resolve("HEAD"), StandardCharsets.UTF_8).trim();
      if (head.startsWith("ref: refs/heads/")) {
        return head.substring("ref: refs/heads/".length());
      }
    } catch (IOException e) {
      // unreadable (another user's files): fall back
    }
    return requested != null ? requested : "HEAD";
  }

  /** Maps a failed clone to the protocol's error, by git's (C locale) message. */
  private static AgentException failure(InternalCommand.Outcome o, Source source, String targetRaw, long timeoutMs) {
    String stderr = scrub(o.stderr(), source).trim();
    if (stderr.length() > MAX_STDERR_CHARS) {
      stderr = stderr.substring(0, MAX_STDERR_CHARS) + "...";
    }
    String lower = stderr.toLowerCase(Locale.ROOT);
    ErrorCode code;
    String what;
    if (o.timedOut()) {
      code = ErrorCode.GIT_NETWORK_ERROR;
      what = "timed out after " + timeoutMs + " ms";
    } else if (lower.contains("remote branch") && lower.contains("not found")
        || lower.contains("could not find remote branch")) {
      code = ErrorCode.GIT_BRANCH_NOT_FOUND;
      what = "branch not found";
    } else if (lower.contains("already exists and is not an empty directory")) {
      code = ErrorCode.FILE_EXISTS;
      what = "the target is not empty";
    } else if (lower.contains("authentication failed") || lower.contains("could not read username")
        || lower.contains("could not read password") || lower.contains("permission denied (publickey")
        || lower.contains("the requested url returned error: 401") || lower.contains("the requested url returned error: 403")) {
      code = ErrorCode.GIT_AUTH_FAILED;
      what = "authentication failed";
    } else if (lower.contains("could not resolve host") || lower.contains("failed to connect")
        || lower.contains("connection refused") || lower.contains("connection timed out")
        || lower.contains("network is unreachable") || lower.contains("could not connect")
        || lower.contains("connection reset") || lower.contains("operation timed out")) {
      code = ErrorCode.GIT_NETWORK_ERROR;
      what = "the remote cannot be reached";
    } else if (lower.contains("not found") || lower.contains("does not exist")
        || lower.contains("does not appear to be a git repository") || lower.contains("not a git repository")
        || lower.contains("returned error: 404")) {
      code = ErrorCode.GIT_REPOSITORY_NOT_FOUND;
      what = "repository not found";
    } else if (o.exitCode() == 127 || lower.contains("git: not found") || lower.contains("no such file or directory: git")) {
      code = ErrorCode.COMMAND_NOT_FOUND;
      what = "git is not installed in the sandbox";
    } else {
      code = ErrorCode.GIT_CLONE_FAILED;
      what = "git exited with " + o.exitCode();
    }
    Map<String, Object> context = new LinkedHashMap<>();
    context.put("repoUrl", source.redacted());
    context.put("targetDir", PathErrors.shorten(targetRaw));
    context.put("exitCode", o.exitCode());
    context.put("stderr", stderr);
    return new AgentException(code, "git clone of '" + source.redacted() + "' failed: " + what
        + (stderr.isEmpty() ? "" : ": " + stderr), context);
  }

  /** git's output without URL credentials or the literal secrets. */
  private static String scrub(String text, Source source) {
    String s = GitUrls.redact(text);
    if (source.password() != null && source.password().length() >= 3) {
      s = s.replace(source.password(), "***");
    }
    if (source.user() != null && source.user().length() >= 3) {
      s = s.replace(source.user(), "***");
    }
    return s;
  }
}
