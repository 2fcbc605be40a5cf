package dev.sandboxsdk.testkit;

import java.util.SplittableRandom;
import java.util.function.Consumer;

/**
 * Property checks over generated cases from one seed, random unless {@code -Dproperty.seed=N}
 * fixes it; a failure names the seed and the case, so it can be replayed.
 */
public final class Property {
  private Property() {}

  /** Runs {@code property} on {@code cases} generators drawn from one seed; a failure names the seed. */
  public static void forAll(int cases, Consumer<SplittableRandom> property) {
    long seed = Long.getLong("property.seed", System.nanoTime());
    SplittableRandom random = new SplittableRandom(seed);
    for (int i = 0; i < cases; i++) {
      try {
        property.accept(random);
      } catch (AssertionError e) {
        throw new AssertionError("case " + i + " of seed " + seed + " (replay: -Dproperty.seed=" + seed + "): "
            + e.getMessage(), e);
      }
    }
  }
}
