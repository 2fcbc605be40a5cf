package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.StdStream;

/**
 * Streams one call's output chunks as progress notifications, redacted, up to
 * {@link SandboxTools#PROGRESS_TEXT_LIMIT} per call; beyond it progress carries only byte counts.
 */
final class Progress {
  final CallContext ctx;
  private final Redactor.Stream out;
  private final Redactor.Stream err;
  private long textSent;
  private long pendingBytes;
  private long lastCountOnlyNanos;

  Progress(CallContext ctx, Redactor redactor) {
    this.ctx = ctx;
    this.out = redactor.stream();
    this.err = redactor.stream();
  }

  void output(StdStream stream, String text, long bytes) {
    if (!ctx.wantsProgress()) {
      return;
    }
    pendingBytes += bytes;
    if (textSent >= SandboxTools.PROGRESS_TEXT_LIMIT) {
      long now = System.nanoTime();
      if (now - lastCountOnlyNanos >= 1_000_000_000L) { // after the limit, a heartbeat a second at most
        lastCountOnlyNanos = now;
        send(null, null);
      }
      return;
    }
    Redactor.Stream redacting = stream == StdStream.STDOUT ? out : err;
    String safe = redacting.push(text);
    textSent += bytes;
    if (textSent >= SandboxTools.PROGRESS_TEXT_LIMIT) { // the last text: hand out what both streams held back
      Redactor.Stream other = stream == StdStream.STDOUT ? err : out;
      String otherRest = other.flush();
      if (!otherRest.isEmpty()) {
        send(otherRest, stream == StdStream.STDOUT ? stderrMeta() : null);
      }
      safe += redacting.flush() + "\n[sandbox-mcp: more than " + SandboxTools.PROGRESS_TEXT_LIMIT + " bytes of output;"
          + " further progress notifications carry only byte counts]\n";
    }
    if (!safe.isEmpty()) { // else all of it may be the start of a secret: wait for the next chunk
      send(safe, stream == StdStream.STDERR ? stderrMeta() : null);
    }
  }

  /** Output from before the requested offset: only primes redaction, is not sent. */
  void prime(StdStream stream, String context) {
    (stream == StdStream.STDOUT ? out : err).prime(context);
  }

  /** At the end: what redaction held back, and a last count so progress totals the whole output. */
  void flush() {
    if (!ctx.wantsProgress()) {
      return;
    }
    if (textSent < SandboxTools.PROGRESS_TEXT_LIMIT) {
      String o = out.flush();
      if (!o.isEmpty()) {
        send(o, null);
      }
      String e = err.flush();
      if (!e.isEmpty()) {
        send(e, stderrMeta());
      }
    }
    if (pendingBytes > 0) {
      send(null, null);
    }
  }

  private void send(String message, ObjectNode meta) {
    ctx.progress(pendingBytes, message, meta);
    pendingBytes = 0;
  }

  private ObjectNode stderrMeta() {
    return Json.object().put("dev.sandboxsdk/stream", "stderr");
  }
}
