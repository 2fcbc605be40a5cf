package dev.sandboxsdk.agent.exec;

import dev.sandboxsdk.agent.AgentException;
import dev.sandboxsdk.agent.ErrorCode;
import dev.sandboxsdk.agent.process.ExecSpec;
import dev.sandboxsdk.agent.process.ManagedProcess;
import dev.sandboxsdk.agent.process.OutputBudget;
import dev.sandboxsdk.agent.text.ByteBuf;
import dev.sandboxsdk.agent.text.JsonText;
import dev.sandboxsdk.agent.text.Utf8Sanitizer;
import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/**
 * One stream's output of a buffered exec: up to {@code limit} bytes kept in blocks charged to the
 * agent's {@link OutputBudget}, and written out as a JSON string straight from those blocks. The
 * bytes are the only copy: no array doubling, no String, no JSON tree, no encoded body (before,
 * a byte of output cost about 5 bytes of heap at the peak; now about 1, plus two small frames).
 *
 * <p>Never blocks the process: beyond the limit, or when the budget refuses another block, the
 * rest is read and discarded and the result says so ({@link #truncated()}, {@link #budgetExhausted()}).
 */
final class ExecOutput implements ManagedProcess.OutputSink {
  static final int FIRST_BLOCK = 8 * 1024;
  private static final int MAX_BLOCK = 1024 * 1024;
  /** Bytes escaped per frame when writing: a frame stays below 6 x this (every byte as \\u00XX). */
  private static final int SLICE = 16 * 1024;

  private final int limit;
  private final OutputBudget budget;
  private final List<byte[]> blocks = new ArrayList<>();
  private int lastFill; // bytes used in the last block
  private long size; // bytes kept
  private long written; // bytes the command wrote, kept or not
  private long allocated; // bytes of blocks, charged to the budget
  private boolean truncated;
  private boolean budgetExhausted;
  private boolean released;
  /**
   * Set once the command has finished, before the result is measured and written: output of a
   * child that outlived it (it holds the pipe) is dropped from then on, so the measured length
   * stays true and the pump never waits for a slow client. Read without the lock.
   */
  private volatile boolean sealed;

  private ExecOutput(int limit, OutputBudget budget) {
    this.limit = limit;
    this.budget = budget;
  }

  /**
   * Opens the buffers of both streams of one exec, each with its first block reserved.
   *
   * @throws AgentException OUTPUT_BUDGET_EXHAUSTED if not even that fits in the budget after
   *     evicting every finished background window
   */
  static ExecOutput[] open(int limit, OutputBudget budget) {
    ExecOutput out = new ExecOutput(limit, budget);
    ExecOutput err = new ExecOutput(limit, budget);
    if (!out.addBlock() || !err.addBlock()) {
      out.release();
      err.release();
      throw new AgentException(ErrorCode.OUTPUT_BUDGET_EXHAUSTED,
          "the agent cannot buffer more output now: its output budget of " + budget.limit()
              + " bytes is in use by running commands and background processes (--output-budget-bytes);"
              + " retry later, use POST /api/execute/stream, or clean up background processes",
          Map.of("budget", budget.limit(), "used", budget.used()));
    }
    return new ExecOutput[] {out, err};
  }

  @Override
  public void write(byte[] b, int off, int len) {
    if (sealed) {
      return; // checked before the lock: writeJson may hold it for as long as the client reads
    }
    append(b, off, len);
  }

  private synchronized void append(byte[] b, int off, int len) {
    if (released || sealed) {
      return; // the response is written; a lingering child's late output is not part of it
    }
    written += len;
    while (len > 0) {
      if (size >= limit) {
        truncated = true;
        return;
      }
      byte[] last = blocks.isEmpty() ? null : blocks.get(blocks.size() - 1);
      if (last == null || lastFill == last.length) {
        if (!addBlock()) {
          truncated = true; // the budget (or the heap) is out
          budgetExhausted = true;
          return;
        }
        last = blocks.get(blocks.size() - 1);
      }
      int n = (int) Math.min(Math.min(len, last.length - lastFill), limit - size);
      System.arraycopy(b, off, last, lastFill, n);
      lastFill += n;
      size += n;
      off += n;
      len -= n;
    }
  }

  /** Adds a block: as big as everything so far (so blocks double), 8 KiB..1 MiB, never past the limit. */
  private boolean addBlock() {
    int want = (int) Math.min(limit - allocated, Math.max(FIRST_BLOCK, Math.min(MAX_BLOCK, allocated)));
    if (want <= 0 || !budget.tryReserve(want)) {
      return false;
    }
    try {
      blocks.add(new byte[want]);
    } catch (OutOfMemoryError e) {
      budget.release(want);
      return false;
    }
    allocated += want;
    lastFill = 0;
    return true;
  }

