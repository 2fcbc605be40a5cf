package dev.sandboxsdk.agent.process;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.FilterOutputStream;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lets a command that runs as another user reopen its own stdin by name ({@code cat /dev/stdin},
 * {@code jq . /dev/stdin}). The JDK's stdin pipe is made by the root agent, and the kernel gives a
 * pipe its maker as owner and mode 600, so such an open through {@code /proc/self/fd/0} fails for
 * the user. The agent, as the owner, may change the mode without any capability: it chmods the
 * pipe through {@code /proc/self/fd/N} of its own write end to {@code rw----rw-}. Nobody else can
 * reach the pipe: only the agent (root) and the command hold it, and {@code /proc/<pid>/fd} is
 * open only to a process's own user.
 *
 * <p>A FIFO would not do: reopening a FIFO for reading waits for a writer, so a command that
 * opens {@code /dev/stdin} after the agent wrote and closed its input would hang, where a pipe
 * gives it end of file.
 *
 * <p>The JDK does not say which descriptor a stream uses; the agent's jar opens {@code java.io}
 * to itself ({@code Add-Opens} in its manifest) so it can read it. Run otherwise (not with
 * {@code -jar}), commands simply cannot reopen their stdin by name; a warning says so once.
 */
final class StdinPipes {
  private static final Logger log = LoggerFactory.getLogger(StdinPipes.class);
  private static volatile boolean warned;

  private StdinPipes() {}

  /** Makes the pipe behind {@code jdkStdin} (a stream from {@link Process#getOutputStream()}) usable by others. */
  static void shareWithOthers(OutputStream jdkStdin) {
    try {
      int fd = descriptor(jdkStdin);
      if (fd < 0) {
        return;
      }
      Files.setPosixFilePermissions(Path.of("/proc/self/fd/" + fd), PosixFilePermissions.fromString("rw----rw-"));
    } catch (java.io.IOException | ReflectiveOperationException | RuntimeException e) {
      if (!warned) {
        warned = true;
        log.warn("commands cannot reopen their stdin by name (/dev/stdin) as the command user: {}"
            + " (run the agent with java -jar, or add --add-opens java.base/java.io=ALL-UNNAMED)", e.toString());
      }
    }
  }

  /** The descriptor number under the JDK's buffered pipe stream, or -1 if it has none. */
  private static int descriptor(OutputStream stream) throws java.io.IOException, ReflectiveOperationException {
    OutputStream inner = stream;
    Field out = FilterOutputStream.class.getDeclaredField("out");
    out.setAccessible(true);
    while (inner instanceof FilterOutputStream) {
      inner = (OutputStream) out.get(inner);
    }
    if (!(inner instanceof FileOutputStream)) {
      return -1;
    }
    FileDescriptor descriptor = ((FileOutputStream) inner).getFD();
    Field fd = FileDescriptor.class.getDeclaredField("fd");
    fd.setAccessible(true);
    return fd.getInt(descriptor);
  }
}
