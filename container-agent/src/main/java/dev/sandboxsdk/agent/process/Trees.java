package dev.sandboxsdk.agent.process;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;

/** Deleting directory trees the agent's commands may have filled; symbolic links are never followed. */
public final class Trees {
  private Trees() {}

  /**
   * Deletes {@code root} and everything under it, stopping at the first failure (a caller's
   * delete, whose error the caller reports).
   */
  public static void delete(Path root) throws IOException {
    Files.walkFileTree(root, new Deleter(false));
  }

  /**
   * Deletes what it can of {@code root}, first giving the owner back the permissions a command
   * may have taken from a directory (mode 000); for the agent's own directories on stop.
   *
   * @return whether everything went
   */
  public static boolean deleteQuietly(Path root) {
    try {
      Files.walkFileTree(root, new Deleter(true));
    } catch (IOException e) {
      // reported below
    }
    return !Files.exists(root, java.nio.file.LinkOption.NOFOLLOW_LINKS);
  }

  private static final class Deleter extends SimpleFileVisitor<Path> {
    private final boolean quietly;

    Deleter(boolean quietly) {
      this.quietly = quietly;
    }

    @Override
    public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
      if (quietly) { // before the directory is opened
        dir.toFile().setReadable(true, true);
        dir.toFile().setWritable(true, true);
        dir.toFile().setExecutable(true, true);
      }
      return FileVisitResult.CONTINUE;
    }

    @Override
    public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
      try {
        Files.deleteIfExists(file);
      } catch (IOException e) {
        if (!quietly) {
          throw e;
        }
      }
      return FileVisitResult.CONTINUE;
    }

    @Override
    public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
      if (quietly || e instanceof NoSuchFileException) {
        return FileVisitResult.CONTINUE;
      }
      throw e;
    }

    @Override
    public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
      if (e != null && !quietly) {
        throw e;
      }
      try {
        Files.deleteIfExists(dir);
      } catch (IOException failure) {
        if (!quietly) {
          throw failure;
        }
      }
      return FileVisitResult.CONTINUE;
    }
  }
}
