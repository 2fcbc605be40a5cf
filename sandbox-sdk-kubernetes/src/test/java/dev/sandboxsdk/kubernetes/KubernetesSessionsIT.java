package dev.sandboxsdk.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sandboxsdk.Command;
import dev.sandboxsdk.ExecOptions;
import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.Session;
import dev.sandboxsdk.SessionOptions;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code sandbox.sessions()} on a real pod (the image's agent, commands as {@code sandbox}),
 * through the same SDK code as the local and container providers. Runs where {@link
 * KubernetesCluster} finds a cluster.
 */
@ExtendWith(KubernetesCluster.class)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class KubernetesSessionsIT {
  private static KubernetesProvider provider;

  @BeforeAll
  static void start() {
    provider = KubernetesCluster.provider().build();
  }

  @AfterAll
  static void stop() {
    if (provider != null) {
      provider.close();
    }
  }

  @Test
  void stateCarriesOverAndATimeoutKeepsTheStateBefore() {
    try (KubernetesSandbox s = provider.create(SandboxSpec.builder().image(KubernetesCluster.IMAGE).build());
        Session shell = s.sessions().create(SessionOptions.defaults().withCwd("/tmp").withEnv("MODE", "pod"))) {
      shell.exec("mkdir -p work && cd work && export COUNT=1 && f() { echo \"f $COUNT\"; }").requireSuccess();

      ExecResult r = shell.exec("id -un; pwd; echo $MODE; f");
      assertThat(r.stderr()).isEmpty();
      assertThat(r.stdout()).isEqualTo("sandbox\n/tmp/work\npod\nf 1\n");
      ExecResult timedOut = shell.exec(Command.shell("export COUNT=2; sleep 30"),
          ExecOptions.builder().timeout(Duration.ofMillis(500)).build());
      assertThat(timedOut.timedOut()).isTrue();
      assertThat(shell.exec("f").stdout()).isEqualTo("f 1\n");
      assertThat(s.exec("echo ${COUNT-none}").stdout()).isEqualTo("none\n");
    }
  }
}
