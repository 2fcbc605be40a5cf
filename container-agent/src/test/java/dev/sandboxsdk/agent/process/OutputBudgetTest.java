package dev.sandboxsdk.agent.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class OutputBudgetTest {

  @Test
  void reservesUpToTheLimitAndRefusesBeyondIt() {
    OutputBudget budget = new OutputBudget(100);

    assertThat(budget.tryReserve(60)).isTrue();
    assertThat(budget.tryReserve(40)).isTrue();
    assertThat(budget.tryReserve(1)).isFalse();
    assertThat(budget.used()).isEqualTo(100);

    budget.release(30);
    assertThat(budget.tryReserve(30)).isTrue();
    assertThat(budget.used()).isEqualTo(100);
  }

  @Test
  void evictsFinishedHoldersOldestFirstAndOnlyAsManyAsNeeded() {
    OutputBudget budget = new OutputBudget(100);
    List<String> evicted = new ArrayList<>();
    for (String name : List.of("first", "second", "third")) {
      budget.tryReserve(30);
      budget.addEvictable(() -> {
        evicted.add(name);
        budget.release(30);
        return 30;
      });
    }

    assertThat(budget.tryReserve(40)).isTrue(); // 90 used: one eviction frees enough

    assertThat(evicted).containsExactly("first");
    assertThat(budget.used()).isEqualTo(100);
    assertThat(budget.evictedBytes()).isEqualTo(30);
    assertThat(budget.evictableCount()).isEqualTo(2);
  }

  @Test
  void refusesWhenEvictingEverythingIsNotEnough() {
    OutputBudget budget = new OutputBudget(100);
    budget.tryReserve(80); // a running exec: not evictable
    budget.tryReserve(10);
    budget.addEvictable(() -> {
      budget.release(10);
      return 10;
    });

    assertThat(budget.tryReserve(50)).isFalse();

    assertThat(budget.used()).isEqualTo(80); // the finished window went anyway
    assertThat(budget.evictableCount()).isZero();
  }

  @Test
  void skipsAHolderThatIsBusyAndKeepsItForLater() {
    OutputBudget budget = new OutputBudget(100);
    budget.tryReserve(50);
    budget.addEvictable(() -> -1); // its lock is held right now
    budget.tryReserve(50);
    budget.addEvictable(() -> {
      budget.release(50);
      return 50;
    });

    assertThat(budget.tryReserve(50)).isTrue();

    assertThat(budget.evictableCount()).isEqualTo(1);
  }

  @Test
  void aWindowThatCannotGrowKeepsItsSizeAndStillCountsEveryByte() {
    OutputBudget budget = new OutputBudget(OutputLog.INITIAL_BYTES + 10);
    OutputLog log = new OutputLog(1 << 20, budget);
    byte[] chunk = new byte[OutputLog.INITIAL_BYTES * 4];
    chunk[chunk.length - 1] = 'z';

    log.append(chunk, 0, chunk.length);

    assertThat(log.allocated()).isEqualTo(OutputLog.INITIAL_BYTES);
    assertThat(budget.used()).isEqualTo(OutputLog.INITIAL_BYTES);
    assertThat(log.end()).isEqualTo(chunk.length);
    assertThat(log.oldest()).isEqualTo(chunk.length - OutputLog.INITIAL_BYTES);
    byte[] last = new byte[1];
    log.read(chunk.length - 1, last, 0, 1);
    assertThat(last[0]).isEqualTo((byte) 'z');
  }

  @Test
  void evictingAWindowReleasesItsBufferAndReadersSeeTheBytesAsDropped() {
    OutputBudget budget = new OutputBudget(1 << 20);
    OutputLog log = new OutputLog(1 << 16, budget);
    byte[] data = "0123456789".repeat(1000).getBytes(StandardCharsets.US_ASCII);
    log.append(data, 0, data.length);
    assertThat(budget.used()).isGreaterThanOrEqualTo(data.length);

    long freed = log.evict();

    assertThat(freed).isGreaterThanOrEqualTo(data.length);
    assertThat(budget.used()).isZero();
    assertThat(log.end()).isEqualTo(data.length);
    assertThat(log.oldest()).isEqualTo(data.length); // everything before is gone
    log.append(data, 0, 10); // a lingering child writes on: counted, not kept
    assertThat(log.end()).isEqualTo(data.length + 10);
    assertThat(log.oldest()).isEqualTo(data.length + 10);
    assertThat(budget.used()).isZero();
  }

  @Test
  void theDefaultIsAQuarterOfTheMaxHeap() {
    assertThat(OutputBudget.resolve(0)).isEqualTo(Runtime.getRuntime().maxMemory() / 100 * 25 >> 20 << 20);
    assertThat(OutputBudget.resolve(12345)).isEqualTo(12345);
    assertThatThrownBy(() -> new OutputBudget(0)).isInstanceOf(IllegalArgumentException.class);
  }
}
