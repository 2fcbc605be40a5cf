package dev.sandboxsdk.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** Removing the temporary files the test kit's helpers make. */
final class TempFiles {
  private TempFiles() {
  }

  /** Deletes {@code dir} and everything under it, as far as it can; null is nothing to do. */
  static void deleteTree(Path dir) {
    if (dir == null || !Files.exists(dir)) {
      return;
    }
    try (Stream<Path> all = Files.walk(dir)) {
      all.sorted(Comparator.reverseOrder()).forEach(p -> {
        try {
          Files.deleteIfExists(p);
        } catch (IOException e) {
          // left behind in the temporary directory
        }
      });
    } catch (IOException e) {
      // as above
    }
  }
}
