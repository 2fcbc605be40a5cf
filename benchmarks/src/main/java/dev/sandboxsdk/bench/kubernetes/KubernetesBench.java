package dev.sandboxsdk.bench.kubernetes;

import dev.sandboxsdk.ExecResult;
import dev.sandboxsdk.SandboxSpec;
import dev.sandboxsdk.kubernetes.KubernetesAccess;
import dev.sandboxsdk.kubernetes.KubernetesProvider;
import dev.sandboxsdk.kubernetes.KubernetesSandbox;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The Kubernetes provider's costs on a real cluster, in one run: pod create until the first
 * {@code exec("true")} has answered (then destroy, which waits until the pod is gone), and the
 * latency of {@code exec("true")} through a port-forward of the API server beside the same through
 * the pod's own address, both to one pod. Prints median, min and max in milliseconds, and p99 of
 * the exec series.
 */
public class KubernetesBench {
  public static void main(String[] args) throws Exception {
    int runs = 5;
    int execs = 200;
    String image = "localhost/sandbox-agent:k8s";
    String kubeconfig = System.getenv("KUBECONFIG");
    String namespace = "sandbox-it";
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--runs" -> runs = Integer.parseInt(args[++i]);
        case "--execs" -> execs = Integer.parseInt(args[++i]);
        case "--image" -> image = args[++i];
        case "--kubeconfig" -> kubeconfig = args[++i];
        case "--namespace" -> namespace = args[++i];
        default -> throw new IllegalArgumentException("unknown option " + args[i]
            + " (--runs N, --execs N, --image NAME, --kubeconfig FILE, --namespace NS)");
      }
    }
    KubernetesProvider.Builder b = KubernetesProvider.builder().namespace(namespace).imagePullPolicy("Never");
    if (kubeconfig != null) {
      b.kubeconfig(Path.of(kubeconfig));
    }
    SandboxSpec spec = SandboxSpec.builder().image(image).build();
    try (KubernetesProvider forwarded = b.build();
         KubernetesProvider direct = b.access(KubernetesAccess.POD_IP).build()) {
      System.out.printf("API server %s, namespace %s, image %s; load %s%n", forwarded.ping(), namespace, image, load());

      List<Double> create = new ArrayList<>();
      List<Double> destroy = new ArrayList<>();
      for (int i = 0; i < runs; i++) {
        long t0 = System.nanoTime();
        KubernetesSandbox s = forwarded.create(spec);
        ExecResult r = s.exec("true");
        if (r.exitCode() != 0) {
          throw new IllegalStateException("exec true: " + r);
        }
        create.add((System.nanoTime() - t0) / 1e6);
        long t1 = System.nanoTime();
        s.destroy();
        destroy.add((System.nanoTime() - t1) / 1e6);
      }
      print("create -> first exec (port-forward)", create);
      print("destroy until the pod is gone", destroy);

      try (KubernetesSandbox s = forwarded.create(spec)) {
        KubernetesSandbox viaIp = (KubernetesSandbox) direct.get(s.id()).orElseThrow();
        try {
          for (int round = 0; round < 2; round++) { // the first round warms both paths up
            List<Double> pf = execs(s, execs);
            List<Double> ip = execs(viaIp, execs);
            if (round == 1) {
              print("exec true through the port-forward", pf);
              print("exec true to the pod's address", ip);
            }
          }
        } finally {
          viaIp.close();
        }
      }
      System.out.printf("load after: %s%n", load());
    }
  }

  private static List<Double> execs(KubernetesSandbox s, int n) {
    List<Double> ms = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      long t0 = System.nanoTime();
      if (s.exec("true").exitCode() != 0) {
        throw new IllegalStateException("exec true failed");
      }
      ms.add((System.nanoTime() - t0) / 1e6);
    }
    return ms;
  }

  private static void print(String what, List<Double> ms) {
    List<Double> s = new ArrayList<>(ms);
    Collections.sort(s);
    double median = s.size() % 2 == 1 ? s.get(s.size() / 2) : (s.get(s.size() / 2 - 1) + s.get(s.size() / 2)) / 2;
    double p99 = s.get(Math.min(s.size() - 1, (int) Math.ceil(s.size() * 0.99) - 1));
    System.out.printf("%-40s n=%d  median %.1f ms  min %.1f  max %.1f  p99 %.1f%n", what, s.size(), median, s.get(0),
        s.get(s.size() - 1), p99);
  }

  private static String load() throws Exception {
    return new String(java.nio.file.Files.readAllBytes(Path.of("/proc/loadavg"))).strip();
  }
}
