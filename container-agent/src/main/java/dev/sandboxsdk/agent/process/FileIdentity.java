package dev.sandboxsdk.agent.process;

import com.sun.jna.Native;
import com.sun.jna.Platform;
import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.io.IOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gives the calling thread another file system identity for one action: Linux keeps fsuid, fsgid
 * and the supplementary groups per thread, and the raw system calls change only the caller's (the
 * C library's wrappers of setgroups would change every thread's). The kernel drops the file
 * capabilities while the fsuid is not 0 and gives them back after. Needs CAP_SETUID and CAP_SETGID,
 * which the agent keeps for starting commands as that user.
 */
public final class FileIdentity {
  private static final Logger log = LoggerFactory.getLogger(FileIdentity.class);
  // The raw calls change this thread's credentials only (glibc's setgroups wrapper would change
  // every thread's); the numbers differ between x86-64 and aarch64.
  private static final long SYS_SETFSUID = Platform.isIntel() ? 122 : 151;
  private static final long SYS_SETFSGID = Platform.isIntel() ? 123 : 152;
  private static final long SYS_SETGROUPS = Platform.isIntel() ? 116 : 159;

  static {
    Native.register(FileIdentity.class, NativeLibc.library());
  }

  private FileIdentity() {}

  /** File work run with another identity; may throw the IOException of its I/O. */
  @FunctionalInterface
  public interface Work<T> {
    T run() throws IOException;
  }

  /**
   * Runs {@code work} on this thread with file system uid {@code uid}, gid {@code gid} and no
   * supplementary groups, and gives the agent's back after.
   *
   * @throws AgentException INTERNAL_ERROR, before {@code work} runs, if the switch does not take
   */
  public static <T> T as(long uid, long gid, Work<T> work) throws IOException {
    int n = getgroups(0, null);
    int[] groups = new int[Math.max(n, 0)];
    if (n > 0 && getgroups(n, groups) != n) {
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "cannot read the agent's groups: errno " + Native.getLastError());
    }
    long oldUid = setfsuid(-1); // an invalid id changes nothing and answers the current one
    long oldGid = setfsgid(-1);
    if (setgroups(new int[0]) != 0) {
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "cannot drop the groups for file work as the command user:"
          + " errno " + Native.getLastError() + " (the agent needs CAP_SETUID and CAP_SETGID)");
    }
    try {
      setfsgid(gid);
      setfsuid(uid);
      if (setfsuid(-1) != uid || setfsgid(-1) != gid) {
        throw new AgentException(ErrorCode.INTERNAL_ERROR, "cannot take the command user's file system identity"
            + " (the agent needs CAP_SETUID and CAP_SETGID)");
      }
      return work.run();
    } finally {
      setfsuid(oldUid);
      setfsgid(oldGid);
      long restored = setgroups(groups);
      if (setfsuid(-1) != oldUid || setfsgid(-1) != oldGid || restored != 0) {
        // Never leave a thread of the pool half switched: it would act as the user for the next request.
        log.error("could not restore the agent's file system identity on thread {}; stopping the agent",
            Thread.currentThread().getName());
        Runtime.getRuntime().halt(70);
      }
    }
  }

  private static native int getgroups(int size, int[] list);

  private static native long syscall(long number, long arg1, int[] arg2);

  private static long setfsuid(long uid) {
    return syscall(SYS_SETFSUID, uid, null);
  }

  private static long setfsgid(long gid) {
    return syscall(SYS_SETFSGID, gid, null);
  }

  private static long setgroups(int[] groups) {
    return syscall(SYS_SETGROUPS, groups.length, groups.length == 0 ? null : groups);
  }
}
