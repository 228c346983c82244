package org.yarnrl.yarn;

import java.util.HashMap;
import java.util.Map;
import org.yarnrl.v1.Assignment;
import org.yarnrl.v1.ScheduleResponse;

/**
 * What the engine allowed on one node for one CapacityScheduler pass: per ask, how many more containers may go
 * there. An engine queue's ask without an entry waits (the engine's "not now, not here"); other queues are not
 * affected. {@link #HOLD} lets nothing be allocated on the node while its ask is on its way to the engine; {@link #NONE}
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
  private int placed;

  private NodePlan(String decisionId, Map<String, Integer> remaining) {
    this.decisionId = decisionId;
    this.remaining = remaining;
  }

  /** The plan of a checked answer ({@link Snapshots#check}). */
  static NodePlan of(ScheduleResponse response) {
    Map<String, Integer> remaining = new HashMap<>();
    for (Assignment a : response.getAssignmentsList()) {
      remaining.merge(a.getAskId(), a.getCount(), Integer::sum);
    }
    return new NodePlan(response.getDecisionId(), remaining);
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
