package dev.sandboxsdk.agent.egress;

import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;

/**
 * The few DER encodings (ITU-T X.690) an X.509 certificate needs: each method returns one
 * complete tag-length-value. Enough for {@link CertificateAuthority}, nothing more.
 */
final class Der {
  private static final DateTimeFormatter UTC_TIME = DateTimeFormatter.ofPattern("yyMMddHHmmss'Z'");
  private static final DateTimeFormatter GENERALIZED_TIME = DateTimeFormatter.ofPattern("yyyyMMddHHmmss'Z'");

  private Der() {}

  static byte[] tlv(int tag, byte[]... parts) {
    ByteArrayOutputStream content = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      content.writeBytes(p);
    }
    byte[] body = content.toByteArray();
    ByteArrayOutputStream out = new ByteArrayOutputStream(body.length + 6);
    out.write(tag);
    int n = body.length;
    if (n < 0x80) {
      out.write(n);
    } else {
      int bytes = n > 0xffffff ? 4 : n > 0xffff ? 3 : n > 0xff ? 2 : 1;
      out.write(0x80 | bytes);
      for (int i = bytes - 1; i >= 0; i--) {
        out.write(n >>> (8 * i));
      }
    }
    out.writeBytes(body);
    return out.toByteArray();
  }

  static byte[] sequence(byte[]... parts) {
    return tlv(0x30, parts);
  }

  static byte[] set(byte[]... parts) {
    return tlv(0x31, parts);
  }

  static byte[] integer(BigInteger value) {
    return tlv(0x02, value.toByteArray());
  }

  static byte[] bool(boolean value) {
    return tlv(0x01, new byte[] {(byte) (value ? 0xff : 0)});
  }

  static byte[] octets(byte[] value) {
    return tlv(0x04, value);
  }

  /** A BIT STRING of whole bytes. */
  static byte[] bits(byte[] value) {
    byte[] body = new byte[value.length + 1];
    System.arraycopy(value, 0, body, 1, value.length);
    return tlv(0x03, body);
  }

  /** A BIT STRING of one byte of flags, its trailing zero bits marked unused as DER wants. */
  static byte[] flags(int flags) {
    int unused = Integer.numberOfTrailingZeros(flags & 0xff);
    return tlv(0x03, new byte[] {(byte) unused, (byte) flags});
  }

  static byte[] utf8(String value) {
    return tlv(0x0c, value.getBytes(StandardCharsets.UTF_8));
  }

  /** UTCTime before 2050, GeneralizedTime from then on (RFC 5280, 4.1.2.5). */
  static byte[] time(ZonedDateTime t) {
    ZonedDateTime utc = t.withZoneSameInstant(ZoneOffset.UTC);
    return utc.getYear() < 2050 ? tlv(0x17, UTC_TIME.format(utc).getBytes(StandardCharsets.US_ASCII))
        : tlv(0x18, GENERALIZED_TIME.format(utc).getBytes(StandardCharsets.US_ASCII));
  }

  /** An OBJECT IDENTIFIER from its dotted form. */
  static byte[] oid(String dotted) {
    String[] arcs = dotted.split("\\.");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    base128(out, Long.parseLong(arcs[0]) * 40 + Long.parseLong(arcs[1]));
    for (int i = 2; i < arcs.length; i++) {
      base128(out, Long.parseLong(arcs[i]));
    }
    return tlv(0x06, out.toByteArray());
  }

  private static void base128(ByteArrayOutputStream out, long value) {
    int groups = 1;
    while (value >>> (7 * groups) != 0) {
      groups++;
    }
    for (int i = groups - 1; i >= 0; i--) {
      int b = (int) ((value >>> (7 * i)) & 0x7f);
      out.write(i == 0 ? b : b | 0x80);
    }
  }
}
