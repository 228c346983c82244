package org.yarnrl.yarn;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.exceptions.YarnException;
import org.apache.hadoop.yarn.exceptions.YarnRuntimeException;
import org.apache.hadoop.yarn.server.resourcemanager.RMContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.yarnrl.v1.Assignment;
import org.yarnrl.v1.Event;
import org.yarnrl.v1.ScheduleResponse;

/**
 * Shadow mode ({@value #MODE}=shadow): the plugin asks the engine on every heartbeat with pending asks, as usual, but
 * never waits for the answer and never applies it; YARN schedules the heartbeat natively, and the containers it
 * places are reported to the engine with the decision id of the engine's shadow decision
 * on that heartbeat, so the engine can record what it would have placed beside what YARN placed.
 *
 * <p>A heartbeat's native containers are assigned right after its shadow ask goes out, before the answer (and so
 * its decision id) is back: they wait here, with their heartbeat's ask, and are reported when its answer (or its
 * failure, then without a decision id) arrives. A node may have several shadow asks in flight (a slow engine, fast
 * heartbeats), at most {@link #MAX_IN_FLIGHT_PER_NODE}; a heartbeat beyond that is scheduled natively and not
 * shadowed (counted in ShadowAsksSkipped, as are heartbeats not shadowed for another reason: see {@link #unshadowed}). Every call has the engine's deadline, so the asks in flight are bounded.
 *
 * <p>The counters are the scheduler's JMX bean's (RlSchedulerMetrics, Shadow*): asks, answers, failures, skipped,
 * the containers the engine would have placed, YARN's containers reported, and of those how many went to an ask the
 * engine had also given the node on that heartbeat (ShadowAgreements) or not (ShadowDisagreements), the same
 * comparison the engine makes (policy_engine/shadow.py, yarnrl_shadow_placements_total).
 */
final class ShadowMode {
  private static final Logger LOG = LoggerFactory.getLogger(ShadowMode.class);

  static final String MODE = "yarnrl.engine.mode";
  static final int MAX_IN_FLIGHT_PER_NODE = 8;

  /** What the scheduler does with the engine's answers. */
  enum Mode {
    ACTIVE, SHADOW;

    /** The mode named by {@code value} (case-insensitive; empty means active), or a clear error naming {@code key}. */
    static Mode parse(String value, String key) {
      String v = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
      switch (v) {
        case "":
        case "active":
          return ACTIVE;
        case "shadow":
          return SHADOW;
        default:
          throw new YarnRuntimeException(key + " must be 'active' or 'shadow', got '" + value.trim() + "'");
      }
    }

    static Mode fromConf(Configuration conf) {
      return parse(conf.get(MODE, "active"), MODE);
    }

    /**
     * On a refresh ({@code yarn rmadmin -refreshQueues}): the ResourceManager hands the scheduler its configuration
     * as read at start, so the mode is read from yarn-site.xml as it is now (through the RM's configuration
     * provider, as the RM's own refresh commands read it), else from {@code conf}.
     */
    static Mode fromSite(Configuration conf, RMContext context) {
      String value = null;
      if (context != null && context.getConfigurationProvider() != null) {
        try (InputStream in = context.getConfigurationProvider().getConfigurationInputStream(conf,
            YarnConfiguration.YARN_SITE_CONFIGURATION_FILE)) {
          if (in != null) {
            Configuration site = new Configuration(false);
            site.addResource(in);
            value = site.get(MODE); // read while the stream is open (resources load lazily)
          }
        } catch (IOException | YarnException | RuntimeException e) {
          LOG.warn("yarn-rl: could not read {} for {} ({}); using the configuration the RM passed",
              YarnConfiguration.YARN_SITE_CONFIGURATION_FILE, MODE, e.toString());
        }
      }
      return parse(value != null ? value : conf.get(MODE, "active"), MODE);
    }

    String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** One shadowed heartbeat: its answer once in, and its native containers waiting for the decision id. */
  static final class Ask {
    final List<Event.Builder> started = new ArrayList<>();
    boolean answered;
    String decisionId = "";
    Set<String> engineAsks = Set.of();
  }

  final LongAdder asked;
  final LongAdder answered;
  final LongAdder failed;
  final LongAdder skipped;
  final LongAdder reported;
  private final RlSchedulerMetrics metrics;
  private boolean echoWarned;
  /** Per node, its shadowed heartbeats, oldest first; the last is the current one (answered ones before it go). */
  private final Map<NodeId, Deque<Ask>> asks = new HashMap<>();

