package org.yarnrl.yarn;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.exceptions.YarnRuntimeException;
import org.yarnrl.v1.Event;
import org.yarnrl.v1.ScheduleResponse;

/**
 * Shadow mode ({@value #MODE}=shadow): the plugin asks the engine on every heartbeat with pending asks, as usual, but
 * never waits for the answer and never applies it; YARN schedules the heartbeat natively, and the containers it
 * places are reported to the engine with the decision id of the engine's shadow decision
 * on that heartbeat, so the engine can record what it would have placed beside what YARN placed.
 *
 * <p>A heartbeat's native containers are assigned right after its shadow ask goes out, before the answer (and so
 * its decision id) is back: they wait here, per node, and are reported when the answer (or its failure, then
 * without a decision id) arrives. At most one shadow ask per node is in flight; a heartbeat while one is still out
 * is scheduled natively and not shadowed (counted in {@link #skipped}).
 */
final class ShadowMode {

  static final String MODE = "yarnrl.engine.mode";

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
  }

  /** One node's shadowed heartbeat: the native containers waiting for the engine's decision id. */
  private static final class Pending {
    final List<Event.Builder> started = new ArrayList<>();
    boolean answered;
    String decisionId = "";
  }

  final LongAdder asked = new LongAdder();
  final LongAdder answered = new LongAdder();
  final LongAdder failed = new LongAdder();
  final LongAdder skipped = new LongAdder();
  final LongAdder reported = new LongAdder();
  private final Map<NodeId, Pending> pending = new HashMap<>();

  /** Whether a shadow ask for this node may go out now (none in flight); marks it in flight when so. */
  synchronized boolean begin(NodeId node) {
    Pending p = pending.get(node);
    if (p != null && !p.answered) {
      skipped.increment();
      return false;
    }
    pending.put(node, new Pending());
    asked.increment();
    return true;
  }

  /** A native container of this node's shadowed heartbeat: reported at once if the answer is in, else held. */
  void started(NodeId node, Event.Builder event, java.util.function.Consumer<Event> report) {
    synchronized (this) {
      Pending p = pending.get(node);
      if (p != null && !p.answered) {
        p.started.add(event);
        return;
      }
      if (p != null) {
        event.setDecisionId(p.decisionId);
      }
    }
    reported.increment();
    report.accept(event.build());
  }

  /** The engine's shadow answer (or failure) for this node: its held containers go out with the decision id. */
  void answered(NodeId node, ScheduleResponse response, Object failure, java.util.function.Consumer<Event> report) {
    List<Event.Builder> out;
    synchronized (this) {
      Pending p = pending.get(node);
      if (p == null) {
        return;
      }
      p.answered = true;
      p.decisionId = response != null ? response.getDecisionId() : "";
      out = new ArrayList<>(p.started);
      p.started.clear();
    }
    (response != null ? answered : failed).increment();
    for (Event.Builder e : out) {
      reported.increment();
      report.accept(e.setDecisionId(response != null ? response.getDecisionId() : "").build());
    }
  }

  /** The node left: its held containers are reported without a decision id. */
  void forget(NodeId node, java.util.function.Consumer<Event> report) {
    answered(node, null, "node left", report);
    synchronized (this) {
      pending.remove(node);
    }
  }

  @Override
  public String toString() {
    return "shadow asked=" + asked.sum() + " answered=" + answered.sum() + " failed=" + failed.sum() + " skipped="
        + skipped.sum() + " reported=" + reported.sum();
  }
}
