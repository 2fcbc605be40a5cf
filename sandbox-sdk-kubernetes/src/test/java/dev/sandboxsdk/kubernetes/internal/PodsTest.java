package dev.sandboxsdk.kubernetes.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import org.junit.jupiter.api.Test;

/** What {@code KubernetesProvider.get} makes of a pod it finds, without a cluster. */
class PodsTest {
  private static PodBuilder running(String name) {
    PodBuilder b = new PodBuilder().withNewMetadata().withName("sandbox-abc").endMetadata()
        .withNewStatus().withPhase("Running").withPodIP("10.0.0.7")
        .addNewCondition().withType("Ready").withStatus("True").endCondition().endStatus();
    if (name != null) {
      b.editMetadata().addToAnnotations(PodSpecs.NAME_ANNOTATION, name).endMetadata();
    }
    return b;
  }

  @Test
  void aRunningSandboxIsFound() {
    Pods.Found f = Pods.found(running(null).build());

    assertThat(f.running()).isTrue();
    assertThat(f.stopping()).isFalse();
    assertThat(f.gettable()).isTrue();
  }

  @Test
  void aSandboxBeingDeletedIsNotFoundWhileItsPodLingers() {
    for (String name : new String[] {null, "named"}) {
      Pod p = running(name).editMetadata().withDeletionTimestamp("2026-01-01T00:00:00Z").endMetadata().build();

      Pods.Found f = Pods.found(p);

      assertThat(f.stopping()).as(String.valueOf(name)).isTrue();
      assertThat(f.gettable()).as(String.valueOf(name)).isFalse();
    }
  }

  @Test
  void aNamedSandboxWhoseAgentEndedIsStillFoundSoItCanBeDestroyed() {
    Pod p = running("named").editStatus().withPhase("Succeeded").endStatus().build();

    Pods.Found f = Pods.found(p);

    assertThat(f.running()).isFalse();
    assertThat(f.gettable()).isTrue();
  }
}
