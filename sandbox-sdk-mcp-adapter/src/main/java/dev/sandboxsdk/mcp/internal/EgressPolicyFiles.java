package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sandboxsdk.EgressPolicy;
import dev.sandboxsdk.mcp.internal.AdapterConfig.UsageException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The file of {@code --egress-policy}: the agent's own format, {@code {"mode":"allow-list",
 * "rules":["allow *.pypi.org", ...]}}, so one file serves the server and an agent alike. Read once
 * at start; what the record checks (the shape of each rule, their number) is a usage error here,
 * and the agent checks the destinations when each sandbox starts.
 */
final class EgressPolicyFiles {
  /** The agent's bound on a policy body. */
  private static final long MAX_BYTES = 256 * 1024;

  private EgressPolicyFiles() {
  }

  static EgressPolicy read(String file) {
    String option = "--egress-policy " + file;
    Path path = AdapterOptions.pathValue("--egress-policy", file);
    JsonNode n;
    try {
      if (!Files.isRegularFile(path) || Files.size(path) > MAX_BYTES) {
        throw new UsageException(option + ": no such file, or larger than " + MAX_BYTES + " bytes");
      }
      n = Json.MAPPER.readTree(path.toFile());
    } catch (IOException e) {
      throw new UsageException(option + " cannot be read as JSON: " + e.getMessage());
    }
    if (n == null || !n.isObject() || !n.path("mode").isTextual()) {
      throw new UsageException(option + ": expected {\"mode\":\"off|allow-list|open\",\"rules\":[...]}");
    }
    n.fieldNames().forEachRemaining(f -> {
      if (!Set.of("mode", "rules").contains(f)) {
        throw new UsageException(option + ": unknown field '" + f + "' (a policy has mode and rules)");
      }
    });
    List<String> rules = new ArrayList<>();
    JsonNode r = n.path("rules");
    if (!r.isMissingNode() && !r.isArray()) {
      throw new UsageException(option + ": rules must be an array of strings");
    }
    for (JsonNode rule : r) {
      if (!rule.isTextual()) {
        throw new UsageException(option + ": rules must be an array of strings");
      }
      rules.add(rule.asText());
    }
    try {
      return EgressPolicy.of(EgressPolicy.Mode.fromWire(n.get("mode").asText()), rules);
    } catch (IllegalArgumentException e) {
      throw new UsageException(option + ": " + e.getMessage());
    }
  }
}
