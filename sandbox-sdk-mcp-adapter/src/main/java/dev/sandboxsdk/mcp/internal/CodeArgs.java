package dev.sandboxsdk.mcp.internal;

/** Arguments of the code tool group ({@link CodeTools}); {@code runCode}'s are {@link ExecArgs.RunCode}. */
final class CodeArgs {
  private CodeArgs() {
  }

  record Listing(String sandboxId) {
  }

  record Delete(String context, String sandboxId) {
  }
}
