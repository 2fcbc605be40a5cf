package dev.sandboxsdk.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The executor wrapper the JDK server reads headers on: tasks that have not shown a token are cut
 * (their blocking channel read is interrupted, which closes the channel) past the header deadline
 * or past the share, oldest first; authenticated ones never are.
 */
class AdmissionTest {
  final ExecutorService pool = Executors.newCachedThreadPool();
  final List<AutoCloseable> closing = new ArrayList<>();

  @AfterEach
  void cleanUp() throws Exception {
    for (AutoCloseable c : closing) {
      c.close();
    }
    pool.shutdownNow();
  }

  /** A connected channel pair; the server side is returned, blocking, with nothing sent on it. */
  SocketChannel silentConnection() throws IOException {
    ServerSocketChannel server = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
    SocketChannel client = SocketChannel.open(server.getLocalAddress());
    SocketChannel accepted = server.accept();
    closing.add(server);
    closing.add(client);
    closing.add(accepted);
    return accepted;
  }

  /**
   * Submits a task that blocks reading {@code channel}, as the JDK's header reading does (after
   * {@code authenticate}, as a handler does once it saw the token); completes with how it ended.
   */
  CompletableFuture<String> reader(Admission admission, SocketChannel channel, boolean authenticate) {
    CompletableFuture<String> outcome = new CompletableFuture<>();
    admission.executor(pool).execute(() -> {
      try {
        Admission.headersDone();
        if (authenticate) {
          Admission.authenticated();
        }
        channel.read(ByteBuffer.allocate(1));
        outcome.complete("read");
      } catch (ClosedByInterruptException e) {
        outcome.complete("cut");
      } catch (IOException e) {
        outcome.complete(e.toString());
      }
    });
    return outcome;
  }

  @Test
  void theOldestUnauthenticatedReaderIsCutWhenTheShareIsExceeded() throws Exception {
    Admission admission = new Admission(8, 30); // 4 may read headers at once; deadline 10 s
    closing.add(admission);
    assertThat(admission.maxReading()).isEqualTo(4);
    List<CompletableFuture<String>> readers = new ArrayList<>();
    CompletableFuture<String> authenticated = reader(admission, silentConnection(), true);
    for (int i = 0; i < 5; i++) {
      readers.add(reader(admission, silentConnection(), false));
      Thread.sleep(50); // distinct start times: the first is the oldest
    }
    assertThat(readers.get(0).get(10, TimeUnit.SECONDS)).isEqualTo("cut");
    Thread.sleep(300);
    for (int i = 1; i < 5; i++) {
      assertThat(readers.get(i)).as("reader %d", i).isNotDone();
    }
    assertThat(authenticated).as("an authenticated reader is not counted").isNotDone();
    assertThat(admission.shedCount()).isEqualTo(1);
  }

  @Test
  void unauthenticatedReadersAreCutAtTheHeaderDeadlineAndAuthenticatedOnesAreNot() throws Exception {
    Admission admission = new Admission(64, 1); // the request timeout (1 s) caps the header deadline
    closing.add(admission);
    CompletableFuture<String> stranger = reader(admission, silentConnection(), false);
    CompletableFuture<String> holder = reader(admission, silentConnection(), true);
    long start = System.nanoTime();
    assertThat(stranger.get(10, TimeUnit.SECONDS)).isEqualTo("cut");
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertThat(ms).as("cut after the 1 s deadline").isBetween(900L, 5_000L);
    Thread.sleep(1_500);
    assertThat(holder).as("past the deadline, authenticated").isNotDone();
  }

  @Test
  void theNextTaskOnACutThreadIsNotInterrupted() throws Exception {
    ExecutorService one = Executors.newSingleThreadExecutor();
    try {
      Admission admission = new Admission(64, 1);
      closing.add(admission);
      CompletableFuture<String> first = new CompletableFuture<>();
      SocketChannel channel = silentConnection();
      admission.executor(one).execute(() -> {
        try {
          channel.read(ByteBuffer.allocate(1));
          first.complete("read");
        } catch (IOException e) {
          first.complete(e.getClass().getSimpleName());
        }
      });
      assertThat(first.get(10, TimeUnit.SECONDS)).isEqualTo("ClosedByInterruptException");
      CompletableFuture<Boolean> second = new CompletableFuture<>();
      admission.executor(one).execute(() -> {
        try {
          Admission.authenticated();
          second.complete(Thread.currentThread().isInterrupted());
        } catch (IOException e) {
          second.completeExceptionally(e);
        }
      });
      assertThat(second.get(10, TimeUnit.SECONDS)).as("interrupted").isFalse();
    } finally {
      one.shutdownNow();
    }
  }
}
