package dev.sandboxsdk.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * The host side of a path-race attack: a directory outside the workspace whose files a raced
 * request must never read, create, change, delete or move. It holds {@code f} and
 * {@code hostonly} (both {@link #SECRET}) and {@code victim-0} ... {@code victim-(n-1)}, each
 * readable by its owner only; the workspace holds files of the same names, so a request that
 * follows a swapped-in link to here hits one of them.
 */
public final class HostBait {
  /** What {@code f} and {@code hostonly} hold: it must never appear in an answer. */
  public static final String SECRET = "HOSTSECRET\n";

  private final Path dir;
  private final Map<String, String> files;

  private HostBait(Path dir, Map<String, String> files) {
    this.dir = dir;
    this.files = Collections.unmodifiableMap(files);
  }

  /** Creates {@code dir} and the bait files in it, {@code victims} of them for deletes and moves. */
  public static HostBait plant(Path dir, int victims) throws IOException {
    Map<String, String> files = new TreeMap<>();
    files.put("f", SECRET);
    files.put("hostonly", SECRET);
    for (int i = 0; i < victims; i++) {
      files.put("victim-" + i, "host victim\n");
    }
    Files.createDirectory(dir);
    for (var e : files.entrySet()) {
      Files.writeString(dir.resolve(e.getKey()), e.getValue());
      Files.setPosixFilePermissions(dir.resolve(e.getKey()), PosixFilePermissions.fromString("rw-------"));
    }
    return new HostBait(dir, files);
  }

  /** The host directory. */
  public Path dir() {
    return dir;
  }

  /**
   * What the race did to the host directory: files gone, files new and files whose content
   * changed, one line each; empty when every bait file is as planted and nothing was added.
   */
  public List<String> changes() throws IOException {
    TreeSet<String> now = new TreeSet<>();
    try (Stream<Path> s = Files.list(dir)) {
      s.forEach(p -> now.add(p.getFileName().toString()));
    }
    List<String> changes = new ArrayList<>();
    for (var e : files.entrySet()) {
      if (!now.remove(e.getKey())) {
        changes.add("gone: " + e.getKey());
      } else {
        String content = Files.readString(dir.resolve(e.getKey()));
        if (!content.equals(e.getValue())) {
          changes.add("changed: " + e.getKey() + " now holds " + content.strip());
        }
      }
    }
    for (String added : now) {
      changes.add("new: " + added);
    }
    return changes;
  }
}
