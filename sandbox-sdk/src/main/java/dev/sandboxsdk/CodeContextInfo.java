package dev.sandboxsdk;

import java.time.Instant;
import java.util.Objects;

/**
 * A code context as the sandbox lists it.
 *
 * @param id the context's id
 * @param language its language
 * @param cwd its working directory as created (null: the workspace)
 * @param createdAt when it was created
 * @param lastUsed when its last run started or ended
 * @param executions how many runs it has had
 * @param busy whether a run is in progress
 * @param pid its interpreter's process id in the sandbox, 0 while none runs
 */
public record CodeContextInfo(String id, CodeLanguage language, String cwd, Instant createdAt,
    Instant lastUsed, int executions, boolean busy, long pid) {
  public CodeContextInfo {
    Objects.requireNonNull(id, "id == null");
    Objects.requireNonNull(language, "language == null");
  }
}
