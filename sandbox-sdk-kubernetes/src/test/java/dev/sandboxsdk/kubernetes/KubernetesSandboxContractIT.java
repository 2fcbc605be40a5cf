package dev.sandboxsdk.kubernetes;

import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.contract.SandboxContract;
import dev.sandboxsdk.contract.SandboxTarget;
import dev.sandboxsdk.contract.SandboxTarget.OwnAgent;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The SDK's whole contract suite, unchanged, against a sandbox pod with the default policy (no
 * network, read-only root, commands as uid 1000), reached through a port-forward of the API
 * server: processes and files are looked at through the sandbox itself.
 */
@ExtendWith(KubernetesCluster.class)
class KubernetesSandboxContractIT extends SandboxContract {

  @Override
  protected SandboxTarget startTarget() {
    KubernetesProvider provider = KubernetesCluster.provider().build();
    KubernetesSandbox sandbox = start(provider);
    // startOwnAgent: a second pod of its own, as these tests close or destroy their client
    return SandboxTarget.of(sandbox, sandbox.baseUrl(), "/workspace", () -> {
      KubernetesSandbox own = start(provider);
      return OwnAgent.connect(own.baseUrl(), own.token(), "/workspace", own::destroy);
    }, () -> {
      try {
        sandbox.destroy();
      } finally {
        provider.close();
      }
    });
  }

  private static KubernetesSandbox start(KubernetesProvider provider) {
    SandboxSpec.Builder b = SandboxSpec.builder().image(KubernetesCluster.IMAGE).keepAlive();
    agentArguments().forEach(b::agentArgument);
    return provider.create(b.build());
  }
}
