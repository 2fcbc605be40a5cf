package dev.sandboxsdk.container;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.FileEntry;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxProcess;
import dev.sandboxsdk.testkit.Await;
import dev.sandboxsdk.testkit.PathSwapper;
import dev.sandboxsdk.testkit.Race;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The race harness against a container sandbox, through the SDK's files facet: a command swaps
 * workspace directories with links to a directory outside the workspace and to {@code
 * /proc/self} ({@code renameat2(RENAME_EXCHANGE)} from perl, which the image has) while two
 * clients read, write, list, delete and move through them. The agent's own {@code /proc/self}
 * holds the token: it must never come back, and nothing outside the workspace may change.
 */
@ExtendWith(ContainerEngine.class)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ContainerPathRaceIT {
  private static final long RACE_MS = 8_000;
  private static final int VICTIMS = 200;
  private static final String SWAPPER = PathSwapper.perl("/workspace", "d", "l", "d2", "p");

  @Test
  void noFileCallLeavesTheWorkspaceWhileACommandSwapsLinksIn() throws Exception {
    ContainerSandbox sandbox = ContainerSandbox.builder().image(ContainerEngine.IMAGE).start();
    try {
      String token = ContainerEngine.tokenOf(sandbox.id());
      String setup = "set -e; mkdir -p /tmp/outside /workspace/d /workspace/d2; cd /workspace;"
          + " printf 'OUTSIDE\\n' > /tmp/outside/f; printf x > /tmp/outside/outside-only; printf inside > d/f; printf decoy > d2/environ;"
          + " for i in $(seq 0 " + (VICTIMS - 1) + "); do printf outside > /tmp/outside/victim-$i;"
          + " printf inside > d/victim-$i; done; ln -s /tmp/outside l; ln -s /proc/self p";
      assertThat(sandbox.exec(setup).exitCode()).isZero();
      String before = sandbox.exec("cd /tmp/outside && ls | sort | md5sum && cat * | md5sum").stdout();
      SandboxProcess swapper = sandbox.startProcess(SWAPPER);
      assertThat(Await.until(10_000, () -> sandbox.files().exists(PathSwapper.READY)))
          .as("the swapper created %s", PathSwapper.READY).isTrue();

      List<String> escapes = race(sandbox, token);
      assertThat(swapper.status().isTerminal()).as("the swapper ran throughout: %s", swapper.logs()).isFalse();
      swapper.kill();

      assertThat(escapes).as("calls that left the workspace").isEmpty();
      String after = sandbox.exec("cd /tmp/outside && ls | sort | md5sum && cat * | md5sum").stdout();
      assertThat(after).as("the files outside the workspace").isEqualTo(before);
    } finally {
      sandbox.destroy();
    }
  }

  private static List<String> race(ContainerSandbox sandbox, String token) throws InterruptedException {
    Race.Result r = Race.run(2, RACE_MS, i -> {
      String bad;
      try {
        bad = oneCall(sandbox, i);
      } catch (SandboxException e) {
        bad = e.httpStatus() >= 500 || String.valueOf(e.getMessage()).contains(token)
            || String.valueOf(e.getMessage()).contains("/tmp/outside") ? "failed: " + e : null;
      }
      return bad == null ? null : bad.replace(token, "<token>");
    });
    System.out.printf("container path race: %d calls in %d ms, %d left the workspace %s%n", r.attempts(), RACE_MS,
        r.escapes().size(), r.kinds(":"));
    return r.escapes();
  }

  private static String oneCall(ContainerSandbox sandbox, int i) {
    int victim = i % VICTIMS;
    switch (i % 8) {
      case 0: {
        String s = sandbox.files().readString("d/f");
        return s.equals("inside") ? null : "read d/f: " + s;
      }
      case 1: {
        String s = sandbox.files().readString("d2/environ");
        return s.equals("decoy") ? null : "read d2/environ: " + s;
      }
      case 2: {
        for (FileEntry e : sandbox.files().list("d2")) {
          if (!e.name().equals("environ")) {
            return "list d2: " + e.name();
          }
        }
        return null;
      }
      case 3:
        sandbox.files().writeString("d/w-" + i, "x");
        return null;
      case 4:
        sandbox.files().mkdir("d/m-" + i);
        return null;
      case 5:
        sandbox.files().delete("d/victim-" + victim);
        return null;
      case 6:
        sandbox.files().rename("d/victim-" + victim, "moved-" + i);
        return null;
      default:
        if (i % 16 == 7) {
          return sandbox.files().exists("d/outside-only") ? "exists d/outside-only answered true" : null;
        }
        for (FileEntry e : sandbox.files().list("d")) {
          if (e.name().equals("outside-only")) {
            return "list d: showed the outside directory";
          }
        }
        return null;
    }
  }
}
