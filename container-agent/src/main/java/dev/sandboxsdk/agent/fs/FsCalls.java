package dev.sandboxsdk.agent.fs;

import com.sun.jna.Native;
import com.sun.jna.Platform;
import dev.sandboxsdk.agent.process.NativeLibc;

/**
 * The system calls that resolve a caller's path relative to a directory descriptor. JNA direct
 * mapping, Linux on x86-64 and aarch64 only (O_DIRECTORY and O_NOFOLLOW differ between the two).
 */
final class FsCalls {
  // <fcntl.h>: O_PATH and O_CLOEXEC are the same on both, O_DIRECTORY and O_NOFOLLOW are not
  static final int O_PATH = 0x200000;
  static final int O_CLOEXEC = 0x80000;
  static final int O_DIRECTORY = Platform.isIntel() ? 0x10000 : 0x4000;
  static final int O_NOFOLLOW = Platform.isIntel() ? 0x20000 : 0x8000;
  // errno
  static final int ENOENT = 2;
  static final int EACCES = 13;
  static final int ENOTDIR = 20;
  static final int ENAMETOOLONG = 36;
  static final int ELOOP = 40;
  private static final String UNAVAILABLE;

  static {
    String why = NativeLibc.register(FsCalls.class);
    UNAVAILABLE = why == null ? null : "the file routes cannot work here: " + why;
  }

  private FsCalls() {}

  /** Null when the calls are bound, else why not. */
  static String unavailable() {
    return UNAVAILABLE;
  }

  static native int openat(int dirfd, String path, int flags, int mode);

  static native int close(int fd);

  static native long readlinkat(int dirfd, String path, byte[] buf, long size);

  static int errno() {
    return Native.getLastError();
  }
}
