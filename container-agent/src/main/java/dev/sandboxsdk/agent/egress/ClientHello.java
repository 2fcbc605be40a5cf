package dev.sandboxsdk.agent.egress;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Reads the server name (SNI) from the first bytes a TLS client sends: the ClientHello, which may
 * span several handshake records. Only what is needed is read, and every length is checked
 * against what arrived.
 */
final class ClientHello {
  /** A ClientHello larger than this is refused (real ones are a few KiB). */
  static final int MAX_BYTES = 64 * 1024;

  private ClientHello() {}

  /** What the first bytes are. */
  enum Kind {
    /** Not a TLS handshake record: not TLS, nothing to check. */
    NOT_TLS,
    /** A TLS handshake that has not fully arrived yet. */
    INCOMPLETE,
    /** A complete ClientHello; {@link Result#serverName()} is its SNI, or null without one. */
    COMPLETE,
    /** A TLS handshake that is not a well-formed ClientHello. */
    MALFORMED
  }

  record Result(Kind kind, String serverName) {}

  /** Looks at the first {@code length} bytes the client sent. */
  static Result read(byte[] b, int length) {
    if (length == 0) {
      return new Result(Kind.INCOMPLETE, null);
    }
    if (b[0] != 0x16) {
      return new Result(Kind.NOT_TLS, null);
    }
    if (length > MAX_BYTES) {
      return new Result(Kind.MALFORMED, null);
    }
    // Gather the handshake bytes from consecutive records until the whole message is there.
    byte[] hs = new byte[length];
    int hsLength = 0;
    int at = 0;
    while (true) {
      if (at + 5 > length) {
        return new Result(Kind.INCOMPLETE, null);
      }
      if (b[at] != 0x16 || b[at + 1] != 3) {
        return new Result(Kind.MALFORMED, null);
      }
      int recordLength = u16(b, at + 3);
      if (recordLength == 0 || recordLength > 16384 + 2048) {
        return new Result(Kind.MALFORMED, null);
      }
      if (at + 5 + recordLength > length) {
        return new Result(Kind.INCOMPLETE, null);
      }
      System.arraycopy(b, at + 5, hs, hsLength, recordLength);
      hsLength += recordLength;
      at += 5 + recordLength;
      if (hsLength >= 4) {
        if (hs[0] != 1) {
          return new Result(Kind.MALFORMED, null);
        }
        int messageLength = (u8(hs, 1) << 16) | u16(hs, 2);
        if (messageLength > MAX_BYTES) {
          return new Result(Kind.MALFORMED, null);
        }
        if (hsLength >= 4 + messageLength) {
          return parseHello(Arrays.copyOf(hs, 4 + messageLength), 4, 4 + messageLength);
        }
      }
    }
  }

  private static Result parseHello(byte[] b, int from, int end) {
    try {
      int at = from + 2 + 32; // client version, random
      at += 1 + u8(b, at); // session id
      at += 2 + u16(b, at); // cipher suites
      at += 1 + u8(b, at); // compression methods
      if (at == end) {
        return new Result(Kind.COMPLETE, null); // no extensions
      }
      int extensionsEnd = at + 2 + u16(b, at);
      at += 2;
      if (extensionsEnd > end) {
        return new Result(Kind.MALFORMED, null);
      }
      while (at + 4 <= extensionsEnd) {
        int type = u16(b, at);
        int length = u16(b, at + 2);
        at += 4;
        if (at + length > extensionsEnd) {
          return new Result(Kind.MALFORMED, null);
        }
        if (type == 0) {
          return serverName(b, at, at + length);
        }
        at += length;
      }
      return at == extensionsEnd ? new Result(Kind.COMPLETE, null) : new Result(Kind.MALFORMED, null);
    } catch (ArrayIndexOutOfBoundsException e) {
      return new Result(Kind.MALFORMED, null);
    }
  }

  private static Result serverName(byte[] b, int from, int end) {
    int listEnd = from + 2 + u16(b, from);
    if (listEnd != end) {
      return new Result(Kind.MALFORMED, null);
    }
    int at = from + 2;
    while (at + 3 <= listEnd) {
      int nameType = u8(b, at);
      int length = u16(b, at + 1);
      at += 3;
      if (at + length > listEnd || length == 0) {
        return new Result(Kind.MALFORMED, null);
      }
      if (nameType == 0) {
        String name = new String(b, at, length, StandardCharsets.ISO_8859_1);
        return name.chars().allMatch(c -> c > 0x20 && c < 0x7f)
            ? new Result(Kind.COMPLETE, name) : new Result(Kind.MALFORMED, null);
      }
      at += length;
    }
    return new Result(Kind.MALFORMED, null);
  }

  private static int u8(byte[] b, int at) {
    if (at >= b.length) {
      throw new ArrayIndexOutOfBoundsException(at);
    }
    return b[at] & 0xff;
  }

  private static int u16(byte[] b, int at) {
    return (u8(b, at) << 8) | u8(b, at + 1);
  }
}
