package dev.sandboxsdk.samples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.GitCheckoutOptions;
import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.SandboxNotFoundException;
import dev.sandboxsdk.samples.HeadlessTask.FileChange;
import dev.sandboxsdk.samples.HeadlessTask.Options;
import dev.sandboxsdk.samples.HeadlessTask.Result;
import dev.sandboxsdk.samples.HeadlessTask.Status;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link HeadlessTask} on a real local sandbox (isolated where bubblewrap works) and a real git
 * repository: a bare repository made on the host with the host's git, placed inside the sandbox's
 * workspace (an isolated sandbox sees no other host directory) and cloned by its {@code file://} URL.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class HeadlessTaskIT {
  private static final String README = "# Demo\n\nline one\nline two\n";
  private static final String APP = "def main():\n    print('hello from app')\n\n\nif __name__ == '__main__':\n"
      + "    main()\n";

  @TempDir
  static Path tmp;

  private static LocalSandbox sandbox;
  private static String originUrl;
  private static int clones;

  @BeforeAll
  static void makeTheRemoteAndTheSandbox() throws Exception {
    Path workspace = Files.createDirectories(tmp.resolve("workspace"));
    Path bare = workspace.resolve("remotes/origin.git");
    Files.createDirectories(bare);
    host(bare, "git", "init", "-q", "--bare", "-b", "main");
    Path seed = Files.createDirectories(tmp.resolve("seed"));
    host(seed, "git", "init", "-q", "-b", "main");
    Files.writeString(seed.resolve("README.md"), README);
    Files.createDirectories(seed.resolve("src"));
    Files.writeString(seed.resolve("src/app.py"), APP);
    Files.writeString(seed.resolve("old.txt"), "obsolete configuration\nkey = value\n");
    host(seed, "git", "add", "-A");
    host(seed, "git", "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-qm", "initial");
    host(seed, "git", "push", "-q", bare.toString(), "main");
    originUrl = "file://" + bare;

    sandbox = LocalSandbox.builder().workspace(workspace).start();
    System.out.println("HeadlessTaskIT runs on isolation " + sandbox.isolation()); // for the report
  }

  @AfterAll
  static void close() {
    if (sandbox != null) {
      sandbox.close();
    }
  }

  @Test
  void aTaskThatEditsAddsAndDeletesFilesYieldsTheirDiff() throws Exception {
    Result r = HeadlessTask.run(sandbox, originUrl, Command.shell(
        "sed -i 's/line two/line 2/' README.md && printf 'print(\"new\")\\n' > src/new.py && rm old.txt"
            + " && echo done"), options().build());

    assertThat(r.isSuccess()).isTrue();
    assertThat(r.exitCode()).isZero();
    assertThat(r.outputTail()).isEqualTo("done\n");
    assertThat(r.filesChanged())
        .extracting(FileChange::path, FileChange::status, FileChange::insertions, FileChange::deletions)
        .containsExactly(
            tuple("README.md", Status.MODIFIED, 1, 1),
            tuple("old.txt", Status.DELETED, 0, 2),
            tuple("src/new.py", Status.ADDED, 1, 0));
    assertThat(r.summary()).isEqualTo("3 files changed, 2 insertions(+), 3 deletions(-)");
    assertThat(r.truncated()).isFalse();
    assertThat(r.diff())
        .contains("--- a/README.md\n+++ b/README.md\n", "-line two\n+line 2\n")
        .contains("diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n", "-obsolete configuration\n")
        .contains("diff --git a/src/new.py b/src/new.py\nnew file mode 100644\n", "+print(\"new\")\n");
    assertThat(r.diffBytes()).isEqualTo(r.diff().getBytes(StandardCharsets.UTF_8).length);
    assertThat(r.checkout().branch()).isEqualTo("main");

    // The diff is a real patch: applied to a fresh clone on the host it reproduces the task's work.
    Path copy = applyToFreshClone(r.diff());
    assertThat(Files.readString(copy.resolve("README.md"))).isEqualTo("# Demo\n\nline one\nline 2\n");
    assertThat(Files.readString(copy.resolve("src/new.py"))).isEqualTo("print(\"new\")\n");
    assertThat(copy.resolve("old.txt")).doesNotExist();
  }

  @Test
  void aTaskThatFailsStillReturnsWhatItChangedWithItsExitCodeAndOutput() {
    Result r = HeadlessTask.run(sandbox, originUrl, Command.shell(
        "echo partial >> README.md; echo 'step 1 ok'; echo 'giving up: tests fail' >&2; exit 3"), options().build());

    assertThat(r.isSuccess()).isFalse();
    assertThat(r.exitCode()).isEqualTo(3);
    assertThat(r.timedOut()).isFalse();
    assertThat(r.outputTail()).contains("step 1 ok\n", "giving up: tests fail\n");
    assertThat(r.filesChanged()).extracting(FileChange::path, FileChange::status)
        .containsExactly(tuple("README.md", Status.MODIFIED));
    assertThat(r.diff()).contains("+partial\n");
    assertThat(r.summary()).isEqualTo("1 file changed, 1 insertion(+)");
  }

  @Test
  void changesTheTaskCommittedItselfAreInTheDiffToo() {
    Result r = HeadlessTask.run(sandbox, originUrl, Command.shell(
        "echo committed >> README.md && git -c user.name=agent -c user.email=agent@example.com commit -qam wip"
            + " && echo uncommitted > extra.txt"), options().build());

    assertThat(r.isSuccess()).as(r.outputTail()).isTrue();
    assertThat(r.filesChanged()).extracting(FileChange::path, FileChange::status)
        .containsExactly(tuple("README.md", Status.MODIFIED), tuple("extra.txt", Status.ADDED));
    assertThat(r.diff()).contains("+committed\n", "+uncommitted\n");
  }

  @Test
  void aTaskKilledAtTheTimeoutStillReturnsWhatItChanged() {
    Result r = HeadlessTask.run(sandbox, originUrl, Command.shell("echo early >> README.md; echo working; sleep 60"),
        options().timeout(Duration.ofSeconds(2)).build());

    assertThat(r.timedOut()).isTrue();
    assertThat(r.exitCode()).isEqualTo(124);
    assertThat(r.outputTail()).isEqualTo("working\n");
    assertThat(r.diff()).contains("+early\n");
  }

  @Test
  void aRepositoryThatDoesNotExistIsTheSdksNotFoundError() {
    assertThatThrownBy(() -> HeadlessTask.run(sandbox, "file://" + sandbox.workspace().resolve("remotes/no-such.git"),
        Command.shell("touch ran-anyway"), options().build()))
        .isInstanceOfSatisfying(SandboxNotFoundException.class,
            e -> assertThat(e.code()).isEqualTo("GIT_REPOSITORY_NOT_FOUND"));
  }

  @Test
  void aSecretReachesTheTaskOnly() {
    String secret = "s3cret-Value-0123456789";
    Options options = options().secret("TASK_TOKEN", secret).build();

    Result r = HeadlessTask.run(sandbox, originUrl,
        Command.shell("printf '%s\\n' \"${#TASK_TOKEN}\" > token-length.txt"), options);

    assertThat(r.filesChanged()).extracting(FileChange::path).containsExactly("token-length.txt");
    assertThat(r.diff()).contains("+" + secret.length() + "\n").doesNotContain(secret);
    String env = sandbox.exec("env").stdout();
    assertThat(env).contains("PATH=").doesNotContain("TASK_TOKEN").doesNotContain(secret);
    assertThat(options.toString()).contains("TASK_TOKEN").doesNotContain(secret);
  }

  @Test
  void renamesAndBinaryFilesAreReportedAndTheBinaryDiffApplies() throws Exception {
    Result r = HeadlessTask.run(sandbox, originUrl, Command.shell(
        "mv src/app.py src/main.py && printf '\\000\\001\\002\\377binary\\000' > logo.bin"), options().build());

    assertThat(r.filesChanged())
        .extracting(FileChange::path, FileChange::oldPath, FileChange::status, FileChange::binary)
        .containsExactly(
            tuple("logo.bin", null, Status.ADDED, true),
            tuple("src/main.py", "src/app.py", Status.RENAMED, false));
    assertThat(r.diff()).contains("rename from src/app.py\nrename to src/main.py\n", "GIT binary patch");

    Path copy = applyToFreshClone(r.diff());
    assertThat(Files.readAllBytes(copy.resolve("logo.bin")))
        .containsExactly(0, 1, 2, 0xff, 'b', 'i', 'n', 'a', 'r', 'y', 0);
    assertThat(Files.readString(copy.resolve("src/main.py"))).isEqualTo(APP);
  }

  @Test
  void aDiffOverTheLimitIsCutAndFlaggedWithItsFullSize() {
    Result r = HeadlessTask.run(sandbox, originUrl, Command.shell("seq 1 100000 > big.txt"),
        options().maxDiffBytes(10_000).build());

    assertThat(r.truncated()).isTrue();
    assertThat(r.diff().getBytes(StandardCharsets.UTF_8).length).isLessThanOrEqualTo(10_000);
    assertThat(r.diff()).startsWith("diff --git a/big.txt b/big.txt\n");
    // seq 1 100000 writes 588895 bytes; each line gains a '+' in the diff.
    assertThat(r.diffBytes()).isGreaterThan(588_895 + 100_000);
    assertThat(r.filesChanged()).extracting(FileChange::path, FileChange::insertions)
        .containsExactly(tuple("big.txt", 100_000));
  }

  @Test
  void theFullSizeOfACutDiffIsTheSizeOfTheDiffItCut() {
    // A name outside ASCII: git quotes it unless told not to, which changes the diff's size.
    Command task = Command.shell("seq 1 20000 > 'gr\u00f6\u00dfe.txt'");
    Result whole = HeadlessTask.run(sandbox, originUrl, task, options().build());
    Result cut = HeadlessTask.run(sandbox, originUrl, task, options().maxDiffBytes(10_000).build());

    assertThat(whole.truncated()).isFalse();
    assertThat(whole.diff()).startsWith("diff --git a/gr\u00f6\u00dfe.txt b/gr\u00f6\u00dfe.txt\n");
    assertThat(cut.truncated()).isTrue();
    assertThat(cut.diffBytes()).isEqualTo(whole.diff().getBytes(StandardCharsets.UTF_8).length);
  }

  // ---- helpers

  /** Each test clones into a directory of its own. */
  private static synchronized Options.Builder options() {
    return Options.builder().checkout(GitCheckoutOptions.builder().targetDir("clone-" + ++clones).build());
  }

  /** Clones the remote on the host and applies the patch with {@code git apply --index}. */
  private static Path applyToFreshClone(String diff) throws Exception {
    Path copy = Files.createTempDirectory(tmp, "apply");
    host(copy, "git", "clone", "-q", originUrl, ".");
    Path patch = tmp.resolve(copy.getFileName() + ".patch");
    Files.writeString(patch, diff, StandardCharsets.UTF_8);
    host(copy, "git", "apply", "--index", patch.toString());
    return copy;
  }

  /** Runs a command on the host and fails with its output if it fails. */
  private static void host(Path dir, String... command) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(List.of(command)).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("%s finished", List.of(command)).isTrue();
    assertThat(p.exitValue()).as("%s in %s: %s", List.of(command), dir, out).isZero();
  }
}
