package dev.sandboxsdk.container;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.Session;
import dev.sandboxsdk.SessionOptions;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code sandbox.sessions()} on a real container: the image's agent has no CAP_CHOWN, commands run
 * as {@code sandbox} with a read-only root and a tmpfs {@code /tmp}, and sessions work through the
 * same SDK code as on the local provider.
 */
@ExtendWith(ContainerEngine.class)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ContainerSessionsIT {

  @Test
  void stateCarriesOverForTheSandboxUserAndATimeoutKeepsTheStateBefore() {
    try (ContainerSandbox s = ContainerSandbox.builder().image(ContainerEngine.IMAGE).start();
        Session shell = s.sessions().create(SessionOptions.defaults().withCwd("/tmp").withEnv("MODE", "dev"))) {
      shell.exec("mkdir -p work && cd work && export COUNT=1 && f() { echo \"f $COUNT\"; }").requireSuccess();

      ExecResult r = shell.exec("id -un; pwd; echo $MODE; f");
      assertThat(r.stderr()).isEmpty();
      assertThat(r.stdout()).isEqualTo("sandbox\n/tmp/work\ndev\nf 1\n");
      ExecResult timedOut = shell.exec(dev.sandboxsdk.Command.shell("export COUNT=2; sleep 30"),
          ExecOptions.builder().timeout(Duration.ofMillis(500)).build());
      assertThat(timedOut.timedOut()).isTrue();
      assertThat(shell.exec("f").stdout()).isEqualTo("f 1\n");
      assertThat(s.exec("echo ${COUNT-none}").stdout()).isEqualTo("none\n");
      assertThat(s.files().list(".")).isEmpty(); // the state is not in the workspace
    }
  }
}
