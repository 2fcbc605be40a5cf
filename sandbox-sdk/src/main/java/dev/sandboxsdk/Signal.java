package dev.sandboxsdk;

import java.util.Locale;
import java.util.Optional;

/**
 * The 31 standard Linux signals, by their numbers on x86-64 and arm64.
 *
 * <p>Killing a process sends its signal to the process's whole process group; if anything is
 * left after the agent's grace period it gets {@link #SIGKILL}.
 */
public enum Signal {
  SIGHUP(1), SIGINT(2), SIGQUIT(3), SIGILL(4), SIGTRAP(5), SIGABRT(6), SIGBUS(7), SIGFPE(8),
  SIGKILL(9), SIGUSR1(10), SIGSEGV(11), SIGUSR2(12), SIGPIPE(13), SIGALRM(14), SIGTERM(15),
  SIGSTKFLT(16), SIGCHLD(17), SIGCONT(18), SIGSTOP(19), SIGTSTP(20), SIGTTIN(21), SIGTTOU(22),
  SIGURG(23), SIGXCPU(24), SIGXFSZ(25), SIGVTALRM(26), SIGPROF(27), SIGWINCH(28), SIGIO(29),
  SIGPWR(30), SIGSYS(31);

  private final int number;

  Signal(int number) {
    this.number = number;
  }

  /** The signal number, e.g. 15 for SIGTERM. */
  public int number() {
    return number;
  }

  /**
   * Parses a signal name with or without the {@code SIG} prefix, in any case, or a number.
   *
   * @return the signal, or empty if the text names none of the 31 standard signals
   */
  public static Optional<Signal> parse(String text) {
    if (text == null || text.isBlank()) {
      return Optional.empty();
    }
    String t = text.strip().toUpperCase(Locale.ROOT);
    if (!t.isEmpty() && Character.isDigit(t.charAt(0))) {
      try {
        int n = Integer.parseInt(t);
        for (Signal s : values()) {
          if (s.number == n) {
            return Optional.of(s);
          }
        }
      } catch (NumberFormatException ignored) {
        // not a number after all
      }
      return Optional.empty();
    }
    String name = t.startsWith("SIG") ? t : "SIG" + t;
    for (Signal s : values()) {
      if (s.name().equals(name)) {
        return Optional.of(s);
      }
    }
    return Optional.empty();
  }
}