  ShadowMode(RlSchedulerMetrics metrics) {
    this.metrics = metrics;
    this.asked = metrics.shadowAsks;
    this.answered = metrics.shadowAnswers;
    this.failed = metrics.shadowFailures;
    this.skipped = metrics.shadowAsksSkipped;
    this.reported = metrics.shadowNativeContainers;
  }

  /** A shadow ask for this node's heartbeat, to pass to {@link #answered}; null (counted) when too many are out. */
  synchronized Ask begin(NodeId node) {
    Deque<Ask> q = asks.computeIfAbsent(node, n -> new ArrayDeque<>());
    q.removeIf(a -> a.answered); // no longer the current heartbeat's (the new one is)
    if (q.size() >= MAX_IN_FLIGHT_PER_NODE) {
      skipped.increment();
      unshadowedLocked(q);
      return null;
    }
    Ask a = new Ask();
    q.addLast(a);
    asked.increment();
    return a;
  }

  /**
   * This node's heartbeat is not shadowed though a shadow ask was pending (no room by the snapshot, the engine may
   * not be asked): counted in ShadowAsksSkipped; containers YARN places on it are reported without a decision id,
   * not compared with an earlier heartbeat's decision.
   */
  synchronized void unshadowed(NodeId node) {
    skipped.increment();
    Deque<Ask> q = asks.get(node);
    if (q != null) {
      q.removeIf(a -> a.answered);
      unshadowedLocked(q);
    }
  }

  private static void unshadowedLocked(Deque<Ask> q) {
    Ask none = new Ask();
    none.answered = true;
    q.addLast(none);
  }

  /**
   * A native container on this node: it belongs to the node's latest shadowed heartbeat, held until that one's
   * answer is in, else reported at once with its decision id (none when the node was never shadowed).
   */
  void started(NodeId node, Event.Builder event, Consumer<Event> report) {
    synchronized (this) {
      Deque<Ask> q = asks.get(node);
      Ask a = q == null ? null : q.peekLast();
      if (a != null && !a.answered) {
        a.started.add(event);
        return;
      }
      if (a != null) {
        event.setDecisionId(a.decisionId);
        compare(a, event);
      }
    }
    reported.increment();
    report.accept(event.build());
  }

  /** The engine's shadow answer (or failure) for this ask: its held containers go out with the decision id. */
  void answered(Ask ask, ScheduleResponse response, Object failure, Consumer<Event> report) {
    List<Event.Builder> out;
    synchronized (this) {
      if (ask.answered) {
        return;
      }
      ask.answered = true;
      if (response != null && !response.getShadow() && !echoWarned) {
        echoWarned = true;
        LOG.warn("yarn-rl: the engine answered a shadow ask without ScheduleResponse.shadow: it does not know shadow "
            + "mode (an older engine), so it records the decision as an active one; nothing is applied either way");
      }
      if (response != null) {
        ask.decisionId = response.getDecisionId();
        Set<String> chosen = new HashSet<>();
        long containers = 0;
        for (Assignment a : response.getAssignmentsList()) {
          if (a.getCount() > 0) {
            chosen.add(a.getAskId());
            containers += a.getCount();
          }
        }
        ask.engineAsks = chosen;
        metrics.shadowEngineContainers.add(containers);
      }
      out = new ArrayList<>(ask.started);
      ask.started.clear();
      for (Event.Builder e : out) {
        e.setDecisionId(ask.decisionId);
        if (response != null) {
          compare(ask, e);
        }
      }
    }
    (response != null ? answered : failed).increment();
    for (Event.Builder e : out) {
      reported.increment();
      report.accept(e.build());
    }
  }

  /** Whether YARN's container went to an ask the engine also gave this node on that heartbeat. */
  private void compare(Ask ask, Event.Builder event) {
    if (ask.decisionId.isEmpty()) {
      return; // the ask failed: nothing to compare with
    }
    if (ask.engineAsks.contains(event.getContainerStarted().getAskId())) {
      metrics.shadowAgreements.increment();
    } else {
      metrics.shadowDisagreements.increment();
    }
  }

  /** The node left: its held containers are reported without a decision id. */
  void forget(NodeId node, Consumer<Event> report) {
    Deque<Ask> q;
    synchronized (this) {
      q = asks.remove(node);
    }
    if (q != null) {
      for (Ask a : q) {
        answered(a, null, "node left", report);
      }
    }
  }

  @Override
  public String toString() {
    return "shadow asked=" + asked.sum() + " answered=" + answered.sum() + " failed=" + failed.sum() + " skipped="
        + skipped.sum() + " reported=" + reported.sum() + " engineContainers=" + metrics.shadowEngineContainers.sum()
        + " agree=" + metrics.shadowAgreements.sum() + " differ=" + metrics.shadowDisagreements.sum();
  }
}
