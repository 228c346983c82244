package org.yarnrl.yarn;

import java.util.Optional;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.server.resourcemanager.RMContext;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.AppSchedulingInfo;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.NodeType;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.activities.DiagnosticsCollector;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.ContainerRequest;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.placement.LocalityAppPlacementAllocator;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.SchedulingMode;
import org.apache.hadoop.yarn.server.scheduler.SchedulerRequestKey;

/**
 * CapacityScheduler's own per-ask placement (LocalityAppPlacementAllocator: locality counts, relaxLocality,
 * partitions) with the engine's answer as one more condition, for applications in engine-enabled queues only.
 * RlCapacityScheduler installs it for every application ({@code yarn.scheduler.app-placement-allocator.class}); in
 * other queues, on nodes without a plan, and under any other scheduler it is exactly LocalityAppPlacementAllocator.
 *
 * <ul>
 *   <li>{@link #precheckNode}: while a node's ask is with the engine no engine queue's ask goes there (other
 *       queues' asks do, as CapacityScheduler alone places them: queue isolation); afterwards an engine queue's ask
 *       goes there only as often as the engine said, and only at the container size the engine was told about
 *       (an ask resized meanwhile loses the plan's containers, counted in AnswerContainersDiscarded).</li>
 *   <li>{@link #getUniqueLocationAsks}: an ask the engine placed now is not delayed again by CapacityScheduler's
 *       off-switch delay (the engine decided "now"; its own policies count missed opportunities).</li>
 *   <li>{@link #allocate}: counts the container against the plan; an off-switch commit of an engine-placed
 *       container on a rack the ask names is booked as rack-local, so YARN's rack count stays right.</li>
 * </ul>
 */
public class RlAppPlacementAllocator<N extends SchedulerNode> extends LocalityAppPlacementAllocator<N> {
  private RlCapacityScheduler scheduler;
  private String askId;

  @Override
  public void initialize(AppSchedulingInfo appSchedulingInfo, SchedulerRequestKey schedulerRequestKey,
      RMContext rmContext) {
    super.initialize(appSchedulingInfo, schedulerRequestKey, rmContext);
    if (rmContext != null && rmContext.getScheduler() instanceof RlCapacityScheduler) {
      scheduler = (RlCapacityScheduler) rmContext.getScheduler();
      askId = Snapshots.askId(appSchedulingInfo.getApplicationAttemptId(), schedulerRequestKey);
    }
  }

  /** The engine's plan for this ask on this node, or null when CapacityScheduler decides alone. */
  private NodePlan plan(SchedulerNode node) {
    if (scheduler == null || node == null) {
      return null;
    }
    return scheduler.planFor(node.getNodeID());
  }

  private boolean engineDecides() {
    return scheduler.isEngineApp(appSchedulingInfo.getApplicationAttemptId());
  }

  @Override
  public boolean precheckNode(SchedulerNode schedulerNode, SchedulingMode schedulingMode,
      Optional<DiagnosticsCollector> dcOpt) {
    if (!super.precheckNode(schedulerNode, schedulingMode, dcOpt)) {
      return false;
    }
    NodePlan plan = plan(schedulerNode);
    if (plan == null) {
      return true;
    }
    if (!engineDecides()) {
      // queue isolation: only the engine queues wait for the engine's plan. While a node is held for the engine,
      // another queue allocates there within its guaranteed capacity (beyond it, CapacityScheduler would have served
      // the engine queue first, so that part waits for the answer)
      return plan != NodePlan.HOLD || scheduler.withinGuarantee(appSchedulingInfo.getApplicationAttemptId());
    }
    if (plan == NodePlan.HOLD || !plan.allows(askId)) {
      return false;
    }
    int discarded = plan.discardIfResized(askId, getPendingAsk(ResourceRequest.ANY).getPerAllocationResource());
    if (discarded > 0) {
      scheduler.getRlMetrics().answerContainersDiscarded.add(discarded);
      return false;
    }
    return true;
  }

  /**
   * In a pass under an engine plan (synchronous CapacityScheduler: a node update that applies an answer, or holds the
   * node while one is on its way), an engine queue's ask the plan gives nothing on this node has nothing outstanding
   * for that pass. CapacityScheduler then skips it at once, as {@link #precheckNode} would refuse it, instead of
   * first checking it against the queue's headroom: an ask larger than the headroom (with DominantResourceCalculator,
   * a job dominant in the resource that is short) ends the whole leaf queue's pass (QUEUE_SKIPPED, CapacityScheduler
   * keeping FIFO order behind a head that does not fit), and every job the engine chose behind it waited until that
   * job fitted. Other threads, other queues and native passes see the real count.
   */
  @Override
  public int getOutstandingAsksCount(String resourceName) {
    int n = super.getOutstandingAsksCount(resourceName);
    if (n <= 0 || scheduler == null || !ResourceRequest.ANY.equals(resourceName)) {
      return n;
    }
    NodePlan plan = scheduler.passPlanOnThisThread();
    if (plan == null || !engineDecides()) {
      return n;
    }
    return plan != NodePlan.HOLD && plan.mentions(askId) ? n : 0;
  }

  @Override
  public int getUniqueLocationAsks() {
    int n = super.getUniqueLocationAsks();
    if (scheduler != null) {
      NodePlan plan = scheduler.activePlan();
      if (plan != null && plan != NodePlan.HOLD && plan.allows(askId) && engineDecides()) {
        return 1;
      }
    }
    return n;
  }

  @Override
  public ContainerRequest allocate(SchedulerRequestKey schedulerKey, NodeType type, SchedulerNode node) {
    NodePlan plan = plan(node);
    if (plan != null && plan != NodePlan.HOLD && engineDecides() && plan.take(askId)
        && type == NodeType.OFF_SWITCH) {
      ResourceRequest rack = getResourceRequests().get(node.getRackName());
      if (rack != null && rack.getNumContainers() > 0) {
        type = NodeType.RACK_LOCAL;
      }
    }
    return super.allocate(schedulerKey, type, node);
  }
}
