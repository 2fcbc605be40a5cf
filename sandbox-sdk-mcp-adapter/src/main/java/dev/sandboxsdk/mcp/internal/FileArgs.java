package dev.sandboxsdk.mcp.internal;

/**
 * The arguments of the file tools, one record per tool, bound by {@link ToolHandler#bind} after
 * the schema check ({@code tools.json} is what they mirror). An optional argument is null when
 * absent, or a primitive when the tool's default is Java's ({@code false}, {@code 0}).
 */
final class FileArgs {
  private FileArgs() {
  }

  record Read(String path, String sandboxId, long offset, Integer length, String encoding) {
  }

  record Write(String path, String content, String encoding, String sandboxId) {
  }

  record Listing(String path, boolean recursive, boolean includeHidden, Integer maxEntries, String sandboxId) {
  }

  record Mkdir(String path, String sandboxId) {
  }

  record Delete(String path, boolean recursive, String sandboxId) {
  }

  /** {@code moveFile} and {@code renameFile}. */
  record Move(String from, String to, String sandboxId) {
  }

  record Exists(String path, String sandboxId) {
  }

  record Stat(String path, String sandboxId) {
  }
}
