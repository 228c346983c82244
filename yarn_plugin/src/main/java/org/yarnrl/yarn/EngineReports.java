package org.yarnrl.yarn;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainer;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.NodeType;
import org.yarnrl.v1.ContainerFinished;
import org.yarnrl.v1.ContainerStarted;
import org.yarnrl.v1.Event;
import org.yarnrl.v1.JobFinished;
import org.yarnrl.v1.Locality;
import org.yarnrl.v1.NodeAdded;
import org.yarnrl.v1.NodeRemoved;

/**
 * The feedback step of both schedulers: the {@code Report} events the engine learns from (nodes, jobs, containers
 * started and finished). Built here once, so RlScheduler and RlCapacityScheduler report the same things the same
 * way; each scheduler only says when. Without an engine (the web view, a plain RM) every method does nothing.
 */
final class EngineReports {

  private volatile EnginePath engine;
  private final ShadowMode shadow;
  /** Running containers' ContainerStarted events (engine-placed and native): locality and decision id for
   *  their ContainerFinished. */
  private final Map<ContainerId, Event> started = new ConcurrentHashMap<>();

  EngineReports(ShadowMode shadow) {
    this.shadow = shadow;
  }

  /** The engine path the events go to (null: none). */
  void attach(EnginePath engine) {
    this.engine = engine;
  }

  static Locality locality(NodeType type) {
    return type == NodeType.NODE_LOCAL ? Locality.LOCALITY_NODE_LOCAL
        : type == NodeType.RACK_LOCAL ? Locality.LOCALITY_RACK_LOCAL : Locality.LOCALITY_OFF_SWITCH;
  }

  private void send(Event.Builder event) {
    EnginePath e = engine;
    if (e != null) {
      e.report(event.setTimestampMs(System.currentTimeMillis()).build());
    }
  }

  void nodeAdded(RMNode node) {
    send(Event.newBuilder().setNodeAdded(NodeAdded.newBuilder().setNodeId(node.getNodeID().toString())
        .setHost(node.getHostName()).setRack(node.getRackName())
        .setTotal(Snapshots.resource(node.getTotalCapability()))));
  }

  /** The node left: the engine path forgets it, shadow mode reports what it held, then NodeRemoved. */
  void nodeRemoved(NodeId node) {
    EnginePath e = engine;
    if (e == null) {
      return;
    }
    e.forget(node);
    shadow.forget(node, e::report);
    send(Event.newBuilder().setNodeRemoved(NodeRemoved.newBuilder().setNodeId(node.toString())));
  }

  /** {@code job} is what the scheduler kept at submission (null when unknown: run time 0). */
  void jobFinished(ApplicationId application, Snapshots.JobInfo job, boolean succeeded) {
    long runtime = job == null ? 0 : System.currentTimeMillis() - job.submitTimeMs;
    send(Event.newBuilder().setJobFinished(JobFinished.newBuilder().setJobId(application.toString())
        .setRuntime(runtime).setSucceeded(succeeded)));
  }

  /**
   * ContainerStarted for every container, engine-placed or native, with YARN's level (or the engine's
   * CACHE_LOCAL); an engine that knows the job's blocks relabels it with the read level (policy_engine/labels.py).
   * {@code viaShadow}: a native container in shadow mode, reported with the shadow decision's id once known.
   */
  void containerStarted(ContainerId container, ApplicationId application, NodeId node, String askId,
      Locality locality, String decisionId, boolean viaShadow) {
    EnginePath e = engine;
    if (e == null) {
      return;
    }
    Event.Builder builder = Event.newBuilder()
        .setTimestampMs(System.currentTimeMillis())
        .setDecisionId(decisionId)
        .setContainerStarted(ContainerStarted.newBuilder()
            .setContainerId(container.toString())
            .setApplicationId(application.toString())
            .setNodeId(node.toString())
            .setAskId(askId)
            .setLocality(locality));
    started.put(container, builder.build());
    if (viaShadow) {
      shadow.started(node, builder, e::report);
    } else {
      e.report(builder.build());
    }
  }

  /** ContainerFinished with its start's decision id and locality; a container never reported started is skipped
   *  (an application the scheduler did not know). */
  void containerFinished(RMContainer container, ContainerStatus status) {
    Event start = started.remove(container.getContainerId());
    if (start == null) {
      return;
    }
    ContainerStarted s = start.getContainerStarted();
    send(Event.newBuilder()
        .setDecisionId(start.getDecisionId())
        .setContainerFinished(ContainerFinished.newBuilder()
            .setContainerId(s.getContainerId())
            .setApplicationId(s.getApplicationId())
            .setNodeId(s.getNodeId())
            .setRuntimeMs(Math.max(0, System.currentTimeMillis() - container.getCreationTime()))
            .setExitStatus(status.getExitStatus())
            .setLocality(s.getLocality())));
  }
}