  /**
   * Freezes the kept output: what arrives later (from a process that outlived the command and
   * still holds its pipe) is discarded, as after {@link #release()}. Waits for a write in progress.
   */
  synchronized void seal() {
    sealed = true;
  }

  /** Every byte the command wrote to this stream until the result was sealed, kept or not. */
  synchronized long written() {
    return written;
  }

  synchronized boolean truncated() {
    return truncated;
  }

  /** Whether output was dropped because the agent's output budget, not maxOutputBytes, ran out. */
  synchronized boolean budgetExhausted() {
    return budgetExhausted;
  }

  /** Gives the blocks back to the budget; later output is discarded. Safe to call twice. */
  synchronized void release() {
    if (released) {
      return;
    }
    released = true;
    budget.release(allocated);
    allocated = 0;
    blocks.clear();
    size = 0;
    lastFill = 0;
  }

  /** The exact length of {@link #writeJson}'s output. */
  synchronized long jsonLength(ExecSpec.Encoding encoding) {
    if (encoding == ExecSpec.Encoding.BASE64) {
      return 2 + (size + 2) / 3 * 4;
    }
    Utf8Sanitizer sanitizer = new Utf8Sanitizer();
    ByteBuf valid = new ByteBuf(SLICE * 3 + 16);
    long[] n = {2};
    forEachSlice((block, off, len, last) -> {
      valid.clear();
      sanitizer.sanitize(block, off, len, last, valid);
      n[0] += JsonText.escapedLength(valid.array(), 0, valid.size());
    });
    return n[0];
  }

  /** Writes the output as a JSON string (quotes included), text or base64, in bounded frames. */
  synchronized void writeJson(ExecSpec.Encoding encoding, OutputStream out, ByteBuf frame) throws IOException {
    frame.clear();
    frame.append((byte) '"');
    if (encoding == ExecSpec.Encoding.BASE64) {
      frame.writeTo(out);
      frame.clear();
      writeBase64(out);
    } else {
      Utf8Sanitizer sanitizer = new Utf8Sanitizer();
      ByteBuf valid = new ByteBuf(SLICE * 3 + 16);
      forEachSliceIo((block, off, len, last) -> {
        valid.clear();
        sanitizer.sanitize(block, off, len, last, valid);
        JsonText.appendEscaped(valid.array(), 0, valid.size(), frame);
        frame.writeTo(out);
        frame.clear();
      });
    }
    frame.append((byte) '"');
    frame.writeTo(out);
    frame.clear();
  }

  private void writeBase64(OutputStream out) throws IOException {
    // Whole groups of 3 bytes are encoded as they fill, into one reused array: no garbage per frame.
    Base64.Encoder encoder = Base64.getEncoder();
    byte[] group = new byte[B64_GROUP];
    byte[] encoded = new byte[B64_GROUP / 3 * 4];
    int[] held = {0};
    forEachSliceIo((block, off, len, last) -> {
      while (len > 0) {
        int n = Math.min(len, B64_GROUP - held[0]);
        System.arraycopy(block, off, group, held[0], n);
        held[0] += n;
        off += n;
        len -= n;
        if (held[0] == B64_GROUP) {
          int m = encoder.encode(group, encoded);
          out.write(encoded, 0, m);
          held[0] = 0;
        }
      }
      if (last && held[0] > 0) {
        out.write(encoder.encode(java.util.Arrays.copyOf(group, held[0])));
      }
    });
  }

  /** Bytes base64-encoded at a time: a multiple of 3, so no padding until the very end. */
  private static final int B64_GROUP = 3 * 5461;

  /** A slice of the kept bytes; {@code last} is true for the final one (also when empty). */
  private interface SliceConsumer {
    void accept(byte[] block, int off, int len, boolean last) throws IOException;
  }

  private void forEachSlice(SliceConsumer consumer) {
    try {
      forEachSliceIo(consumer);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private void forEachSliceIo(SliceConsumer consumer) throws IOException {
    long left = size;
    if (left == 0) {
      consumer.accept(new byte[0], 0, 0, true);
      return;
    }
    for (byte[] block : blocks) {
      int inBlock = (int) Math.min(block.length, left);
      for (int off = 0; off < inBlock; off += SLICE) {
        int len = Math.min(SLICE, inBlock - off);
        left -= len;
        consumer.accept(block, off, len, left == 0);
      }
      if (left == 0) {
        return;
      }
    }
  }
}
