package dev.sandboxsdk.agent.fs;

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
final class Credentials {
  private static final Logger log = LoggerFactory.getLogger(Credentials.class);

  private Credentials() {}

  static <T> T as(long uid, long gid, FsAction<T> action) throws IOException {
    int n = FsCalls.getgroups(0, null);
    int[] groups = new int[Math.max(n, 0)];
    if (n > 0 && FsCalls.getgroups(n, groups) != n) {
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "cannot read the agent's groups: errno " + FsCalls.errno());
    }
    long oldUid = FsCalls.setfsuid(-1); // an invalid id changes nothing and answers the current one
    long oldGid = FsCalls.setfsgid(-1);
    if (FsCalls.setgroups(new int[0]) != 0) {
      throw new AgentException(ErrorCode.INTERNAL_ERROR, "cannot drop the groups for file work as the command user:"
          + " errno " + FsCalls.errno() + " (the agent needs CAP_SETUID and CAP_SETGID)");
    }
    try {
      FsCalls.setfsgid(gid);
      FsCalls.setfsuid(uid);
      if (FsCalls.setfsuid(-1) != uid || FsCalls.setfsgid(-1) != gid) {
        throw new AgentException(ErrorCode.INTERNAL_ERROR, "cannot take the command user's file system identity"
            + " (the agent needs CAP_SETUID and CAP_SETGID)");
      }
      return action.run();
    } finally {
      FsCalls.setfsuid(oldUid);
      FsCalls.setfsgid(oldGid);
      long restored = FsCalls.setgroups(groups);
      if (FsCalls.setfsuid(-1) != oldUid || FsCalls.setfsgid(-1) != oldGid || restored != 0) {
        // Never leave a thread of the pool half switched: it would act as the user for the next request.
        log.error("could not restore the agent's file system identity on thread {}; stopping the agent",
            Thread.currentThread().getName());
        Runtime.getRuntime().halt(70);
      }
    }
  }
}
