package dev.sandboxsdk;

import java.util.List;
import java.util.Objects;

/**
 * A command to run: either a shell string, run by {@code /bin/sh -c}, or an argv list that is
 * executed directly and never passes through a shell (so arguments need no quoting and cannot
 * inject anything).
 *
 * <pre>{@code
 * Command.shell("npm test && npm run build");   // shell features: pipes, &&, globbing, $VARS
 * Command.of("git", "clone", userSuppliedUrl);  // no shell: safe with untrusted arguments
 * }</pre>
 *
 * <p>Instances are immutable. Exactly one of {@link #shell()} and {@link #argv()} is set.
 *
 * @param shell the shell string, or null for an argv command
 * @param argv the program and its arguments (empty for a shell command)
 */
public record Command(String shell, List<String> argv) {

  /** Validates and copies; use {@link #shell(String)} or {@link #of(String, String...)} instead. */
  public Command {
    argv = List.copyOf(Objects.requireNonNull(argv, "argv == null"));
    if (shell == null) {
      if (argv.isEmpty()) {
        throw new IllegalArgumentException("argv is empty: a command needs at least a program");
      }
      if (argv.get(0).isEmpty()) {
        throw new IllegalArgumentException("argv[0] is empty: it must name a program");
      }
    } else {
      if (!argv.isEmpty()) {
        throw new IllegalArgumentException("a command is either a shell string or an argv list, not both");
      }
      if (shell.isBlank()) {
        throw new IllegalArgumentException("shell command is blank");
      }
    }
  }

  /** A shell command line, run as {@code /bin/sh -c <command>} in the sandbox. */
  public static Command shell(String command) {
    Objects.requireNonNull(command, "command == null");
    return new Command(command, List.of());
  }

  /** A program and its arguments, run directly without a shell. */
  public static Command of(String program, String... args) {
    Objects.requireNonNull(program, "program == null");
    Objects.requireNonNull(args, "args == null");
    String[] all = new String[args.length + 1];
    all[0] = program;
    System.arraycopy(args, 0, all, 1, args.length);
    return new Command(null, List.of(all)); // List.of rejects null elements
  }

  /** A program and its arguments, run directly without a shell. */
  public static Command of(List<String> argv) {
    return new Command(null, argv);
  }

  /** Whether this is a shell string rather than an argv list. */
  public boolean isShell() {
    return shell != null;
  }

  /** The command as a human would read it: the shell string, or the argv joined by spaces. */
  public String display() {
    return shell != null ? shell : String.join(" ", argv);
  }

  @Override
  public String toString() {
    return shell != null ? "Command.shell(" + shell + ")" : "Command" + argv;
  }
}
