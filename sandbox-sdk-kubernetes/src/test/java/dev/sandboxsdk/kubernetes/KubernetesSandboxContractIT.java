package dev.sandboxsdk.kubernetes;

import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.contract.SandboxContract;
import dev.sandboxsdk.contract.SandboxTarget;
import java.net.URI;
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
    return new SandboxTarget() {
      @Override
      public Sandbox sandbox() {
        return sandbox;
      }

      @Override
      public URI baseUrl() {
        return sandbox.baseUrl();
      }

      @Override
      public String workspace() {
        return "/workspace";
      }

      /** A second pod of its own: these tests close or destroy their client. */
      @Override
      public OwnAgent startOwnAgent() {
        KubernetesSandbox own = start(provider);
        return OwnAgent.connect(own.baseUrl(), own.token(), "/workspace", own::destroy);
      }

      @Override
      public void close() {
        try {
          sandbox.destroy();
        } finally {
          provider.close();
        }
      }
    };
  }

  private static KubernetesSandbox start(KubernetesProvider provider) {
    SandboxSpec.Builder b = SandboxSpec.builder().image(KubernetesCluster.IMAGE).keepAlive();
    agentArguments().forEach(b::agentArgument);
    return provider.create(b.build());
  }
}
