package dev.sandboxsdk.agent.process;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Platform;
import com.sun.jna.Pointer;

/**
 * The few glibc functions the native spawn and the output poller call, bound with JNA's direct
 * mapping (a static native method per function: no proxy, no reflection per call).
 *
 * <p>Only Linux on x86-64 and aarch64 with glibc 2.34 or newer: {@code POSIX_SPAWN_SETSID} came in
 * 2.26, {@code posix_spawn_file_actions_addclosefrom_np} in 2.34. {@link #load()} says why it is
 * unusable anywhere else, and the agent then spawns through the JDK.
 */
final class Libc {
  // <spawn.h>
  static final short POSIX_SPAWN_SETSIGDEF = 0x04;
  static final short POSIX_SPAWN_SETSIGMASK = 0x08;
  static final short POSIX_SPAWN_SETSID = 0x80;
  // <fcntl.h>, the same on x86-64 and aarch64
  static final int O_RDONLY = 0;
  static final int O_WRONLY = 1;
  static final int O_RDWR = 2;
  static final int O_NOCTTY = 0x100;
  static final int O_NONBLOCK = 0x800;
  static final int O_CLOEXEC = 0x80000;
  // <sys/wait.h>
  static final int WNOHANG = 1;
  // <sys/epoll.h>
  static final int EPOLL_CTL_ADD = 1;
  static final int EPOLL_CTL_DEL = 2;
  static final int EPOLLIN = 0x001;
  static final int EPOLLERR = 0x008;
  static final int EPOLLHUP = 0x010;
  // <poll.h>
  static final short POLLIN = 0x001;
  static final short POLLOUT = 0x004;
  static final short POLLERR = 0x008;
  static final short POLLHUP = 0x010;
  // <asm-generic/ioctls.h>, the same on x86-64 and aarch64
  static final long TIOCSWINSZ = 0x5414;
  // <termios.h>: IUTF8 in c_iflag, the first field of struct termios (60 bytes in glibc)
  static final int IUTF8 = 0x4000;
  static final int TCSANOW = 0;
  /** struct epoll_event is packed on x86-64 (4 + 8 bytes), padded to 16 elsewhere. */
  static final int EPOLL_EVENT_SIZE = Platform.isIntel() ? 12 : 16;
  static final int EPOLL_DATA_OFFSET = Platform.isIntel() ? 4 : 8;
  // errno
  static final int ESRCH = 3;
  static final int EINTR = 4;
  static final int EIO = 5;
  static final int EAGAIN = 11;
  static final int ENOEXEC = 8;
  /** pidfd_open(2) has this number on every Linux architecture (the generic table). */
  static final long SYS_PIDFD_OPEN = 434;
  /** Bigger than glibc's posix_spawn_file_actions_t (80), posix_spawnattr_t (336) and sigset_t (128). */
  static final int OPAQUE_SIZE = 512;

  private static volatile String unavailable;
  private static volatile boolean loaded;
  private static volatile NativeLibrary library;

  private Libc() {}

