package dev.sandboxsdk.agent.process;

import dev.sandboxsdk.agent.AgentException;
import java.util.Locale;
import java.util.Optional;

/** The standard Linux signals, by name and number (x86_64 and aarch64 agree on these). */
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

  public int number() {
    return number;
  }

  /** The name without the SIG prefix, as the kill(1) command takes it. */
  public String shortName() {
    return name().substring(3);
  }

  public static Optional<Signal> ofNumber(int number) {
    for (Signal s : values()) {
      if (s.number == number) {
        return Optional.of(s);
      }
    }
    return Optional.empty();
  }

  /**
   * Parses {@code SIGTERM}, {@code TERM}, {@code term} or {@code 15}.
   *
   * @throws AgentException VALIDATION_FAILED naming the parameter when the value is no signal
   */
  public static Signal parse(String value, String field) {
    // strip(), not trim(): "SIGKILL\0" is not a signal name
    String v = value == null ? "" : value.strip().toUpperCase(Locale.ROOT);
    if (!v.isEmpty() && v.chars().allMatch(c -> c >= '0' && c <= '9') && v.length() <= 3) {
      Optional<Signal> byNumber = ofNumber(Integer.parseInt(v));
      if (byNumber.isPresent()) {
        return byNumber.get();
      }
    } else if (!v.isEmpty()) {
      String name = v.startsWith("SIG") ? v : "SIG" + v;
      for (Signal s : values()) {
        if (s.name().equals(name)) {
          return s;
        }
      }
    }
    throw AgentException.invalid(field,
        "unknown signal '" + value + "': use a name such as SIGTERM, SIGINT, SIGKILL or a number 1-31");
  }
}
