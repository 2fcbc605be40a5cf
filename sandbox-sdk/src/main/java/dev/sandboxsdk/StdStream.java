package dev.sandboxsdk;

/** One of a process's two output streams. */
public enum StdStream {
  STDOUT,
  STDERR;

  /** The name used on the wire: {@code "stdout"} or {@code "stderr"}. */
  public String wireName() {
    return this == STDOUT ? "stdout" : "stderr";
  }
}
