package dev.sandboxsdk;

import static dev.sandboxsdk.Fixtures.errorResponse;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.util.List;
import okhttp3.mockwebserver.RecordedRequest;
import org.junit.jupiter.api.Test;

/** The SDK's checkpoint calls against the golden answers of docs/protocol/ (WireFixturesIT keeps them true). */
class RealCheckpointsTest extends MockAgentTest {
  private static final Checkpoint FIXTURE = new Checkpoint("ckpt_8ae10b59fb9716b5", "before-build", 10240,
      Instant.parse("2026-11-25T10:44:41.720579078Z"));

  @Test
  void checkpointPostsTheNameAndReadsTheCheckpoint() throws Exception {
    server.enqueue(Fixtures.json(201, Fixtures.read("checkpoint-create-response.json")));

    Checkpoint c = sandbox.checkpoints().create("before-build");

    assertThat(c).isEqualTo(FIXTURE);
    RecordedRequest request = server.takeRequest();
    assertThat(request.getMethod()).isEqualTo("POST");
    assertThat(request.getPath()).isEqualTo("/api/checkpoints");
    assertThat(Fixtures.MAPPER.readTree(request.getBody().readUtf8()))
        .isEqualTo(Fixtures.MAPPER.readTree("{\"name\":\"before-build\"}"));
  }

  @Test
  void listRestoreAndDeleteUseTheirRoutes() throws Exception {
    server.enqueue(Fixtures.json(Fixtures.read("checkpoint-list-response.json")));
    server.enqueue(Fixtures.json(Fixtures.read("checkpoint-restore-response.json")));
    server.enqueue(Fixtures.json(Fixtures.read("checkpoint-restore-response.json")));
    server.enqueue(Fixtures.json(Fixtures.read("checkpoint-delete-response.json")));

    assertThat(sandbox.checkpoints().list()).isEqualTo(List.of(FIXTURE));
    sandbox.checkpoints().restore(FIXTURE.id());
    sandbox.checkpoints().restore(FIXTURE.id(), true);
    sandbox.checkpoints().delete(FIXTURE.id());

    assertThat(server.takeRequest().getPath()).isEqualTo("/api/checkpoints");
    RecordedRequest restore = server.takeRequest();
    assertThat(restore.getPath()).isEqualTo("/api/checkpoints/ckpt_8ae10b59fb9716b5/restore");
    assertThat(Fixtures.MAPPER.readTree(restore.getBody().readUtf8())).isEqualTo(Fixtures.MAPPER.readTree("{\"force\":false}"));
    RecordedRequest forced = server.takeRequest();
    assertThat(Fixtures.MAPPER.readTree(forced.getBody().readUtf8())).isEqualTo(Fixtures.MAPPER.readTree("{\"force\":true}"));
    RecordedRequest delete = server.takeRequest();
    assertThat(delete.getMethod()).isEqualTo("DELETE");
    assertThat(delete.getPath()).isEqualTo("/api/checkpoints/ckpt_8ae10b59fb9716b5");
  }

  @Test
  void errorsMapToConflictAndNotFound() {
    server.enqueue(Fixtures.json(409, Fixtures.read("checkpoint-restore-error-response.json")));
    server.enqueue(Fixtures.json(404, Fixtures.read("checkpoint-error-response.json")));
    server.enqueue(errorResponse(409, "CHECKPOINT_BUSY", "another checkpoint operation is in progress", "{}"));
    server.enqueue(errorResponse(507, "NO_SPACE", "no space left", "{}"));

    assertThatThrownBy(() -> sandbox.checkpoints().restore(FIXTURE.id())).isExactlyInstanceOf(SandboxConflictException.class)
        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo("PROCESSES_RUNNING"))
        .satisfies(e -> assertThat(((SandboxException) e).context()).containsEntry("running", 1L));
    assertThatThrownBy(() -> sandbox.checkpoints().delete(FIXTURE.id())).isExactlyInstanceOf(SandboxNotFoundException.class)
        .satisfies(e -> assertThat(((SandboxException) e).code()).isEqualTo("CHECKPOINT_NOT_FOUND"));
    assertThatThrownBy(() -> sandbox.checkpoints().create("x")).isExactlyInstanceOf(SandboxConflictException.class);
    assertThatThrownBy(() -> sandbox.checkpoints().create("x")).isExactlyInstanceOf(SandboxServerException.class)
        .satisfies(e -> assertThat(((SandboxException) e).httpStatus()).isEqualTo(507));
  }

  @Test
  void badNamesAndIdsAreRefusedBeforeAnyRequest() {
    for (String name : List.of("", "a b", "../x", "a".repeat(65), "é")) {
      assertThatThrownBy(() -> sandbox.checkpoints().create(name)).as(name).isInstanceOf(IllegalArgumentException.class);
    }
    for (String id : List.of("..", ".", "a/b", "", "-x")) {
      assertThatThrownBy(() -> sandbox.checkpoints().restore(id)).as(id).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> sandbox.checkpoints().delete(id)).as(id).isInstanceOf(IllegalArgumentException.class);
    }
    assertThatThrownBy(() -> sandbox.checkpoints().create(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> sandbox.checkpoints().restore(null)).isInstanceOf(NullPointerException.class);
    assertThat(server.getRequestCount()).isZero();
  }
}
