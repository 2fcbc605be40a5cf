package dev.sandboxsdk;

import dev.sandboxsdk.contract.SandboxProbe;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.List;

/**
 * A {@link HostProbe} for a sandbox whose commands run in PID namespaces of their own (bubblewrap):
 * a pid a command wrote ({@code $$}, {@code $!}) is a pid in its namespace, so {@link #readPid}
 * translates it to the host's pid through the {@code NSpid} line of {@code /proc/<pid>/status},
 * among the processes whose environment names this sandbox's workspace, taking the most recently
 * started one if several namespaces have that pid. A pid whose process is already gone
 * translates to {@link #GONE}, which is never alive.
 */
final class NamespacedHostProbe implements SandboxProbe {
  /** Beyond the kernel's largest pid_max (2^22): never a live process. */
  static final long GONE = 1L << 40;

  private final HostProbe host;
  private final byte[] workspaceVar;

  NamespacedHostProbe(Path workspace) {
    this.host = new HostProbe(workspace);
    this.workspaceVar = ("SANDBOX_WORKSPACE=" + workspace + "\0").getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public boolean exists(String path) {
    return host.exists(path);
  }

  @Override
  public long readPid(String path, Duration timeout) throws InterruptedException {
    return hostPid(host.readPid(path, timeout));
  }

  /** The host pid of the newest process of this sandbox that is {@code nsPid} in its own namespace, or {@link #GONE}. */
  long hostPid(long nsPid) {
    long best = GONE;
    long bestStart = -1;
    try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
      for (Path proc : procs) {
        try {
          String nspid = null;
          for (String line : Files.readAllLines(proc.resolve("status"))) {
            if (line.startsWith("NSpid:")) {
              nspid = line.substring(6).trim();
            }
          }
          String[] levels = nspid == null ? new String[0] : nspid.split("\\s+");
          if (levels.length < 2 || Long.parseLong(levels[levels.length - 1]) != nsPid) {
            continue;
          }
          if (indexOf(Files.readAllBytes(proc.resolve("environ")), workspaceVar) < 0) {
            continue;
          }
          String stat = Files.readString(proc.resolve("stat"));
          long start = Long.parseLong(stat.substring(stat.lastIndexOf(')') + 2).split(" ")[19]);
          if (start > bestStart) {
            bestStart = start;
            best = Long.parseLong(proc.getFileName().toString());
          }
        } catch (IOException | RuntimeException e) {
          // gone meanwhile, or not ours to read
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot list /proc", e);
    }
    return best;
  }

  private static int indexOf(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      if (i > 0 && haystack[i - 1] != 0) {
        continue; // variables start after a NUL
      }
      for (int j = 0; j < needle.length; j++) {
        if (haystack[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }

  @Override
  public boolean alive(long pid) {
    return pid != GONE && host.alive(pid);
  }

  @Override
  public List<Long> aliveAmong(Collection<Long> pids) {
    return host.aliveAmong(pids.stream().filter(p -> p != GONE).toList());
  }

  @Override
  public List<Long> groupMembers(long pgid) {
    return host.groupMembers(pgid);
  }

  @Override
  public String realPath(String path) {
    return host.realPath(path);
  }

  @Override
  public String toString() {
    return "NamespacedHostProbe{" + host + "}";
  }
}
