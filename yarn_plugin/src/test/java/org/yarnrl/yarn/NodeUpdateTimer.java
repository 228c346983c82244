package org.yarnrl.yarn;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.QueueMetrics;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.SchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.SchedulerEventType;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler;

/**
 * Times the ResourceManager's handling of NODE_UPDATE events, identically for the native FifoScheduler and for
 * RlScheduler (the two public subclasses below only wrap {@code handle}), for the plugin-overhead benchmark.
 */
final class NodeUpdateTimer {
  /** Every NODE_UPDATE, and those that allocated at least one container. */
  private static final Samples ALL = new Samples();
  private static final Samples ALLOCATING = new Samples();

  private NodeUpdateTimer() {}

  private static final class Samples {
    long[] values = new long[1 << 16];
    int count;

    void add(long nanos) {
      if (count == values.length) {
        values = Arrays.copyOf(values, values.length * 2);
      }
      values[count++] = nanos;
    }
  }

  static synchronized void record(long nanos, boolean allocated) {
    ALL.add(nanos);
    if (allocated) {
      ALLOCATING.add(nanos);
    }
  }

  static synchronized void reset() {
    ALL.count = 0;
    ALLOCATING.count = 0;
  }

  /** Timings of all node updates, and of those that allocated containers ("allocating"). */
  static synchronized Map<String, Object> summary() {
    Map<String, Object> m = summary(ALL);
    m.put("allocating", summary(ALLOCATING));
    return m;
  }

  /** count, mean, p50, p99 and max in microseconds. */
  private static Map<String, Object> summary(Samples samples) {
    int count = samples.count;
    long[] s = Arrays.copyOf(samples.values, count);
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

  static void timed(SchedulerEvent event, QueueMetrics metrics, Runnable handle) {
    if (event.getType() == SchedulerEventType.NODE_UPDATE) {
      long allocatedBefore = metrics.getAggregateAllocatedContainers();
      long start = System.nanoTime();
      handle.run();
      long nanos = System.nanoTime() - start;
      record(nanos, metrics.getAggregateAllocatedContainers() != allocatedBefore);
    } else {
      handle.run();
    }
  }

  /** The native FifoScheduler, timed. */
  public static class TimedFifoScheduler extends FifoScheduler {
    @Override
    public void handle(SchedulerEvent event) {
      timed(event, getRootQueueMetrics(), () -> super.handle(event));
    }
  }

  /** RlScheduler, timed the same way. */
  public static class TimedRlScheduler extends RlScheduler {
    @Override
    public void handle(SchedulerEvent event) {
      timed(event, getRootQueueMetrics(), () -> super.handle(event));
    }
  }
}
