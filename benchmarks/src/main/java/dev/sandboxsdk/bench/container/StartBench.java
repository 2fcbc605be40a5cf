package dev.sandboxsdk.bench.container;

import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.local.LocalSandbox;
import dev.sandboxsdk.Sandbox;
import dev.sandboxsdk.container.ContainerProvider;
import dev.sandboxsdk.container.ContainerSandbox;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Supplier;

/**
 * Start-up of a sandbox until its first command has run, container beside local, in one run:
 * {@code start()} then {@code exec("true")} until it succeeds, then {@code close()} (which
 * removes the container). Prints median, min and max of each, in milliseconds.
 */
public class StartBench {
  public static void main(String[] args) throws Exception {
    int runs = 5;
    String image = "sandbox-agent";
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--runs" -> runs = Integer.parseInt(args[++i]);
        case "--image" -> image = args[++i];
        default -> throw new IllegalArgumentException("unknown option " + args[i] + " (--runs N, --image NAME)");
      }
    }
    String img = image;
    try (ContainerProvider p = ContainerProvider.fromEnvironment()) {
      System.out.println("engine: " + p.ping() + " at " + p.engineHost() + "; image " + img + "; " + runs + " runs each");
    }
    // One of each first, not counted: class loading and the engine's first-use costs.
    measure(1, LocalSandbox::start);
    measure(1, () -> ContainerSandbox.builder().image(img).start());
    report("LocalSandbox", measure(runs, LocalSandbox::start));
    report("ContainerSandbox", measure(runs, () -> ContainerSandbox.builder().image(img).start()));
  }

  private record Times(List<Double> firstExec, List<Double> close) {}

  private static Times measure(int runs, Supplier<? extends Sandbox> start) {
    List<Double> first = new ArrayList<>();
    List<Double> close = new ArrayList<>();
    for (int i = 0; i < runs; i++) {
      long t0 = System.nanoTime();
      Sandbox s = start.get();
      ExecResult r = s.exec("true");
      long t1 = System.nanoTime();
      if (r.exitCode() != 0) {
        throw new IllegalStateException("first exec failed: " + r);
      }
      s.close();
      long t2 = System.nanoTime();
      first.add((t1 - t0) / 1e6);
      close.add((t2 - t1) / 1e6);
    }
    return new Times(first, close);
  }

  private static void report(String what, Times t) {
    System.out.printf("%-17s start to first successful exec: median %7.1f ms (min %7.1f, max %7.1f); close: median %7.1f ms%n",
        what, median(t.firstExec()), Collections.min(t.firstExec()), Collections.max(t.firstExec()), median(t.close()));
  }

  private static double median(List<Double> xs) {
    List<Double> s = new ArrayList<>(xs);
    Collections.sort(s);
    int n = s.size();
    return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
  }
}
