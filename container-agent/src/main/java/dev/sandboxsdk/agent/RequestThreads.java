package dev.sandboxsdk.agent;

import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP server's threads: one per exchange in progress, made on demand (streams hold theirs for
 * their whole life) and dropped after 5 s idle, plus a few made at start that never go. When the
 * OS refuses a new thread (a fork bomb holds every slot of the container's pids limit) an exchange
 * runs on one of those, queued behind the others there if they are busy: the agent can still take
 * a kill-all, which needs no new thread or process either, and so free the slots again.
 */
final class RequestThreads extends AbstractExecutorService {
  private static final Logger log = LoggerFactory.getLogger(RequestThreads.class);
  /** Stack size of a request thread. */
  private static final long STACK = 512 * 1024;

  private final ThreadPoolExecutor onDemand;
  private final ThreadPoolExecutor reserve;
  private final AtomicInteger reserveUses = new AtomicInteger();
  private volatile boolean refusalLogged;

  /** @param reserved how many threads are made now and kept for when no new one can be made */
  RequestThreads(int reserved) {
    this(reserved, threads("agent-http-"));
  }

  /** @param onDemandThreads makes the threads beyond the reserved ones (a test's may refuse, as the OS does) */
  RequestThreads(int reserved, ThreadFactory onDemandThreads) {
    this.onDemand = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 5, TimeUnit.SECONDS, new SynchronousQueue<>(),
        onDemandThreads);
    this.reserve = new ThreadPoolExecutor(reserved, reserved, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
        threads("agent-http-reserve-"));
    reserve.prestartAllCoreThreads();
  }

  private static ThreadFactory threads(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(null, r, prefix + n.incrementAndGet(), STACK);
      t.setDaemon(true);
      return t;
    };
  }

  /**
   * Runs {@code task} on a thread of its own, or, when none can be made, on a reserved one. Never
   * throws while running (the JDK server's dispatcher would die of an error thrown here).
   */
  @Override
  public void execute(Runnable task) {
    if (!onDemand.isShutdown()) {
      try {
        onDemand.execute(task);
        refusalLogged = false;
        return;
      } catch (OutOfMemoryError | RejectedExecutionException e) {
        // OutOfMemoryError "unable to create native thread": the pids (or nproc) limit is reached
        if (!refusalLogged) {
          refusalLogged = true;
          log.warn("no new thread for a request ({}); requests run on the {} reserved threads until there is room",
              e.toString(), reserve.getCorePoolSize());
        }
      }
    }
    reserveUses.incrementAndGet();
    reserve.execute(task); // no new thread: its queue is unbounded; after shutdown it rejects
  }

  /** How many exchanges ran on a reserved thread because no new thread could be made. */
  int reserveUses() {
    return reserveUses.get();
  }

  @Override
  public void shutdown() {
    onDemand.shutdown();
    reserve.shutdown();
  }

  @Override
  public List<Runnable> shutdownNow() {
    List<Runnable> left = new java.util.ArrayList<>(onDemand.shutdownNow());
    left.addAll(reserve.shutdownNow());
    return left;
  }

  @Override
  public boolean isShutdown() {
    return onDemand.isShutdown() && reserve.isShutdown();
  }

  @Override
  public boolean isTerminated() {
    return onDemand.isTerminated() && reserve.isTerminated();
  }

  @Override
  public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
    long deadline = System.nanoTime() + unit.toNanos(timeout);
    return onDemand.awaitTermination(timeout, unit)
        && reserve.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
  }
}
