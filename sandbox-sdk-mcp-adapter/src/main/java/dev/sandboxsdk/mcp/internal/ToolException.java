package dev.sandboxsdk.mcp.internal;

/** A failure the model can fix or work around: it becomes a result with {@code isError: true}. */
public final class ToolException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public ToolException(String message) {
    super(message, null, false, false);
  }
}
