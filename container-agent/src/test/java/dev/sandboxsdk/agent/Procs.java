package dev.sandboxsdk.agent;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Looks at real processes through /proc, the way an operator would. */
final class Procs {
  private Procs() {}

  /** True if the pid exists and is not a zombie. */
  static boolean alive(long pid) {
    String[] f = stat(pid);
    return f != null && !f[0].equals("Z") && !f[0].equals("X");
  }

  /** Pids of live (non-zombie) members of a process group. */
  static List<Long> groupMembers(long pgid) {
    List<Long> members = new ArrayList<>();
    try (DirectoryStream<Path> dirs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
      for (Path dir : dirs) {
        long pid = Long.parseLong(dir.getFileName().toString());
        String[] f = stat(pid);
        if (f != null && !f[0].equals("Z") && Long.parseLong(f[2]) == pgid) {
          members.add(pid);
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return members;
  }

  /** Waits up to {@code millis} for the predicate; returns whether it became true. */
  static boolean await(long millis, java.util.function.BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + millis * 1_000_000;
    while (System.nanoTime() < deadline) {
      if (condition.getAsBoolean()) {
        return true;
      }
      Thread.sleep(20);
    }
    return condition.getAsBoolean();
  }

  /** Fields after "(comm)": state, ppid, pgrp, ...; null when the process is gone. */
  private static String[] stat(long pid) {
    try {
      String s = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.ISO_8859_1);
      return s.substring(s.lastIndexOf(')') + 2).split(" ");
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }
}
