package dev.sandboxsdk.internal;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.EgressPolicy;
import dev.sandboxsdk.EgressSecret;
import dev.sandboxsdk.SandboxException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The files a local agent reads its egress settings from at start: the policy of
 * {@code --egress-policy} (the JSON of {@code PUT /api/egress/policy}) and the secrets of
 * {@code --egress-secrets} (a JSON list of {@code {name, value, hosts, header?}}), each in a new
 * file of mode 0600 (created so, never wider for a moment) in the temporary directory. The agent
 * reads them once, while it starts, so the local sandbox deletes them as soon as the agent is up,
 * or has failed to start ({@link #close()}). Files rather than arguments: rules hold spaces, and
 * an argument shows in {@code ps}, a secret above all. No message of this class shows a value.
 */
public final class AgentEgressFiles implements AutoCloseable {
  private final List<Path> files = new ArrayList<>();
  private final List<String> arguments = new ArrayList<>();

  private AgentEgressFiles() {}

  /**
   * Writes {@code policy} and {@code secrets}; for a null policy and no secrets, nothing (an agent
   * without egress). Secrets without a policy are the caller's mistake, checked before.
   *
   * @throws SandboxException if a file cannot be written (then none is left)
   */
  public static AgentEgressFiles write(EgressPolicy policy, List<EgressSecret> secrets) {
    AgentEgressFiles out = new AgentEgressFiles();
    try {
      if (policy != null) {
        out.add("--egress-policy", "sandbox-egress-", Wire.bytes(RealEgress.body(policy)));
      }
      if (!secrets.isEmpty()) {
        byte[] json = Wire.bytes(secretsArray(secrets));
        try {
          out.add("--egress-secrets", "sandbox-egress-secrets-", json);
        } finally {
          Arrays.fill(json, (byte) 0); // the Strings stay until collected; this copy need not
        }
      }
      return out;
    } catch (IOException | UnsupportedOperationException e) {
      out.close();
      throw new SandboxException("cannot write the egress files for the local agent: " + e.getClass().getSimpleName()
          + (e.getMessage() != null ? ": " + e.getMessage() : ""), e);
    }
  }

  private void add(String option, String prefix, byte[] content) throws IOException {
    Path f = Files.createTempFile(prefix, ".json",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    files.add(f);
    Files.write(f, content);
    arguments.addAll(List.of(option, f.toString()));
  }

  /** The policy as the agent reads it: the JSON of {@code PUT /api/egress/policy}. */
  public static String policyJson(EgressPolicy policy) {
    return new String(Wire.bytes(RealEgress.body(policy)), java.nio.charset.StandardCharsets.UTF_8);
  }

  /** The secrets as the agent's {@code --egress-secrets} reads them; values included, so never log it. */
  public static String secretsJson(List<EgressSecret> secrets) {
    return new String(Wire.bytes(secretsArray(secrets)), java.nio.charset.StandardCharsets.UTF_8);
  }

  private static ArrayNode secretsArray(List<EgressSecret> secrets) {
    ArrayNode list = Wire.MAPPER.createArrayNode();
    for (EgressSecret s : secrets) {
      ObjectNode o = list.addObject().put("name", s.name()).put("value", s.value());
      ArrayNode hosts = o.putArray("hosts");
      s.hosts().forEach(hosts::add);
      if (s.header() != null) {
        o.put("header", s.header());
      }
    }
    return list;
  }

  /** The agent's arguments: {@code --egress-policy FILE}, {@code --egress-secrets FILE}, or none. */
  public List<String> arguments() {
    return List.copyOf(arguments);
  }

  /** The files written, for tests. */
  List<Path> files() {
    return List.copyOf(files);
  }

  /** Deletes the files: the agent has read them, or will never. */
  @Override
  public void close() {
    for (Path f : files) {
      try {
        Files.deleteIfExists(f);
      } catch (IOException ignored) {
        // in the temporary directory, owner-only; nothing better to do
      }
    }
  }
}
