package org.yarnrl.yarn;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.exceptions.YarnRuntimeException;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.fica.FiCaSchedulerApp;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.fica.FiCaSchedulerNode;
import org.apache.hadoop.yarn.server.scheduler.SchedulerRequestKey;
import org.apache.hadoop.yarn.util.resource.ResourceCalculator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.yarnrl.v1.Assignment;
import org.yarnrl.v1.ScheduleResponse;

/**
 * Bounded waiting on the plugin's side: an engine that leaves an ask pending for ever (a bad model, a bug, a policy
 * with an unbounded delay) cannot starve it.
 *
 * <p>Per pending ask (application attempt + scheduler key) the plugin counts the heartbeats on which the engine's
 * answer left it pending although it could go on the node (it fitted the node's unallocated resource by the RM's
 * calculator and its locality allowed the node), and the time since the first of them. Once either passes the cap,
 * the next heartbeat of a node the ask can use is scheduled natively (FifoScheduler's or CapacityScheduler's own
 * allocation), counted on JMX by reason ({@code FallbacksWaitHeartbeats}, {@code FallbacksWaitTime}) and logged
 * once. A container for the ask, from the engine or native, ends its wait.
 *
 * <p>The cap, as CapacityScheduler bounds its own delay scheduling: {@value #MAX_HEARTBEATS} (default: -1 =
 * {@code node-locality-delay} + {@code rack-locality-additional-delay}, the latter -1 meaning the number of nodes:
 * 40 + nodes with CapacityScheduler's defaults, read from {@code yarn.scheduler.capacity.*}; the engine's Delay,
 * ACL and CLQLMRS policies at their defaults wait at most the number of nodes) and {@value #MAX_MS} (default
 * {@value #DEFAULT_MAX_MS} ms). Both per scheduler in yarn-site.xml and, for RlCapacityScheduler, per queue as
 * {@code yarn.scheduler.capacity.<queue-path>.yarnrl.engine.wait.max-heartbeats} / {@code .max-ms} (a parent's
 * value holds for its children). A value outside its range stops the RM, naming the key and the range.
 */
final class WaitCap {
  private static final Logger LOG = LoggerFactory.getLogger(WaitCap.class);

  public static final String MAX_HEARTBEATS = "yarnrl.engine.wait.max-heartbeats";
  public static final String MAX_MS = "yarnrl.engine.wait.max-ms";
  /** After {@code yarn.scheduler.capacity.<queue-path>.}: a queue's own caps. */
  public static final String QUEUE_MAX_HEARTBEATS = "yarnrl.engine.wait.max-heartbeats";
  public static final String QUEUE_MAX_MS = "yarnrl.engine.wait.max-ms";
  static final int DERIVED = -1;
  static final int MAX_HEARTBEATS_LIMIT = 10_000_000;
  static final long DEFAULT_MAX_MS = 60_000;
  static final long MAX_MS_LIMIT = 86_400_000L;
  static final String NODE_LOCALITY_DELAY = "yarn.scheduler.capacity.node-locality-delay";
  static final int DEFAULT_NODE_LOCALITY_DELAY = 40;
  static final String RACK_LOCALITY_ADDITIONAL_DELAY = "yarn.scheduler.capacity.rack-locality-additional-delay";
  static final int DEFAULT_RACK_LOCALITY_ADDITIONAL_DELAY = -1;

  /** Why an ask is past its cap. */
  enum Reason { HEARTBEATS, TIME }

  /** One queue's (or the scheduler's) caps: heartbeats ({@link #DERIVED} = CapacityScheduler's rule) and ms. */
  static final class Limit {
    final int heartbeats;
    final long ms;

    Limit(int heartbeats, long ms) {
      this.heartbeats = heartbeats;
      this.ms = ms;
    }

    @Override
    public String toString() {
      return (heartbeats == DERIVED ? "derived" : Integer.toString(heartbeats)) + " heartbeats, " + ms + " ms";
    }
  }

  /** One waiting ask. */
  private static final class Wait {
    final FiCaSchedulerApp app;
    final SchedulerRequestKey key;
    final String queuePath;
    int heartbeats;
    final long sinceMs;
    boolean past;

    Wait(FiCaSchedulerApp app, SchedulerRequestKey key, String queuePath, long sinceMs) {
      this.app = app;
      this.key = key;
      this.queuePath = queuePath;
      this.sinceMs = sinceMs;
    }
  }

