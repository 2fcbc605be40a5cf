package dev.sandboxsdk.bench.agent;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * What {@code --isolation bwrap} costs per command: starts the agent once per isolation mode and
 * times {@code POST /api/execute} of {@code {"argv":["true"]}} and {@code {"command":"true"}}
 * (sequential, one client), printing p50, p90, p99 and max. JDK only; run it with
 *
 * <pre>
 *   bash benchmarks/scripts/isolation.sh [--jar container-agent/target/container-agent.jar]
 *        [--calls 500] [--warmup 100] [--modes none,bwrap] [--smoke]
 * </pre>
 *
 * Percentiles: samples sorted ascending, p-th percentile = sample at index ceil(p*n)-1.
 */
public class IsolationBench {
  public static void main(String[] args) throws Exception {
    String jar = "container-agent/target/container-agent.jar";
    int calls = 500;
    int warmup = 100;
    List<String> modes = List.of("none", "bwrap");
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--jar" -> jar = args[++i];
        case "--calls" -> calls = Integer.parseInt(args[++i]);
        case "--warmup" -> warmup = Integer.parseInt(args[++i]);
        case "--modes" -> modes = Arrays.asList(args[++i].split(","));
        case "--smoke" -> { // seconds-long, for CI: both modes still run and every exec must succeed
          calls = 20;
          warmup = 5;
        }
        default -> throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    if (!Files.isRegularFile(Path.of(jar))) {
      throw new IllegalStateException(jar + " is missing: ./mvnw -o -q -pl container-agent package -DskipTests");
    }
    System.out.printf("IsolationBench: %d calls after %d warm-up calls, %d CPUs, %s%n", calls, warmup,
        Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"));
    for (String mode : modes) {
      Path ws = Files.createTempDirectory("isolation-bench-");
      StdinAgent agent = StdinAgent.start(jar, ws, "--isolation", mode);
      String isolation = agent.isolation();
      if (!isolation.equals(mode)) { // the figures would be labelled with a mode that did not run
        agent.close();
        deleteTree(ws);
        throw new IllegalStateException("asked for --isolation " + mode + ", the agent reports " + isolation + " in force");
      }
      HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      try {
        for (String body : List.of("{\"argv\":[\"true\"]}", "{\"command\":\"true\"}")) {
          HttpRequest request = HttpRequest.newBuilder(URI.create(agent.url() + "/api/execute"))
              .header("Authorization", "Bearer " + agent.token()).header("Content-Type", "application/json")
              .POST(HttpRequest.BodyPublishers.ofString(body)).build();
          long[] samples = new long[calls];
          for (int i = -warmup; i < calls; i++) {
            long t0 = System.nanoTime();
            HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
            long t = System.nanoTime() - t0;
            if (r.statusCode() != 200 || !r.body().contains("\"exitCode\":0")) {
              throw new IllegalStateException("exec failed: " + r.statusCode() + " " + r.body());
            }
            if (i >= 0) {
              samples[i] = t;
            }
          }
          Arrays.sort(samples);
          System.out.printf("--isolation %-5s (in force: %-5s) exec %-22s p50 %6.2f ms  p90 %6.2f ms  p99 %6.2f ms  max %6.2f ms%n",
              mode, isolation, body, ms(pct(samples, 0.50)), ms(pct(samples, 0.90)), ms(pct(samples, 0.99)),
              ms(samples[samples.length - 1]));
        }
      } finally {
        agent.close();
        deleteTree(ws);
      }
    }
  }

  static long pct(long[] sorted, double p) {
    return sorted[Math.max(0, (int) Math.ceil(p * sorted.length) - 1)];
  }

  static double ms(long nanos) {
    return nanos / 1e6;
  }

  static void deleteTree(Path dir) throws IOException {
    try (var paths = Files.walk(dir)) {
      List<Path> all = new ArrayList<>(paths.toList());
      java.util.Collections.reverse(all);
      for (Path p : all) {
        Files.deleteIfExists(p);
      }
    }
  }
}
