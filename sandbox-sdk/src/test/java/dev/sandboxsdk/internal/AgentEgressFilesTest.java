package dev.sandboxsdk.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.EgressPolicy;
import dev.sandboxsdk.EgressSecret;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The files a local agent reads its egress settings from: 0600, in the agent's format, gone on close. */
class AgentEgressFilesTest {
  @Test
  void policyAndSecretsGoInOwnerOnlyFilesThatCloseDeletes() throws Exception {
    EgressSecret key = EgressSecret.of("API_KEY", "sk-0123456789", "api.example.com").withHeader("x-api-key");
    EgressSecret gh = EgressSecret.of("GH_TOKEN", "ghp_0123456789", "api.github.com", "*.githubusercontent.com:443");
    List<Path> files;
    try (AgentEgressFiles f = AgentEgressFiles.write(EgressPolicy.allowList("api.example.com"), List.of(key, gh))) {
      files = f.files();
      assertThat(files).hasSize(2);
      assertThat(f.arguments()).containsExactly("--egress-policy", files.get(0).toString(), "--egress-secrets",
          files.get(1).toString());
      for (Path p : files) {
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(p))).isEqualTo("rw-------");
      }
      JsonNode secrets = Wire.MAPPER.readTree(files.get(1).toFile());
      assertThat(secrets.toString()).isEqualTo("[{\"name\":\"API_KEY\",\"value\":\"sk-0123456789\",\"hosts\":"
          + "[\"api.example.com\"],\"header\":\"x-api-key\"},{\"name\":\"GH_TOKEN\",\"value\":\"ghp_0123456789\","
          + "\"hosts\":[\"api.github.com\",\"*.githubusercontent.com:443\"]}]");
      assertThat(f.arguments().toString()).doesNotContain("sk-0123456789");
    }
    assertThat(files).allSatisfy(p -> assertThat(p).doesNotExist());
  }

  @Test
  void nothingIsWrittenWithoutEgress() {
    try (AgentEgressFiles f = AgentEgressFiles.write(null, List.of())) {
      assertThat(f.arguments()).isEmpty();
      assertThat(f.files()).isEmpty();
    }
  }
}
