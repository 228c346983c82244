package org.yarnrl.yarn;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.SchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.SchedulerEventType;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler;

/**
 * Times the ResourceManager's handling of NODE_UPDATE events, identically for the native FifoScheduler and for
 * RlScheduler (the two public subclasses below only wrap {@code handle}), for the plugin-overhead benchmark.
 */
final class NodeUpdateTimer {
  private static long[] samples = new long[1 << 16];
  private static int count;

  private NodeUpdateTimer() {}

  static synchronized void record(long nanos) {
    if (count == samples.length) {
      samples = Arrays.copyOf(samples, samples.length * 2);
    }
    samples[count++] = nanos;
  }

  static synchronized void reset() {
    count = 0;
  }

  /** count, mean, p50, p99 and max in microseconds. */
  static synchronized Map<String, Object> summary() {
    long[] s = Arrays.copyOf(samples, count);
    Arrays.sort(s);
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("count", count);
    if (count > 0) {
      m.put("mean_us", Arrays.stream(s).average().orElse(0) / 1e3);
      m.put("p50_us", s[count / 2] / 1e3);
      m.put("p99_us", s[Math.min(count - 1, (int) Math.ceil(count * 0.99) - 1)] / 1e3);
      m.put("max_us", s[count - 1] / 1e3);
    }
    return m;
  }

  static void timed(SchedulerEvent event, Runnable handle) {
    if (event.getType() == SchedulerEventType.NODE_UPDATE) {
      long start = System.nanoTime();
      handle.run();
      record(System.nanoTime() - start);
    } else {
      handle.run();
    }
  }

  /** The native FifoScheduler, timed. */
  public static class TimedFifoScheduler extends FifoScheduler {
    @Override
    public void handle(SchedulerEvent event) {
      timed(event, () -> super.handle(event));
    }
  }

  /** RlScheduler, timed the same way. */
  public static class TimedRlScheduler extends RlScheduler {
    @Override
    public void handle(SchedulerEvent event) {
      timed(event, () -> super.handle(event));
    }
  }
}
