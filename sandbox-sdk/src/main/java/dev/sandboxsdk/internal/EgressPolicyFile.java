package dev.sandboxsdk.internal;

import dev.sandboxsdk.EgressPolicy;
import dev.sandboxsdk.SandboxException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

/**
 * A policy in the file a local agent's {@code --egress-policy} reads: the JSON of {@code PUT
 * /api/egress/policy}, in a new file of mode 0600 (created so, never wider for a moment) in the
 * temporary directory. The agent reads it once, while it starts, so the local sandbox deletes it
 * as soon as the agent is up ({@link #close()}). A file rather than an argument: rules hold spaces,
 * and would show in {@code ps}.
 */
public final class EgressPolicyFile implements AutoCloseable {
  private final Path file;

  private EgressPolicyFile(Path file) {
    this.file = file;
  }

  /**
   * Writes {@code policy}; for null, nothing (an agent without egress).
   *
   * @throws SandboxException if the file cannot be written
   */
  public static EgressPolicyFile write(EgressPolicy policy) {
    if (policy == null) {
      return new EgressPolicyFile(null);
    }
    Path f = null;
    try {
      f = Files.createTempFile("sandbox-egress-", ".json",
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      Files.write(f, Wire.bytes(RealEgress.body(policy)));
      return new EgressPolicyFile(f);
    } catch (IOException | UnsupportedOperationException e) {
      deleteQuietly(f);
      throw new SandboxException("cannot write the egress policy file for the local agent: " + e, e);
    }
  }

  /** The policy as the agent reads it: the JSON of {@code PUT /api/egress/policy}. */
  public static String json(EgressPolicy policy) {
    return new String(Wire.bytes(RealEgress.body(policy)), java.nio.charset.StandardCharsets.UTF_8);
  }

  /** The agent's arguments: {@code --egress-policy FILE}, or none. */
  public List<String> arguments() {
    return file == null ? List.of() : List.of("--egress-policy", file.toString());
  }

  /** Deletes the file: the agent has read it. */
  @Override
  public void close() {
    deleteQuietly(file);
  }

  private static void deleteQuietly(Path f) {
    if (f == null) {
      return;
    }
    try {
      Files.deleteIfExists(f);
    } catch (IOException ignored) {
      // in the temporary directory, owner-only; nothing better to do
    }
  }
}