  private final Limit schedulerLimit;
  private final int nodeLocalityDelay;
  private final int rackLocalityAdditionalDelay;
  private final RlSchedulerMetrics metrics;
  private final Map<String, Wait> waits = new ConcurrentHashMap<>();
  private volatile boolean logged;

  WaitCap(Limit schedulerLimit, int nodeLocalityDelay, int rackLocalityAdditionalDelay, RlSchedulerMetrics metrics) {
    this.schedulerLimit = schedulerLimit;
    this.nodeLocalityDelay = Math.max(0, nodeLocalityDelay);
    this.rackLocalityAdditionalDelay = rackLocalityAdditionalDelay;
    this.metrics = metrics;
  }

  /**
   * The scheduler-wide caps from yarn-site.xml ({@code conf}) and CapacityScheduler's locality delays from
   * {@code csConf} (capacity-scheduler.xml for RlCapacityScheduler; yarn-site.xml, normally without them, for
   * RlScheduler). Throws, naming the key and the valid range, on a value outside it.
   */
  static WaitCap fromConf(Configuration conf, Configuration csConf, RlSchedulerMetrics metrics) {
    Limit limit = new Limit(heartbeats(MAX_HEARTBEATS, conf.getTrimmed(MAX_HEARTBEATS)),
        millis(MAX_MS, conf.getTrimmed(MAX_MS), DEFAULT_MAX_MS));
    int nld = intIn(NODE_LOCALITY_DELAY, csConf.getTrimmed(NODE_LOCALITY_DELAY), DEFAULT_NODE_LOCALITY_DELAY, -1,
        MAX_HEARTBEATS_LIMIT);
    int rla = intIn(RACK_LOCALITY_ADDITIONAL_DELAY, csConf.getTrimmed(RACK_LOCALITY_ADDITIONAL_DELAY),
        DEFAULT_RACK_LOCALITY_ADDITIONAL_DELAY, -1, MAX_HEARTBEATS_LIMIT);
    metrics.waitCap = limit.toString();
    return new WaitCap(limit, nld, rla, metrics);
  }

  Limit schedulerLimit() {
    return schedulerLimit;
  }

  /** A heartbeat cap setting: -1 (derived, the default) or 0 .. 10,000,000. */
  static int heartbeats(String key, String value) {
    return intIn(key, value, DERIVED, DERIVED, MAX_HEARTBEATS_LIMIT);
  }

  /** A time cap setting in ms: 1 .. 86,400,000. */
  static long millis(String key, String value, long dflt) {
    if (value == null || value.isEmpty()) {
      return dflt;
    }
    long v;
    try {
      v = Long.parseLong(value);
    } catch (NumberFormatException e) {
      throw bad(key, value, "an integer number of milliseconds in [1, " + MAX_MS_LIMIT + "]");
    }
    if (v < 1 || v > MAX_MS_LIMIT) {
      throw bad(key, value, "an integer number of milliseconds in [1, " + MAX_MS_LIMIT + "]");
    }
    return v;
  }

  private static int intIn(String key, String value, int dflt, int min, int max) {
    if (value == null || value.isEmpty()) {
      return dflt;
    }
    int v;
    try {
      v = Integer.parseInt(value);
    } catch (NumberFormatException e) {
      throw bad(key, value, "an integer in [" + min + ", " + max + "]");
    }
    if (v < min || v > max) {
      throw bad(key, value, "an integer in [" + min + ", " + max + "]");
    }
    return v;
  }

  private static YarnRuntimeException bad(String key, String value, String range) {
    return new YarnRuntimeException(key + "=" + value + " is not valid: it must be " + range);
  }

  /** The heartbeat cap for this limit on a cluster of this many nodes. */
  int heartbeatCap(Limit limit, int numNodes) {
    if (limit.heartbeats != DERIVED) {
      return limit.heartbeats;
    }
    return nodeLocalityDelay + (rackLocalityAdditionalDelay >= 0 ? rackLocalityAdditionalDelay : numNodes);
  }

