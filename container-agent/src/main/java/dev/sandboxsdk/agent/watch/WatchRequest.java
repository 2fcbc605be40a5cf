package dev.sandboxsdk.agent.watch;

import java.nio.file.Path;
import java.util.Set;

/**
 * A validated watch request: {@code root} inside the workspace as events name it, {@code raw} as
 * the client sent it; {@code include} and {@code exclude} are null when not used.
 */
public record WatchRequest(Path root, String raw, boolean recursive, Globs include, Globs exclude, Set<String> events,
    Long timeoutMs) {
}
