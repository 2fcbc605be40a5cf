package dev.sandboxsdk;

import dev.sandboxsdk.internal.Checks;
import java.time.Duration;
import java.util.Objects;

/**
 * Options of {@link SandboxPorts#waitFor(int, PortWaitOptions)} and
 * {@link SandboxProcess#waitForPort(int, PortWaitOptions)}. Immutable; build with
 * {@link #builder()}, or start from {@link #http(String)} or {@link #tcp()}.
 *
 * <pre>{@code
 * sandbox.ports().waitFor(8000, PortWaitOptions.http("/health").toBuilder()
 *     .timeout(Duration.ofSeconds(30)).build());
 * }</pre>
 *
 * @param mode how readiness is checked
 * @param path the path an {@link Mode#HTTP} check requests; {@code /} by default, null in TCP mode
 * @param statusMin the lowest HTTP status that counts as ready (100–599), 200 by default
 * @param statusMax the highest HTTP status that counts as ready (100–599), 399 by default
 * @param interval the pause between checks (the agent clamps it to 100 ms – 10 s); null for its
 *     default of 500 ms
 * @param timeout give up after this long ({@link SandboxTimeoutException}); null to wait until the
 *     port is ready, the watched process ends, or the calling thread is interrupted
 */
public record PortWaitOptions(Mode mode, String path, int statusMin, int statusMax, Duration interval,
    Duration timeout) {

  /** How a port is found ready. */
  public enum Mode {
    /** A {@code GET} of {@code path} answers with a status in {@code [statusMin, statusMax]}. */
    HTTP,
    /** A TCP connection is accepted. */
    TCP
  }

  private static final PortWaitOptions DEFAULTS = new PortWaitOptions(Mode.HTTP, "/", 200, 399, null, null);

  /** Validates. */
  public PortWaitOptions {
    Objects.requireNonNull(mode, "mode == null");
    if (mode == Mode.TCP && path != null) {
      throw new IllegalArgumentException("path applies to HTTP checks only");
    }
    if (mode == Mode.HTTP) {
      Objects.requireNonNull(path, "path == null");
      if (path.isEmpty() || path.length() > 2048 || !Checks.isVisibleAscii(path)) {
        throw new IllegalArgumentException("path must be 1-2048 printable ASCII characters without spaces: '"
            + path + "'");
      }
    }
    if (statusMin < 100 || statusMin > 599 || statusMax < 100 || statusMax > 599 || statusMin > statusMax) {
      throw new IllegalArgumentException("status range must lie in 100-599 with min <= max: " + statusMin + "-"
          + statusMax);
    }
    Checks.positiveOrNull(interval, "interval");
    Checks.positiveOrNull(timeout, "timeout");
  }

  /** An HTTP check of {@code /} for a status of 200–399, every 500 ms, without a time limit. */
  public static PortWaitOptions defaults() {
    return DEFAULTS;
  }

  /** An HTTP check of {@code path} for a status of 200–399. */
  public static PortWaitOptions http(String path) {
    return builder().path(path).build();
  }

  /** A TCP check: ready once a connection is accepted. */
  public static PortWaitOptions tcp() {
    return builder().mode(Mode.TCP).build();
  }

  /** A builder with every option at its default. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder initialised from these options. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.mode = mode;
    b.path = path;
    b.statusMin = statusMin;
    b.statusMax = statusMax;
    b.interval = interval;
    b.timeout = timeout;
    return b;
  }

  /** Builds {@link PortWaitOptions}. Not thread-safe. */
  public static final class Builder {
    private Mode mode = Mode.HTTP;
    private String path;
    private int statusMin = 200;
    private int statusMax = 399;
    private Duration interval;
    private Duration timeout;

    private Builder() {}

    /** HTTP (the default) or TCP. */
    public Builder mode(Mode mode) {
      this.mode = mode;
      return this;
    }

    /** The path an HTTP check requests ({@code /} by default); a missing leading {@code /} is added. */
    public Builder path(String path) {
      this.path = path == null || path.startsWith("/") ? path : "/" + path;
      return this;
    }

    /** The HTTP statuses that count as ready, inclusive (200–399 by default). */
    public Builder status(int min, int max) {
      this.statusMin = min;
      this.statusMax = max;
      return this;
    }

    /** The pause between checks. */
    public Builder interval(Duration interval) {
      this.interval = interval;
      return this;
    }

    /** Give up after this long. */
    public Builder timeout(Duration timeout) {
      this.timeout = timeout;
      return this;
    }

    /** The options. */
    public PortWaitOptions build() {
      return new PortWaitOptions(mode, mode == Mode.HTTP && path == null ? "/" : path, statusMin, statusMax,
          interval, timeout);
    }
  }
}
