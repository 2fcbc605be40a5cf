package dev.sandboxsdk.agent.process;

import com.sun.jna.NativeLibrary;

/**
 * The C library as the agent binds it once (its JNA stub unpacked into a directory only the agent
 * can write), for other packages that bind functions of their own.
 */
public final class NativeLibc {
  private NativeLibc() {}

  /**
   * The bound C library.
   *
   * @throws IllegalStateException with the reason when it cannot be bound here
   */
  public static NativeLibrary library() {
    String why = Libc.load(); // binds the library even when the spawn functions are missing
    NativeLibrary c = Libc.library();
    if (c == null) {
      throw new IllegalStateException(why != null ? why : "the C library is not bound");
    }
    return c;
  }
}