  /**
   * Binds the functions once; returns null when they are ready, or why they cannot be used.
   * Never throws.
   */
  static synchronized String load() {
    if (loaded) {
      return null;
    }
    if (unavailable != null) {
      return unavailable;
    }
    try {
      if (!Platform.isLinux() || !(Platform.isIntel() && Platform.is64Bit() || Platform.isARM() && Platform.is64Bit())) {
        unavailable = "native spawn needs Linux on x86-64 or aarch64 (this is " + System.getProperty("os.name") + " "
            + System.getProperty("os.arch") + ")";
        return unavailable;
      }
      // JNA unpacks its stub library into a temporary directory before loading it: make that
      // one only the agent's user can write (a shared /tmp/jna-* could be prepared by a
      // command), and remove it once the stub is loaded.
      java.nio.file.Path unpack = null;
      if (System.getProperty("jna.tmpdir") == null) {
        unpack = java.nio.file.Files.createTempDirectory("sandbox-agent-jna-",
            java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                java.nio.file.attribute.PosixFilePermissions.fromString("rwx------")));
        System.setProperty("jna.tmpdir", unpack.toString());
      }
      // Without it JNA's first use runs `ldconfig -p` (a JDK spawn, 15-40 ms of start-up) to list
      // library directories; libc is found by the dynamic linker by its soname anyway.
      if (System.getProperty("jna.platform.library.path") == null) {
        System.setProperty("jna.platform.library.path", "");
      }
      NativeLibrary c;
      try {
        c = NativeLibrary.getInstance("c");
      } finally {
        if (unpack != null) {
          Trees.deleteQuietly(unpack);
        }
      }
      library = c; // usable by the file routes even where the native spawn is not
      // Fails here, not at the first spawn, if glibc is too old (or not glibc).
      c.getFunction("posix_spawn_file_actions_addclosefrom_np");
      c.getFunction("posix_spawn_file_actions_addchdir_np");
      Native.register(Libc.class, c);
      loaded = true;
      return null;
    } catch (Throwable e) { // UnsatisfiedLinkError, a JNA stub that cannot be unpacked, ...
      unavailable = "native spawn is unavailable: " + e;
      return unavailable;
    }
  }

  /** Whether {@link #load()} bound every function. */
  static boolean isLoaded() {
    return loaded;
  }

  /** The C library {@link #load()} bound, or null before it did. */
  static NativeLibrary library() {
    return library;
  }

  static native int posix_spawn(int[] pid, String path, Pointer fileActions, Pointer attr, Pointer argv, Pointer envp);

  static native int posix_spawn_file_actions_init(Pointer actions);

  static native int posix_spawn_file_actions_destroy(Pointer actions);

  static native int posix_spawn_file_actions_addopen(Pointer actions, int fd, String path, int flags, int mode);

  static native int posix_spawn_file_actions_adddup2(Pointer actions, int fd, int newFd);

  static native int posix_spawn_file_actions_addchdir_np(Pointer actions, String path);

  static native int posix_spawn_file_actions_addclosefrom_np(Pointer actions, int from);

  static native int posix_spawnattr_init(Pointer attr);

  static native int posix_spawnattr_destroy(Pointer attr);

  static native int posix_spawnattr_setflags(Pointer attr, short flags);

  static native int posix_spawnattr_setsigmask(Pointer attr, Pointer sigset);

  static native int posix_spawnattr_setsigdefault(Pointer attr, Pointer sigset);

  static native int sigemptyset(Pointer set);

  static native int sigfillset(Pointer set);

  static native int pipe2(int[] fds, int flags);

  static native int open(String path, int flags, int mode);

  static native int close(int fd);

  static native int mkfifo(String path, int mode);

  static native long read(int fd, Pointer buf, long count);

  static native long write(int fd, Pointer buf, long count);

  static native int posix_openpt(int flags);

  static native int grantpt(int fd);

  static native int unlockpt(int fd);

  static native int ptsname_r(int fd, byte[] buf, long buflen);

  /** Only for requests whose argument is a pointer; ioctl is variadic, which the integer ABI of both targets tolerates. */
  static native int ioctl(int fd, long request, Pointer arg);

  static native int tcgetattr(int fd, Pointer termios);

  static native int tcsetattr(int fd, int action, Pointer termios);

  static native int poll(Pointer fds, long nfds, int timeoutMs);

  static native int waitpid(int pid, int[] status, int options);

  static native int kill(int pid, int signal);


  static native long syscall(long number, int arg1, int arg2);

  static native int epoll_create1(int flags);

  static native int epoll_ctl(int epfd, int op, int fd, Pointer event);

  static native int epoll_wait(int epfd, Pointer events, int maxEvents, int timeoutMs);

  static native int eventfd(int initval, int flags);

  static native String strerror(int errno);

  /** errno of the last call on this thread (JNA saves it after every call). */
  static int errno() {
    return Native.getLastError();
  }
}
