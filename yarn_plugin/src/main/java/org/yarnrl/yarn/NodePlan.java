package org.yarnrl.yarn;

import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.yarn.api.records.Resource;
import org.yarnrl.v1.Assignment;
import org.yarnrl.v1.ScheduleResponse;

/**
 * What the engine allowed on one node for one CapacityScheduler pass: per ask, how many more containers may go
 * there. An engine queue's ask without an entry waits (the engine's "not now, not here"); other queues are not
 * affected. {@link #HOLD}: the engine queues allocate nothing on the node while its ask is on its way to the engine
 * (the other queues allocate as plain CapacityScheduler would); {@link #NONE}
 * is the plan of a node update with nothing for the engine.
 */
final class NodePlan {
  static final NodePlan HOLD = new NodePlan("", new HashMap<>());
  /**
   * Nothing for the engine queues, everything else as CapacityScheduler decides: a node update that found nothing for
   * the engine to decide. An engine queue's ask that arrives during that pass (an AM's allocate does not wait for
   * the scheduler's lock) waits for the node's next heartbeat, where the engine is asked, instead of being placed by
   * CapacityScheduler alone.
   */
  static final NodePlan NONE = new NodePlan("", new HashMap<>());

  final String decisionId;
  private final Map<String, Integer> remaining;
  /** Per ask, the container size the engine was told about (an ask resized since gets nothing from the plan). */
  private final Map<String, Resource> sizes;
  private int placed;

  private NodePlan(String decisionId, Map<String, Integer> remaining, Map<String, Resource> sizes) {
    this.decisionId = decisionId;
    this.remaining = remaining;
    this.sizes = sizes;
  }

  private NodePlan(String decisionId, Map<String, Integer> remaining) {
    this(decisionId, remaining, new HashMap<>());
  }

  /** The plan of a checked answer ({@link Snapshots#check}) to this snapshot. */
  static NodePlan of(ScheduleResponse response, Snapshots.Snapshot snapshot) {
    Map<String, Integer> remaining = new HashMap<>();
    Map<String, Resource> sizes = new HashMap<>();
    for (Assignment a : response.getAssignmentsList()) {
      remaining.merge(a.getAskId(), a.getCount(), Integer::sum);
      Snapshots.AskRef ref = snapshot == null ? null : snapshot.asks.get(a.getAskId());
      if (ref != null) {
        sizes.put(a.getAskId(), ref.capability);
      }
    }
    return new NodePlan(response.getDecisionId(), remaining, sizes);
  }

  /**
   * Whether the ask, at its container size now, may still take a container of the plan: an ask resized since the
   * snapshot loses what the plan held for it (returned as discarded, once).
   */
  synchronized int discardIfResized(String askId, Resource now) {
    Resource then = sizes.get(askId);
    Integer r = remaining.get(askId);
    if (then == null || r == null || r <= 0 || then.equals(now)) {
      return 0;
    }
    remaining.put(askId, 0);
    return r;
  }

  /**
   * Containers the plan allowed for asks that have nothing pending any more (the AM withdrew them, or the
   * application left, while the answer was on its way): discarded. (What CapacityScheduler itself did not place in
   * this pass, e.g. past its one off-switch assignment per heartbeat, is not counted: the engine is asked again.)
   */
  synchronized int unusedWithdrawn(Snapshots.Snapshot snapshot) {
    int n = 0;
    for (Map.Entry<String, Integer> e : remaining.entrySet()) {
      Snapshots.AskRef ref = snapshot.asks.get(e.getKey());
      if (e.getValue() > 0 && ref != null && !Snapshots.pendingNow(ref.app, ref.key)) {
        n += e.getValue();
      }
    }
    return n;
  }

  /** Whether the engine's answer gave this ask containers on the node at all (used up or not). */
  synchronized boolean mentions(String askId) {
    return remaining.containsKey(askId);
  }

  synchronized boolean allows(String askId) {
    Integer r = remaining.get(askId);
    return r != null && r > 0;
  }

  /** One container of this ask is being committed on the node; false when the plan did not allow it. */
  synchronized boolean take(String askId) {
    Integer r = remaining.get(askId);
    if (r == null || r <= 0) {
      return false;
    }
    remaining.put(askId, r - 1);
    placed++;
    return true;
  }

  synchronized int placed() {
    return placed;
  }
}
