package dev.sandboxsdk.mcp.internal;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sandboxsdk.FileEntry;
import dev.sandboxsdk.FileStat;
import dev.sandboxsdk.FileType;
import dev.sandboxsdk.ListOptions;
import dev.sandboxsdk.SandboxException;
import dev.sandboxsdk.SandboxFileNotFoundException;
import dev.sandboxsdk.SandboxFiles;
import dev.sandboxsdk.SandboxPermissionException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The file tools ({@code readFile}, {@code writeFile}, {@code listFiles}, {@code mkdir},
 * {@code deleteFile}, {@code moveFile}, {@code renameFile}, {@code fileExists}, {@code statFile}):
 * thin calls of {@link SandboxFiles}. What reaches the model is bounded: {@code readFile} returns
 * at most the server's output limit per call from a byte offset, reading only that range from
 * the sandbox, and {@code listFiles} at most {@code maxEntries} entries; both say how to get the
 * rest. Text goes out as text (redacted like command output); other bytes as base64, which is
 * refused if it holds a passed secret, since base64 cannot be redacted. Thread-safe.
 */
final class FileTools implements ToolGroup {
  /** The most a writeFile call takes (decoded): its base64 form still fits the HTTP transport's 4 MiB body. */
  static final int MAX_WRITE_BYTES = 2 * 1024 * 1024;
  static final int DEFAULT_MAX_ENTRIES = 1_000;
  /**
   * The most characters of names and paths one listFiles result carries, whatever maxEntries says:
   * 10,000 entries of long paths would otherwise make a result of tens of megabytes.
   */
  static final int MAX_LISTING_CHARS = 1 << 20;
  private static final int SKIP_BUFFER = 64 * 1024;
  private static final String MARKER = "[REDACTED:";

  private final AdapterConfig config;
  private final Sandboxes sandboxes;
  private final Redactor redactor;

  FileTools(AdapterConfig config, Sandboxes sandboxes, Redactor redactor) {
    this.config = config;
    this.sandboxes = sandboxes;
    this.redactor = redactor;
  }

  @Override
  public void register(Map<String, ToolHandler> tools) {
    tools.put("readFile", ToolHandler.blocking(FileArgs.Read.class, this::readFile));
    tools.put("writeFile", ToolHandler.blocking(FileArgs.Write.class, this::writeFile));
    tools.put("listFiles", ToolHandler.blocking(FileArgs.Listing.class, this::listFiles));
    tools.put("mkdir", ToolHandler.blocking(FileArgs.Mkdir.class, this::mkdir));
    tools.put("deleteFile", ToolHandler.blocking(FileArgs.Delete.class, this::deleteFile));
    tools.put("moveFile", ToolHandler.blocking(FileArgs.Move.class, a -> move(a, "moveFile")));
    tools.put("renameFile", ToolHandler.blocking(FileArgs.Move.class, a -> move(a, "renameFile")));
    tools.put("fileExists", ToolHandler.blocking(FileArgs.Exists.class, this::fileExists));
    tools.put("statFile", ToolHandler.blocking(FileArgs.Stat.class, this::statFile));
  }

  // ---- readFile

