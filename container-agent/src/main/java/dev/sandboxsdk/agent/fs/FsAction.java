package dev.sandboxsdk.agent.fs;

import java.io.IOException;

/** File work that {@link Workspace#asUser} runs with the command user's identity. */
@FunctionalInterface
public interface FsAction<T> {
  T run() throws IOException;
}
