package dev.sandboxsdk.agent.process;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Platform;

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

  /**
   * Binds the {@code native} methods of {@code calls} to the C library (JNA direct mapping), on
   * Linux for x86-64 and aarch64, whose constants the agent's callers know.
   *
   * @return null when bound, else why not
   */
  public static String register(Class<?> calls) {
    try {
      if (!Platform.isLinux() || !Platform.is64Bit() || !(Platform.isIntel() || Platform.isARM())) {
        return "it needs Linux on x86-64 or aarch64";
      }
      Native.register(calls, library());
      return null;
    } catch (Throwable e) { // UnsatisfiedLinkError, IllegalStateException from the loader
      return "cannot bind the C library: " + e.getMessage();
    }
  }
}
