package dev.sandboxsdk;

import java.time.Instant;
import java.util.Objects;

/**
 * A session as the agent reports it.
 *
 * @param id its id
 * @param createdAt when it was created
 * @param lastUsedAt when its last command started (its creation if none did)
 * @param commandCount how many commands have started in it
 * @param busy whether a command runs in it now
 */
public record SessionInfo(String id, Instant createdAt, Instant lastUsedAt, long commandCount, boolean busy) {
  public SessionInfo {
    Objects.requireNonNull(id, "id == null");
    Objects.requireNonNull(createdAt, "createdAt == null");
    Objects.requireNonNull(lastUsedAt, "lastUsedAt == null");
  }
}
