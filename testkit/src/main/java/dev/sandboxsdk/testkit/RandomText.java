package dev.sandboxsdk.testkit;

import java.util.SplittableRandom;

/** Random strings and bytes for property tests, biased towards the inputs a parser can go wrong on. */
public final class RandomText {
  private RandomText() {}

  /** {@code length} characters drawn from {@code alphabet}. */
  public static String string(SplittableRandom random, String alphabet, int length) {
    StringBuilder s = new StringBuilder(length);
    for (int i = 0; i < length; i++) {
      s.append(alphabet.charAt(random.nextInt(alphabet.length())));
    }
    return s.toString();
  }

  /** Up to {@code maxLength} bytes, four in five of them from {@code favoured}, the rest any byte. */
  public static byte[] bytes(SplittableRandom random, int maxLength, int[] favoured) {
    byte[] bytes = new byte[random.nextInt(maxLength + 1)];
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] = (byte) (random.nextInt(5) < 4 ? favoured[random.nextInt(favoured.length)] : random.nextInt(256));
    }
    return bytes;
  }
}
