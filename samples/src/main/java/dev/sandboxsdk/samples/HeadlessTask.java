package dev.sandboxsdk.samples;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.GitCheckout;
import dev.sandboxsdk.GitCheckoutOptions;
import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.OutputListener;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.StdStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A headless task: clone a repository into a sandbox, let a command change it, and return what
 * changed as git sees it ({@link Result}: the diff, a {@code --stat} summary and the changed files).
 *
 * <p>The command is anything that edits files: a script, a code formatter, or a coding agent CLI
 * such as Claude Code ({@code claude -p "..." --permission-mode acceptEdits}), whose API key goes
 * in as a {@linkplain Options.Builder#secret secret}.
 *
 * <pre>{@code
 * try (LocalSandbox sandbox = LocalSandbox.builder().network(true).start()) {
 *   HeadlessTask.Result r = HeadlessTask.run(sandbox, "https://github.com/you/repo.git",
 *       Command.of("claude", "-p", "Add a test for the parser", "--permission-mode", "acceptEdits"),
 *       HeadlessTask.Options.builder().secret("ANTHROPIC_API_KEY", key).build());
 *   System.out.println(r.summary());                 // 2 files changed, 40 insertions(+)
 * }
 * }</pre>
 *
 * <p>Run with no arguments for a demonstration on a repository it creates in the sandbox; with
 * {@code REPO_URL COMMAND...} for a real one (then the sandbox has network, and
 * {@code ANTHROPIC_API_KEY} from this JVM's environment, if set, is passed to the command as a
 * secret).
 */
public final class HeadlessTask {
  private HeadlessTask() {}

  /**
   * Clones {@code repoUrl}, runs {@code task} in the clone and collects the changes.
   *
   * <p><b>A task that fails</b> (non-zero exit, or killed at the timeout) is not an exception:
   * the result carries its exit code and output tail <i>and</i> the diff of whatever it changed
   * before it stopped, so the caller can inspect or discard a partial change. Check
   * {@link Result#isSuccess()}.
   *
   * <p><b>Secrets</b> are set as environment variables of the task command only (its
   * {@link ExecOptions} env): not of the sandbox, not of other commands, not on a command line,
   * so they are not in {@code ps} output of other users, in a shell history or in the agent's
   * log; the task and its child processes see them, as they must.
   *
   * <p><b>What counts as a change</b>: everything {@code git add -A} picks up (new, modified,
   * deleted files; not files matched by {@code .gitignore}), compared with the commit that was
   * checked out, so commits the task made itself are included too. The index of the clone is
   * left staged.
   *
   * @throws dev.sandboxsdk.SandboxNotFoundException if the repository or branch does not exist
   *     ({@code GIT_REPOSITORY_NOT_FOUND}, {@code GIT_BRANCH_NOT_FOUND}), from
   *     {@link dev.sandboxsdk.SandboxGit#checkout}; other checkout errors as documented there
   * @throws dev.sandboxsdk.CommandFailedException if git fails on the clone after the task (e.g.
   *     the task deleted {@code .git})
   * @throws dev.sandboxsdk.SandboxException if the sandbox cannot run the commands
   */
  public static Result run(Sandbox sandbox, String repoUrl, Command task, Options options) {
    Objects.requireNonNull(sandbox, "sandbox == null");
    Objects.requireNonNull(repoUrl, "repoUrl == null");
    Objects.requireNonNull(task, "task == null");
    Objects.requireNonNull(options, "options == null");

    GitCheckout checkout = sandbox.git().checkout(repoUrl, options.checkout());
    String dir = checkout.targetDir();
    Duration t = options.timeout();
    // The base of the diff: a task that commits (coding agents sometimes do) still shows its work.
    String base = git(sandbox, dir, t, 0, "rev-parse", "--verify", "HEAD^{commit}").stdout().strip();

    Tail tail = new Tail(options.outputTailChars(), options.onOutput());
    ExecResult ran = sandbox.exec(task, ExecOptions.builder()
        .cwd(dir)
        .env(options.secrets())                    // this command only
        .timeout(t)
        .onOutput(tail)                            // keeps the last characters, passes output on
        .maxOutputBytes(1)                         // the result's own copy is not used: keep it tiny
        .build());

    // Stage everything so that new files are in the diff too; git add writes blobs to the clone's
    // object store, not to memory, so a huge file costs sandbox disk, not this JVM's heap.
    git(sandbox, dir, t, 0, "add", "-A");
    int max = options.maxDiffBytes();
    ExecResult diff = git(sandbox, dir, t, max, "diff", "--cached", "--binary", "-M", base);
    ExecResult status = git(sandbox, dir, t, max, "diff", "--cached", "-z", "--name-status", "-M", base);
    ExecResult numstat = git(sandbox, dir, t, max, "diff", "--cached", "-z", "--numstat", "-M", base);
    String summary = git(sandbox, dir, t, 0, "diff", "--cached", "--shortstat", "-M", base).stdout().strip();

    boolean truncated = diff.truncated() || status.truncated() || numstat.truncated();
    long diffBytes = diff.stdout().getBytes(StandardCharsets.UTF_8).length;
    if (diff.truncated()) {
      // Count the whole diff without transferring it: the sandbox counts, we read one number.
      // Every argument is a fixed option or a commit id, so the argv joins into a shell line as it is.
      diffBytes = Long.parseLong(sandbox.exec(Command.shell(String.join(" ", gitArgv("diff", "--cached", "--binary",
          "-M", base)) + " | wc -c"), ExecOptions.builder().cwd(dir).timeout(t).build()).requireSuccess().stdout()
          .strip());
    }
    return new Result(checkout, ran.exitCode(), ran.timedOut(), tail.text(), diff.stdout(), diffBytes, truncated,
        summary.isEmpty() ? "no changes" : summary,
        files(status.stdout(), status.truncated(), numstat.stdout()));
  }

  /** Like {@link #run(Sandbox, String, Command, Options)} with {@link Options#defaults()}. */
  public static Result run(Sandbox sandbox, String repoUrl, Command task) {
    return run(sandbox, repoUrl, task, Options.defaults());
  }

  // ---- the values

  /** How a file changed, from git's {@code --name-status} letter. */
  public enum Status {
    ADDED, MODIFIED, DELETED, RENAMED, COPIED, TYPE_CHANGED;

    static Status of(String letter) {
      switch (letter.charAt(0)) {
        case 'A': return ADDED;
        case 'M': return MODIFIED;
        case 'D': return DELETED;
        case 'R': return RENAMED;
        case 'C': return COPIED;
        case 'T': return TYPE_CHANGED;
        default: throw new IllegalStateException("unexpected git --name-status letter '" + letter + "'");
      }
    }
  }

  /**
   * One changed file.
   *
   * @param path its path in the repository (the new path of a rename)
   * @param oldPath the path before a rename or copy; null otherwise
   * @param status how it changed
   * @param insertions lines added (0 for a binary file)
   * @param deletions lines removed (0 for a binary file)
   * @param binary whether git treats it as binary (then the diff carries it as a {@code GIT binary patch})
   */
  public record FileChange(String path, String oldPath, Status status, int insertions, int deletions,
      boolean binary) {}

  /**
   * What a task did.
   *
   * @param checkout the clone the task ran in
   * @param exitCode the task's exit code (124 if it was killed at the timeout)
   * @param timedOut whether the task was killed at the timeout
   * @param outputTail the last {@link Options#outputTailChars()} characters of its stdout and
   *     stderr, interleaved as they arrived
   * @param diff {@code git diff --binary} of all changes against the checked-out commit, at most
   *     {@link Options#maxDiffBytes()} bytes of it; {@code git apply} applies it when not truncated
   * @param diffBytes the size of the whole diff in bytes, also when {@code diff} was cut
   * @param truncated whether {@code diff} or {@code filesChanged} was cut at {@link Options#maxDiffBytes()}
   * @param summary the last line of {@code git diff --stat}, e.g. {@code 3 files changed, 5
   *     insertions(+), 2 deletions(-)}; {@code no changes} if there are none
   * @param filesChanged the changed files in git's order (by path)
   */
  public record Result(GitCheckout checkout, int exitCode, boolean timedOut, String outputTail, String diff,
      long diffBytes, boolean truncated, String summary, List<FileChange> filesChanged) {

    /** Copies the list. */
    public Result {
      filesChanged = List.copyOf(filesChanged);
    }

    /** Whether the task exited with 0. */
    public boolean isSuccess() {
      return exitCode == 0;
    }

    /** The output and the diff are not printed, only their sizes. */
    @Override
    public String toString() {
      return "HeadlessTask.Result{exitCode=" + exitCode + (timedOut ? ", timedOut" : "") + ", " + summary
          + ", diff=" + diffBytes + " bytes" + (truncated ? " (truncated)" : "") + ", files=" + filesChanged.size()
          + "}";
    }
  }

  /**
   * Options of {@link #run}. Immutable; build with {@link #builder()}.
   *
   * @param checkout how to clone (branch, depth, target directory, credentials)
   * @param timeout the task is killed after this long
   * @param secrets environment variables of the task command only; never printed
   * @param maxDiffBytes at most this many bytes of the diff (and of the file list) are returned
   * @param outputTailChars how many of the last characters of the task's output are kept
   * @param onOutput receives the task's output as it arrives; null for none
   */
  public record Options(GitCheckoutOptions checkout, Duration timeout, Map<String, String> secrets,
      int maxDiffBytes, int outputTailChars, OutputListener onOutput) {

    private static final Options DEFAULTS = builder().build();

    /** Validates and copies. */
    public Options {
      Objects.requireNonNull(checkout, "checkout == null");
      Objects.requireNonNull(timeout, "timeout == null");
      secrets = Map.copyOf(secrets);
      if (maxDiffBytes <= 0 || outputTailChars <= 0) {
        throw new IllegalArgumentException("maxDiffBytes and outputTailChars must be positive");
      }
    }

    /**
     * Clone with {@link GitCheckoutOptions#defaults()}, 30 minutes, no secrets, 8 MiB of diff,
     * 8000 characters of output.
     */
    public static Options defaults() {
      return DEFAULTS;
    }

    /** A builder with the defaults. */
    public static Builder builder() {
      return new Builder();
    }

    /** Secret values are never printed. */
    @Override
    public String toString() {
      return "HeadlessTask.Options{checkout=" + checkout + ", timeout=" + timeout + ", secrets=" + secrets.keySet()
          + ", maxDiffBytes=" + maxDiffBytes + ", outputTailChars=" + outputTailChars + "}";
    }

    /** Builds {@link Options}. Not thread-safe. */
    public static final class Builder {
      private GitCheckoutOptions checkout = GitCheckoutOptions.defaults();
      private Duration timeout = Duration.ofMinutes(30);
      private final Map<String, String> secrets = new LinkedHashMap<>();
      private int maxDiffBytes = 8 << 20;
      private int outputTailChars = 8000;
      private OutputListener onOutput;

      private Builder() {}

      /** How to clone. */
      public Builder checkout(GitCheckoutOptions checkout) {
        this.checkout = checkout;
        return this;
      }

      /** Kill the task after this long (default 30 minutes). */
      public Builder timeout(Duration timeout) {
        this.timeout = timeout;
        return this;
      }

      /** An environment variable for the task command only, e.g. an API key. */
      public Builder secret(String name, String value) {
        secrets.put(Objects.requireNonNull(name, "name == null"), Objects.requireNonNull(value, "value == null"));
        return this;
      }

      /** At most this many bytes of diff (default 8 MiB). */
      public Builder maxDiffBytes(int maxDiffBytes) {
        this.maxDiffBytes = maxDiffBytes;
        return this;
      }

      /** Keep this many characters of the end of the task's output (default 8000). */
      public Builder outputTailChars(int outputTailChars) {
        this.outputTailChars = outputTailChars;
        return this;
      }

      /** Receives the task's output as it arrives, e.g. to show progress. */
      public Builder onOutput(OutputListener onOutput) {
        this.onOutput = onOutput;
        return this;
      }

      /** The options. */
      public Options build() {
        return new Options(checkout, timeout, secrets, maxDiffBytes, outputTailChars, onOutput);
      }
    }
  }

  // ---- git

  /**
   * Runs git in the clone, after the task, in the same sandbox, without the secrets, and killed
   * after the task's timeout. git is told to start no external diff, text conversion or fsmonitor
   * program; a task that rewrote the clone's configuration (a clean filter, say) can still make
   * {@code git add} run a program, but no more than the task could run itself, and without the secrets.
   */
  private static ExecResult git(Sandbox sandbox, String dir, Duration timeout, int maxOutputBytes, String... args) {
    return sandbox.exec(Command.of(gitArgv(args)), ExecOptions.builder().cwd(dir).timeout(timeout)
        .maxOutputBytes(maxOutputBytes).build()).requireSuccess();
  }

  /** git with {@code args} and the options above (the diff's size is counted with the same ones). */
  private static List<String> gitArgv(String... args) {
    List<String> argv = new ArrayList<>(List.of("git", "-c", "core.fsmonitor=false", "-c", "core.quotePath=false",
        args[0]));
    if (args[0].equals("diff")) {
      argv.addAll(List.of("--no-color", "--no-textconv", "--no-ext-diff"));
    }
    argv.addAll(Arrays.asList(args).subList(1, args.length));
    return argv;
  }

  /** Joins {@code --name-status -z} and {@code --numstat -z} output into one entry per file. */
  static List<FileChange> files(String nameStatus, boolean nameStatusTruncated, String numstat) {
    Map<String, int[]> counts = new HashMap<>(); // path -> {insertions, deletions, binary}
    String[] n = numstat.split("\0", -1);
    int i = 0;
    while (i < n.length && !n[i].isEmpty()) {
      String[] cols = n[i].split("\t", 3);
      if (cols.length < 3) {
        break; // a record cut by the size limit
      }
      String path = cols[2];
      i++;
      if (path.isEmpty()) { // a rename or copy: the old and the new path follow as fields of their own
        if (i + 1 >= n.length) {
          break;
        }
        path = n[i + 1];
        i += 2;
      }
      boolean binary = cols[0].equals("-");
      counts.put(path, new int[] {binary ? 0 : Integer.parseInt(cols[0]), binary ? 0 : Integer.parseInt(cols[1]),
          binary ? 1 : 0});
    }
    List<FileChange> out = new ArrayList<>();
    String[] s = nameStatus.split("\0", -1);
    i = 0;
    while (i + 1 < s.length) {
      Status status = Status.of(s[i]);
      boolean twoPaths = status == Status.RENAMED || status == Status.COPIED;
      if (twoPaths && i + 2 >= s.length) {
        break;
      }
      String oldPath = twoPaths ? s[i + 1] : null;
      String path = twoPaths ? s[i + 2] : s[i + 1];
      i += twoPaths ? 3 : 2;
      if (nameStatusTruncated && i >= s.length) {
        break; // the last field was cut: the path may be incomplete
      }
      int[] c = counts.getOrDefault(path, new int[3]);
      out.add(new FileChange(path, oldPath, status, c[0], c[1], c[2] == 1));
    }
    return out;
  }

  /** Keeps the last characters of the output (bounded memory) and passes every chunk on. */
  private static final class Tail implements OutputListener {
    private final int max;
    private final OutputListener next;
    private final StringBuilder text = new StringBuilder();

    Tail(int max, OutputListener next) {
      this.max = max;
      this.next = next;
    }

    @Override
    public synchronized void onOutput(StdStream stream, String chunk) {
      text.append(chunk.length() > max ? chunk.substring(chunk.length() - max) : chunk);
      if (text.length() > max) {
        text.delete(0, text.length() - max);
      }
      if (next != null) {
        next.onOutput(stream, chunk);
      }
    }

    synchronized String text() {
      return text.toString();
    }
  }

  // ---- the sample

  /**
   * With no arguments: a demonstration on a repository made in the sandbox. With
   * {@code REPO_URL COMMAND...}: runs the command line on a clone of that repository, e.g.
   * <pre>
   * export ANTHROPIC_API_KEY=...
   * java -cp samples/target/samples.jar dev.sandboxsdk.samples.HeadlessTask \
   *     https://github.com/you/repo.git claude -p 'Fix the typo in README.md' --permission-mode acceptEdits
   * </pre>
   */
  public static void main(String[] args) throws Exception {
    if (args.length == 1) {
      System.err.println("usage: HeadlessTask [REPO_URL COMMAND [ARG...]]  (no arguments: a demonstration)");
      return;
    }
    if (args.length == 0) {
      demo();
      return;
    }
    Options.Builder options = Options.builder().onOutput((stream, text) -> System.out.print(text));
    String key = System.getenv("ANTHROPIC_API_KEY");
    if (key != null && !key.isEmpty()) {
      options.secret("ANTHROPIC_API_KEY", key); // to the task only; the sandbox does not inherit this JVM's env
    }
    // A real remote and an agent that calls its API both need the network.
    try (LocalSandbox sandbox = LocalSandbox.builder().network(true).start()) {
      Result r = run(sandbox, args[0], Command.of(Arrays.asList(args).subList(1, args.length)), options.build());
      print(r);
    }
  }

  private static void demo() {
    try (LocalSandbox sandbox = LocalSandbox.start()) {
      // The "remote": a repository with two commits' worth of files, made in the sandbox itself.
      sandbox.exec("git init -q -b main origin && cd origin"
          + " && printf 'line one\\nline two\\n' > README.md && printf 'obsolete\\n' > old.txt"
          + " && git add -A && git -c user.name=demo -c user.email=demo@example.com commit -qm init").requireSuccess();

      Result r = run(sandbox, "origin", Command.shell(
          "sed -i 's/line two/line 2/' README.md && printf 'fresh notes\\n' > NOTES.md && rm old.txt"
              + " && echo 'task: edited README.md, added NOTES.md, removed old.txt'"),
          Options.builder().checkout(GitCheckoutOptions.builder().targetDir("work").build()).build());
      print(r);
    }
  }

  private static void print(Result r) {
    System.out.printf("%ntask exit code %d%s; output tail: %s%n", r.exitCode(), r.timedOut() ? " (timed out)" : "",
        r.outputTail().strip());
    System.out.println("summary: " + r.summary());
    for (FileChange f : r.filesChanged()) {
      System.out.printf("  %-8s %s%s (+%d -%d)%n", f.status(), f.oldPath() != null ? f.oldPath() + " -> " : "",
          f.path(), f.insertions(), f.deletions());
    }
    System.out.printf("diff (%d bytes%s):%n%s", r.diffBytes(), r.truncated() ? ", truncated" : "", r.diff());
  }
}