  private ToolOutcome readFile(FileArgs.Read args, CallContext ctx) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    String path = args.path();
    long offset = args.offset();
    int cap = SandboxTools.cap(config, args.length());
    String encoding = args.encoding() != null ? args.encoding() : "auto";
    SandboxFiles files = sb.sandbox().files();
    try {
      FileStat st = files.stat(path);
      if (st.isDirectory()) {
        throw new ToolException("'" + path + "' is a directory, not a file: listFiles shows what is in it.");
      }
      if (st.type() == FileType.OTHER) {
        throw new ToolException("'" + path + "' is not a regular file (a pipe, socket or device), which readFile"
            + " does not read; statFile describes it.");
      }
      Long size = st.isFile() ? st.size() : null; // a link's own size says nothing about its target
      if (size != null && offset >= size) {
        return ToolOutcome.ok(readResult(sb, path, size, offset, offset, encoding.equals("base64") ? "base64" : "utf-8",
            "", false, offset > size ? "offset " + offset + " is past the end of the file (" + size + " bytes)." : null));
      }
      // Bytes just before the offset and past the cap are read too, as context: they show a secret
      // that straddles either edge, and where a UTF-8 character that the cap cuts ends.
      int back = (int) Math.min(offset, redactor.maxBytes() + 3L);
      int want = back + textCap(cap) + redactor.maxBytes() + 4;
      byte[] buf = new byte[want];
      int got;
      try (InputStream in = files.open(path)) {
        ctx.onCancel(() -> closeQuietly(in));
        if (!skip(in, offset - back)) {
          return ToolOutcome.ok(readResult(sb, path, size, offset, offset, "utf-8", "", false,
              "offset " + offset + " is past the end of the file."));
        }
        got = in.readNBytes(buf, 0, want);
      } catch (IOException e) {
        throw new ToolException("Reading '" + path + "' from sandbox '" + sb.id() + "' broke off: " + e.getMessage()
            + ". Try again.");
      }
      return ToolOutcome.ok(page(sb, path, size, offset, cap, encoding, buf, back, got, got < want));
    } catch (SandboxException e) {
      throw fileError(e, "readFile", path, sb);
    }
  }

  /** The result for the bytes {@code buf[back, got)}, which start at {@code offset} of the file. */
  private ObjectNode page(Sandboxes.Entry sb, String path, Long size, long offset, int cap, String encoding,
      byte[] buf, int back, int got, boolean eof) {
    long bufferEnd = offset - back + got;
    if (got <= back) { // the file shrank since stat, or a link's target is short
      return readResult(sb, path, size, offset, offset, "utf-8", "", false,
          "offset " + offset + " is past the end of the file.");
    }
    int skipped = 0; // bytes that continue a character begun before the offset
    while (offset > 0 && skipped < 3 && back + skipped < got && isContinuation(buf[back + skipped])) {
      skipped++;
    }
    int start = back + skipped;
    int checkEnd = Math.min(got, start + textCap(cap));
    boolean text = switch (encoding) {
      case "base64" -> false;
      case "utf-8" -> true;
      default -> isUtf8Text(buf, start, checkEnd, checkEnd < got || !eof);
    };
    List<String> notes = new ArrayList<>();
    long first;
    long next;
    String content;
    if (text) {
      int ctxStart = 0;
      while (ctxStart < start && isContinuation(buf[ctxStart])) {
        ctxStart++;
      }
      int end = eof ? got : completeEnd(buf, start, got);
      first = offset + skipped;
      CappedText kept = new CappedText(textCap(cap), redactor, first);
      if (ctxStart < start) {
        kept.append(decode(buf, ctxStart, start), offset - back + ctxStart, start - ctxStart);
      }
      kept.append(decode(buf, start, end), first, end - start);
      if (eof) {
        kept.ended();
      }
      content = kept.text();
      next = kept.nextOffset();
      if (skipped > 0) {
        notes.add("offset " + offset + " fell inside a UTF-8 character; the text starts at offset " + first + ".");
      }
    } else {
      first = offset;
      int n = Math.min(got - back, cap);
      String secret = redactor.secretIn(buf, got, back, back + n);
      if (secret != null) {
        throw new ToolException("Bytes " + offset + " to " + (offset + n) + " of '" + path + "' contain the value of "
            + secret + ", a secret this server passes to sandboxes and redacts from what it returns. Base64"
            + " content cannot be redacted, so it is not returned; read the range with encoding \"utf-8\","
            + " where the secret shows as [REDACTED:" + secret + "].");
      }
      content = Base64.getEncoder().encodeToString(java.util.Arrays.copyOfRange(buf, back, back + n));
      next = offset + n;
      if (encoding.equals("auto")) {
        notes.add("The content is not UTF-8 text, so it is base64: decode it to get the bytes.");
      }
    }
    boolean more = next < bufferEnd;
    if (more) {
      notes.add("These are bytes " + first + " to " + next + " of " + (size != null ? size + "." : "the file.")
          + " Read on with readFile offset " + next + "; to find something in a large file, exec grep -n is"
          + " cheaper than reading all of it.");
    }
    return readResult(sb, path, size, first, next, text ? "utf-8" : "base64", content, more,
        notes.isEmpty() ? null : String.join(" ", notes));
  }

  /**
   * The text page size: with secrets to redact, never so small that a page could hold neither a
   * character nor a whole secret, which would stop paging (as for getProcessLogs).
   */
  private int textCap(int cap) {
    return redactor.isEmpty() ? cap
        : Math.min(config.maxOutputBytes(), Math.max(cap, SandboxTools.MIN_PAGE_BYTES + redactor.maxBytes()));
  }

  private static ObjectNode readResult(Sandboxes.Entry sb, String path, Long size, long offset, long next,
      String encoding, String content, boolean more, String note) {
    ObjectNode r = Json.object().put("path", path);
    r.put("size", size);
    r.put("offset", offset).put("nextOffset", next).put("encoding", encoding).put("content", content)
        .put("more", more);
    if (note != null) {
      r.put("note", note);
    }
    return SandboxTools.withSandbox(r, sb);
  }

  /** Skips {@code n} bytes; false if the stream ended first. */
  private static boolean skip(InputStream in, long n) throws IOException {
    byte[] scratch = new byte[(int) Math.min(SKIP_BUFFER, Math.max(1, n))];
    long left = n;
    while (left > 0) {
      int r = in.read(scratch, 0, (int) Math.min(scratch.length, left));
      if (r < 0) {
        return false;
      }
      left -= r;
    }
    return true;
  }

  private static void closeQuietly(InputStream in) {
    try {
      in.close();
    } catch (IOException | RuntimeException e) {
      // cancelled: the read it breaks off reports nothing to anyone
    }
  }

  private static boolean isContinuation(byte b) {
    return (b & 0xC0) == 0x80;
  }

  /**
   * Whether {@code b[from, to)} is UTF-8 text: valid UTF-8 without NUL bytes (the agent's rule
   * too). With {@code moreFollows}, a character cut at {@code to} is not held against it.
   */
  static boolean isUtf8Text(byte[] b, int from, int to, boolean moreFollows) {
    for (int i = from; i < to; i++) {
      if (b[i] == 0) {
        return false;
      }
    }
    CharsetDecoder d = StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
    ByteBuffer in = ByteBuffer.wrap(b, from, to - from);
    CharBuffer out = CharBuffer.allocate(8192);
    while (true) {
      CoderResult r = d.decode(in, out, !moreFollows);
      if (r.isError()) {
        return false;
      }
      if (r.isOverflow()) {
        out.clear();
        continue;
      }
      // Underflow: what is left is an incomplete character, fine only if its rest may follow.
      return moreFollows ? in.remaining() < 4 : !in.hasRemaining() && d.flush(out).isUnderflow();
    }
  }

  /** {@code to}, or the start of a character that {@code to} cuts. */
  static int completeEnd(byte[] b, int from, int to) {
    int i = to - 1;
    while (i > from && to - i < 4 && isContinuation(b[i])) {
      i--;
    }
    if (i < from || isContinuation(b[i])) {
      return to;
    }
    int lead = b[i] & 0xFF;
    int len = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return to - i < len ? i : to;
  }

  private static String decode(byte[] b, int from, int to) {
    return new String(b, from, to - from, StandardCharsets.UTF_8); // invalid bytes become U+FFFD
  }

  // ---- writeFile

  private ToolOutcome writeFile(FileArgs.Write args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    String path = args.path();
    String content = args.content();
    boolean base64 = "base64".equals(args.encoding());
    byte[] data;
    if (base64) {
      String compact = content.replaceAll("\\s+", ""); // models wrap long base64 in lines
      // What it decodes to, within a byte (unpadded input), checked before decoding; '=' padding is no byte.
      long decoded = (long) compact.length() / 4 * 3 - (compact.endsWith("==") ? 2 : compact.endsWith("=") ? 1 : 0);
      if (decoded > MAX_WRITE_BYTES) {
        throw tooLarge(path, decoded);
      }
      try {
        data = Base64.getDecoder().decode(compact);
      } catch (IllegalArgumentException e) {
        throw new ToolException("content is not valid base64 (" + e.getMessage() + "). Use the standard alphabet"
            + " (A-Z a-z 0-9 + /) with = padding, or send text with encoding \"utf-8\".");
      }
    } else {
      data = content.getBytes(StandardCharsets.UTF_8);
    }
    if (data.length > MAX_WRITE_BYTES) {
      throw tooLarge(path, data.length);
    }
    try {
      sb.sandbox().files().writeBytes(path, data);
    } catch (SandboxException e) {
      throw fileError(e, "writeFile", path, sb);
    }
    ObjectNode r = Json.object().put("path", path).put("bytesWritten", data.length);
    if (!base64 && content.contains(MARKER)) {
      r.put("note", "The content holds " + MARKER + "NAME], the marker the server shows in place of a secret;"
          + " the file now has the marker, not the secret.");
    }
    return ToolOutcome.ok(SandboxTools.withSandbox(r, sb));
  }

  private static ToolException tooLarge(String path, long bytes) {
    return new ToolException("The content for '" + path + "' is " + bytes + " bytes; writeFile takes at most "
        + MAX_WRITE_BYTES + " bytes per call and replaces the whole file. For a larger file, write it in parts"
        + " (part1, part2, ...) and join them with exec: cat part1 part2 > file && rm part1 part2; or have a"
        + " command in the sandbox produce it.");
  }

  // ---- listFiles

  private ToolOutcome listFiles(FileArgs.Listing args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    String path = args.path() != null ? args.path() : ".";
    ListOptions options = ListOptions.defaults().withRecursive(args.recursive())
        .withIncludeHidden(args.includeHidden());
    int max = args.maxEntries() != null ? args.maxEntries() : DEFAULT_MAX_ENTRIES;
    List<FileEntry> entries;
    try {
      entries = sb.sandbox().files().list(path, options);
    } catch (SandboxException e) {
      throw fileError(e, "listFiles", path, sb);
    }
    ObjectNode r = Json.object().put("path", path);
    ArrayNode arr = r.putArray("entries");
    long chars = 0;
    for (FileEntry e : entries) {
      chars += e.name().length() + e.relativePath().length();
      if (arr.size() == max || chars > MAX_LISTING_CHARS) {
        break;
      }
      arr.addObject()
          .put("name", e.name())
          .put("path", e.relativePath())
          .put("type", e.type().name().toLowerCase(Locale.ROOT))
          .put("size", e.size())
          .put("mode", String.format(Locale.ROOT, "%04o", e.mode() & 07777))
          .put("modifiedAt", e.modifiedAt().toString());
    }
    boolean truncated = arr.size() < entries.size();
    r.put("count", entries.size()).put("truncated", truncated);
    if (truncated) {
      r.put("note", "Only the first " + arr.size() + " of " + entries.size() + " entries are shown (a directory"
          + " before its contents, names sorted)" + (arr.size() < max ? ": a result carries at most "
          + MAX_LISTING_CHARS + " characters of names and paths" : "") + ". List a subdirectory, list without"
          + " recursive" + (arr.size() < max ? "." : ", or pass a larger maxEntries (at most 10000)."));
    }
    return ToolOutcome.ok(SandboxTools.withSandbox(r, sb));
  }

  // ---- directories, moving, deleting, asking; their results, in the order their fields are written

  record Made(String path, String sandboxId) {
  }

  record Deleted(String path, boolean deleted, String sandboxId) {
  }

  record Moved(String from, String to, String sandboxId) {
  }

  record Exists(String path, boolean exists, String sandboxId) {
  }

  record Stat(String path, String absolutePath, String type, long size, String mode, String permissions,
      String modifiedAt, long uid, long gid, String symlinkTarget, String sandboxId) {
  }

  private ToolOutcome mkdir(FileArgs.Mkdir args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    String path = args.path();
    try {
      sb.sandbox().files().mkdir(path);
    } catch (SandboxException e) {
      throw fileError(e, "mkdir", path, sb);
    }
    return ToolOutcome.ok(SandboxTools.json(new Made(path, sb.id())));
  }

  private ToolOutcome deleteFile(FileArgs.Delete args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    String path = args.path();
    boolean recursive = args.recursive();
    try {
      if (recursive) {
        sb.sandbox().files().deleteRecursively(path);
      } else {
        sb.sandbox().files().delete(path);
      }
    } catch (SandboxException e) {
      throw fileError(e, "deleteFile", path, sb);
    }
    return ToolOutcome.ok(SandboxTools.json(new Deleted(path, true, sb.id())));
  }

  private ToolOutcome move(FileArgs.Move args, String tool) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    String from = args.from();
    String to = args.to();
    try {
      if (tool.equals("renameFile")) {
        sb.sandbox().files().rename(from, to);
      } else {
        sb.sandbox().files().move(from, to);
      }
    } catch (SandboxException e) {
      throw fileError(e, tool, from + "' or '" + to, sb);
    }
    return ToolOutcome.ok(SandboxTools.json(new Moved(from, to, sb.id())));
  }

  private ToolOutcome fileExists(FileArgs.Exists args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    String path = args.path();
    boolean exists;
    try {
      exists = sb.sandbox().files().exists(path);
    } catch (SandboxException e) {
      throw fileError(e, "fileExists", path, sb);
    }
    return ToolOutcome.ok(SandboxTools.json(new Exists(path, exists, sb.id())));
  }

  private ToolOutcome statFile(FileArgs.Stat args) {
    Sandboxes.Entry sb = sandboxes.require(args.sandboxId());
    String path = args.path();
    FileStat st;
    try {
      st = sb.sandbox().files().stat(path);
    } catch (SandboxException e) {
      throw fileError(e, "statFile", path, sb);
    }
    return ToolOutcome.ok(SandboxTools.json(new Stat(path, st.absolutePath(), st.type().name().toLowerCase(Locale.ROOT),
        st.size(), st.octalMode(), st.permissions(), st.modifiedAt().toString(), st.uid(), st.gid(), st.symlinkTarget(),
        sb.id())));
  }

  // ---- errors

  /**
   * The error result for a file failure, saying what to do next; failures that are not about the
   * file (connection, auth, timeouts) go on to {@link SandboxTools#describe} unchanged.
   */
  static RuntimeException fileError(SandboxException e, String tool, String path, Sandboxes.Entry sb) {
    String where = "'" + path + "' in sandbox '" + sb.id() + "'";
    String code = e.code() == null ? "" : e.code();
    if (e instanceof SandboxFileNotFoundException) {
      return new ToolException("Not found: " + where + " (" + e.getMessage() + "). listFiles shows what exists;"
          + " relative paths start at the sandbox's workspace.");
    }
    if (e instanceof SandboxPermissionException) {
      return new ToolException("Not allowed: " + where + ": " + e.getMessage() + ". File tools reach only the"
          + " sandbox's workspace: use a path relative to it (absolute paths and symbolic links must stay inside"
          + " it). A file the sandbox user may not change needs its permissions fixed first (exec chmod).");
    }
    return switch (code) {
      case "IS_DIRECTORY" -> new ToolException("'" + path + "' is a directory: " + switch (tool) {
        case "deleteFile" -> "call deleteFile with recursive: true to delete it with everything in it.";
        case "writeFile" -> "write to a file path inside it.";
        case "readFile" -> "listFiles shows what is in it.";
        default -> e.getMessage() + ".";
      });
      case "NOT_DIRECTORY" -> new ToolException(tool.equals("listFiles")
          ? "'" + path + "' is a file, not a directory: readFile reads it, statFile describes it."
          : "A part of the path " + where + " is a file where a directory is needed: " + e.getMessage() + ".");
      case "FILE_EXISTS" -> new ToolException("Something is in the way at " + where + ": " + e.getMessage()
          + ". Delete or move it first (deleteFile, moveFile), or choose another path.");
      case "NO_SPACE" -> new ToolException("The sandbox's disk or quota is full (" + e.getMessage() + "). Delete"
          + " files it no longer needs (deleteFile) and try again.");
      case "LIST_TRUNCATED" -> new ToolException("The listing of " + where + " has more than 10000 entries, more"
          + " than the sandbox answers at once. List a subdirectory, or list without recursive.");
      case "NAME_TOO_LONG", "TOO_MANY_LINKS" -> new ToolException("The sandbox refused " + where + ": "
          + e.getMessage() + ". Use a shorter path, or one without a loop of symbolic links.");
      default -> e;
    };
  }
}
