package dev.sandboxsdk.samples;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Run by {@link DocSnippetsIT} in a child JVM whose environment the test controls: runs the
 * {@code run()} method of each snippet class named in the arguments, one after another, and prints
 * {@code SNIPPET <name> OK} or {@code SNIPPET <name> FAILED <stack trace>} for each.
 */
final class DocSnippetsMain {
  private static final long TIMEOUT_SECONDS = 60;

  private DocSnippetsMain() {}

  public static void main(String[] args) throws Exception {
    ExecutorService runner = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "snippet");
      t.setDaemon(true);
      return t;
    });
    for (String name : args) {
      System.out.println("SNIPPET " + name + " START");
      Future<?> run = runner.submit(() -> {
        Class.forName(name).getMethod("run").invoke(null);
        return null;
      });
      try {
        run.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        System.out.println("SNIPPET " + name + " OK");
      } catch (TimeoutException e) {
        run.cancel(true);
        System.out.println("SNIPPET " + name + " FAILED: did not finish within " + TIMEOUT_SECONDS + " s");
      } catch (Exception e) {
        Throwable cause = e.getCause() != null && e.getCause().getCause() != null ? e.getCause().getCause() : e;
        StringWriter trace = new StringWriter();
        cause.printStackTrace(new PrintWriter(trace));
        System.out.println("SNIPPET " + name + " FAILED " + trace);
      }
      System.out.flush();
    }
    System.exit(0); // shutdown hooks close any sandbox a failed snippet left open
  }
}