  /**
   * An answer was applied: every ask of its request that could have gone on the node (allowed there, and fitting
   * what the answer leaves free) but got no container waits one more heartbeat; one that got a container no longer
   * waits.
   */
  void answered(Snapshots.Snapshot snapshot, ScheduleResponse response, long nowMs) {
    java.util.Set<String> given = new java.util.HashSet<>();
    org.apache.hadoop.yarn.api.records.Resource left =
        org.apache.hadoop.yarn.util.resource.Resources.clone(snapshot.nodeFree);
    for (Assignment a : response.getAssignmentsList()) {
      Snapshots.AskRef ref = snapshot.asks.get(a.getAskId());
      if (a.getCount() > 0 && ref != null) {
        given.add(a.getAskId());
        org.apache.hadoop.yarn.util.resource.Resources.subtractFrom(left,
            org.apache.hadoop.yarn.util.resource.Resources.multiply(ref.capability, a.getCount()));
      }
    }
    for (Map.Entry<String, Snapshots.AskRef> e : snapshot.asks.entrySet()) {
      Snapshots.AskRef ref = e.getValue();
      if (given.contains(e.getKey())) {
        waits.remove(e.getKey());
      } else if (ref.placeable && ref.outstanding > 0
          // the engine left room it could have used: what its answer leaves free still fits the ask (an ask that
          // lost the node to others the engine placed there, FIFO's order, did not wait on the engine)
          && ResourceFit.fits(snapshot.calculator, ref.capability, 1, left)
          && Snapshots.pendingNow(ref.app, ref.key)) {
        Wait w = waits.computeIfAbsent(e.getKey(), k -> new Wait(ref.app, ref.key, queuePath(ref.app), nowMs));
        w.heartbeats++;
      }
    }
  }

  private static String queuePath(FiCaSchedulerApp app) {
    return app.getQueue() instanceof org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CSQueue
        ? ((org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CSQueue) app.getQueue()).getQueuePath()
        : app.getQueueName();
  }

  /** A container went to this ask (engine-placed or native): its wait is over. */
  void placed(String askId) {
    if (!waits.isEmpty()) {
      waits.remove(askId);
    }
  }

  /** The application left. */
  void forget(ApplicationId application) {
    waits.values().removeIf(w -> w.app.getApplicationId().equals(application));
  }

  /** Asks waiting now (for tests and the web view). */
  int waiting() {
    return waits.size();
  }

  /** The longest wait in heartbeats now (for the web view). */
  int longestWait() {
    int m = 0;
    for (Wait w : waits.values()) {
      m = Math.max(m, w.heartbeats);
    }
    return m;
  }

  /**
   * Whether this heartbeat must be scheduled natively because an ask that can use this node has waited past its
   * cap; the reason is counted (and the first time logged). Null when the engine may be asked.
   */
  Reason overdue(FiCaSchedulerNode node, Function<String, Limit> limits, int numNodes, ResourceCalculator rc,
      long nowMs) {
    if (waits.isEmpty()) {
      return null;
    }
    for (java.util.Iterator<Map.Entry<String, Wait>> it = waits.entrySet().iterator(); it.hasNext();) {
      Map.Entry<String, Wait> e = it.next();
      Wait w = e.getValue();
      if (!Snapshots.pendingNow(w.app, w.key)) {
        it.remove(); // the application left, or the ask went (withdrawn, or placed elsewhere)
        continue;
      }
      Limit limit = limits.apply(w.queuePath);
      Reason reason = w.heartbeats >= heartbeatCap(limit, numNodes) ? Reason.HEARTBEATS
          : nowMs - w.sinceMs >= limit.ms ? Reason.TIME : null;
      if (reason == null || !Snapshots.placeable(w.app, w.key, node, rc)) {
        continue;
      }
      if (!w.past) {
        w.past = true;
        metrics.asksPastWaitCap.increment();
      }
      if (reason == Reason.HEARTBEATS) {
        metrics.fallbacksWaitHeartbeats.increment();
      } else {
        metrics.fallbacksWaitTime.increment();
      }
      if (!logged) {
        logged = true;
        LOG.warn("yarn-rl: the engine left {} pending for {} heartbeats / {} ms on nodes it fitted (cap: {}); "
            + "scheduling natively. Further cases are counted in FallbacksWait{} (AsksPastWaitCap), logged at DEBUG",
            e.getKey(), w.heartbeats, nowMs - w.sinceMs, limit, reason == Reason.HEARTBEATS ? "Heartbeats" : "Time");
      } else {
        LOG.debug("yarn-rl: {} past its wait cap ({}), scheduled natively on {}", e.getKey(), reason,
            node.getNodeName());
      }
      return reason;
    }
    return null;
  }
}
