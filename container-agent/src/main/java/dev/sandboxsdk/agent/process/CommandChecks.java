package dev.sandboxsdk.agent.process;

import static dev.sandboxsdk.agent.process.ProcessManager.abbreviate;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.Function;

/**
 * The checks a command passes before it is spawned: its working directory exists and its program
 * is there and executable, as the command will see them (as the command user, or through
 * bubblewrap's view of the host), so that a typo is a clear 400 or 404 rather than a failed exec.
 */
final class CommandChecks {
  private final Path workspace;
  /** The user commands run as, or null when they run as the agent's own. */
  private final CommandUser commandUser;
  /** The isolation commands run in, or null. */
  private final Bubblewrap bubblewrap;

  CommandChecks(Path workspace, CommandUser commandUser, Bubblewrap bubblewrap) {
    this.workspace = workspace;
    this.commandUser = commandUser;
    this.bubblewrap = bubblewrap;
  }

  /** The directory a command runs in: {@code cwd} resolved against the workspace, which must exist. */
  Path resolveCwd(String cwd) {
    Path dir;
    try {
      dir = cwd == null ? workspace : workspace.resolve(cwd);
    } catch (InvalidPathException e) {
      throw AgentException.invalid("cwd", "cwd is not a valid path: " + e.getMessage());
    }
    Seen seen;
    if (bubblewrap != null && bubblewrap.view(dir) != Bubblewrap.View.HOST) {
      // The sandbox's view outside the workspace is not the host's: bubblewrap changes into it
      // there (and says so if it cannot), so no answer here tells what the host holds.
      seen = Seen.UNKNOWN;
    } else {
      seen = commandUser != null ? lookAsUser(dir) : Files.isDirectory(dir) ? Seen.DIRECTORY : Seen.MISSING;
    }
    if (seen != Seen.DIRECTORY && seen != Seen.UNKNOWN) {
      throw new AgentException(ErrorCode.VALIDATION_FAILED,
          "cwd '" + abbreviate(cwd) + "' is not an existing directory in the sandbox",
          Map.of("field", "cwd", "cwd", dir.toString()));
    }
    return dir;
  }

  /** Refuses a program the command could not run, as the command user or the agent's own user. */
  void checkProgram(String program, Path cwd, String path) {
    if (commandUser != null) {
      checkExecutableAsUser(program, cwd, path);
    } else {
      checkExecutable(program, cwd, path,
          p -> bubblewrap == null ? Bubblewrap.View.HOST : bubblewrap.view(p));
    }
  }

  /**
   * Refuses a program that is not there or not executable, looking only where {@code view} says
   * the command sees what the host holds: where the sandbox has nothing, there is no program;
   * where it has its own files, the command finds out itself.
   */
  private static void checkExecutable(String program, Path cwd, String path, Function<Path, Bubblewrap.View> view) {
    Path found = null;
    if (program.contains("/")) {
      Path p = cwd.resolve(program);
      Bubblewrap.View seen = view.apply(p);
      if (seen == Bubblewrap.View.OWN) {
        return;
      }
      found = seen == Bubblewrap.View.HOST && Files.exists(p) ? p : null;
    } else {
      for (String dir : (path == null ? ProcessGroups.DEFAULT_PATH : path).split(":")) {
        Path p = cwd.resolve(dir.isEmpty() ? "." : dir).resolve(program);
        Bubblewrap.View seen = view.apply(p);
        if (seen == Bubblewrap.View.OWN) {
          return; // the sandbox's own directory: the command's lookup decides
        } else if (seen == Bubblewrap.View.ABSENT) {
          continue; // the sandbox has no such directory
        }
        if (Files.isRegularFile(p) && Files.isExecutable(p)) {
          return;
        }
        if (found == null && Files.exists(p)) {
          found = p;
        }
      }
    }
    if (found == null) {
      throw new AgentException(ErrorCode.COMMAND_NOT_FOUND,
          "command not found: '" + abbreviate(program) + "' (searched " + (program.contains("/") ? "the path as given" : "PATH") + ")",
          Map.of("command", abbreviate(program)));
    }
    if (!Files.isRegularFile(found) || !Files.isExecutable(found)) {
      throw new AgentException(ErrorCode.INVALID_COMMAND,
          "'" + abbreviate(program) + "' is not an executable file (" + found + ")",
          Map.of("command", abbreviate(program)));
    }
  }

  /** What the agent can tell about a path on behalf of the command user. */
  private enum Seen { MISSING, DIRECTORY, EXECUTABLE, NOT_EXECUTABLE, UNKNOWN }

  /**
   * Looks at {@code p} for the command user. The agent has no CAP_DAC_READ_SEARCH, so a
   * directory of the user's it may not search is UNKNOWN (the command itself will find out), and
   * a file counts as executable if any execute bit could apply to the user (the owner's if the
   * user owns it, else the group's or others').
   */
  private Seen lookAsUser(Path p) {
    try {
      var a = Files.readAttributes(p, java.nio.file.attribute.PosixFileAttributes.class);
      if (a.isDirectory()) {
        return Seen.DIRECTORY;
      }
      if (!a.isRegularFile()) {
        return Seen.NOT_EXECUTABLE;
      }
      var perms = a.permissions();
      boolean owned = Integer.toUnsignedLong((Integer) Files.getAttribute(p, "unix:uid")) == commandUser.uid();
      boolean x = owned ? perms.contains(java.nio.file.attribute.PosixFilePermission.OWNER_EXECUTE)
          : perms.contains(java.nio.file.attribute.PosixFilePermission.GROUP_EXECUTE)
              || perms.contains(java.nio.file.attribute.PosixFilePermission.OTHERS_EXECUTE);
      return x ? Seen.EXECUTABLE : Seen.NOT_EXECUTABLE;
    } catch (java.nio.file.NoSuchFileException | java.nio.file.NotDirectoryException e) {
      return Seen.MISSING;
    } catch (IOException | RuntimeException e) {
      return Seen.UNKNOWN;
    }
  }

  /** {@link #checkExecutable} as the command user would see it (see {@link #lookAsUser}). */
  private void checkExecutableAsUser(String program, Path cwd, String path) {
    Path found = null;
    Seen seen = Seen.MISSING;
    if (program.contains("/")) {
      found = cwd.resolve(program);
      seen = lookAsUser(found);
    } else {
      for (String dir : (path == null ? ProcessGroups.DEFAULT_PATH : path).split(":")) {
        Path p = cwd.resolve(dir.isEmpty() ? "." : dir).resolve(program);
        Seen s = lookAsUser(p);
        if (s == Seen.EXECUTABLE || s == Seen.UNKNOWN) {
          return;
        }
        if (seen == Seen.MISSING && s != Seen.MISSING) {
          found = p;
          seen = s;
        }
      }
    }
    if (seen == Seen.MISSING) {
      throw new AgentException(ErrorCode.COMMAND_NOT_FOUND,
          "command not found: '" + abbreviate(program) + "' (searched " + (program.contains("/") ? "the path as given" : "PATH") + ")",
          Map.of("command", abbreviate(program)));
    }
    if (seen == Seen.DIRECTORY || seen == Seen.NOT_EXECUTABLE) {
      throw new AgentException(ErrorCode.INVALID_COMMAND,
          "'" + abbreviate(program) + "' is not an executable file (" + found + ")",
          Map.of("command", abbreviate(program)));
    }
  }
}
