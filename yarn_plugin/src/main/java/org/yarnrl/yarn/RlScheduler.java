package org.yarnrl.yarn;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.management.ObjectName;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.server.resourcemanager.RMContext;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMAppState;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainer;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainerEventType;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.NodeType;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerApplication;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.PendingAsk;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.fica.FiCaSchedulerNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.placement.AppPlacementAllocator;
import org.apache.hadoop.yarn.server.scheduler.SchedulerRequestKey;
import org.apache.hadoop.yarn.server.utils.BuilderUtils;
import org.apache.hadoop.yarn.util.resource.Resources;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.yarnrl.v1.Assignment;
import org.yarnrl.v1.ClusterSummary;
import org.yarnrl.v1.ContainerFinished;
import org.yarnrl.v1.ContainerStarted;
import org.yarnrl.v1.Event;
import org.yarnrl.v1.JobFinished;
import org.yarnrl.v1.Locality;
import org.yarnrl.v1.NodeAdded;
import org.yarnrl.v1.NodeRemoved;
import org.yarnrl.v1.ScheduleResponse;

/**
 * The yarn-rl FIFO scheduler ({@code yarn.resourcemanager.scheduler.class=org.yarnrl.yarn.RlScheduler}): upstream
 * FifoScheduler ({@link FifoSchedulerBase}, Hadoop 3.5.0's code verbatim but for visibility and two hooks; the
 * reviewed difference is yarn_plugin/upstream/FifoScheduler-3.5.0.diff, checked by UpstreamFifoBaseTest) with the
 * yarn-rl logic here.
 *
 * <p>A heartbeat of a node with room and pending asks sends the node and the asks to the policy engine
 * asynchronously ({@link EnginePath}: {@code Schedule} with a per-call deadline, never under the scheduler lock);
 * the answer is checked and applied at the node update the answer re-dispatches. On a timeout, an unavailable or
 * failing engine, an invalid answer, an open circuit breaker or a refused engine version, the node is scheduled
 * natively with FifoScheduler's assignment (FIFO with locality preference, relaxLocality enforced by
 * {@link LocalityRules}). Container, node and application events go back to the engine through {@code Report}.
 * With no {@code yarnrl.engine.address} it behaves as FifoScheduler.
 *
 * <p>Settings (yarn-site.xml, also read by RlCapacityScheduler): {@value #ENGINE_ADDRESS} (host:port, empty =
 * native only), {@value #DEADLINE_MS} (default {@value #DEFAULT_DEADLINE_MS}), {@value #BREAKER_FAILURES} (default
 * {@value #DEFAULT_BREAKER_FAILURES}), {@value #BREAKER_OPEN_MS} (default {@value #DEFAULT_BREAKER_OPEN_MS}),
 * {@value #REPORT_INTERVAL_MS} (default {@value #DEFAULT_REPORT_INTERVAL_MS}), {@value #SNAPSHOT_MAX_ASKS} (default
 * {@value #DEFAULT_SNAPSHOT_MAX_ASKS}). Counters: JMX bean
 * {@code Hadoop:service=ResourceManager,name=RlScheduler}.
 */
public class RlScheduler extends FifoSchedulerBase {
  private static final Logger LOG = LoggerFactory.getLogger(RlScheduler.class);

  public static final String ENGINE_ADDRESS = "yarnrl.engine.address";
  public static final String DEADLINE_MS = "yarnrl.engine.deadline-ms";
  public static final long DEFAULT_DEADLINE_MS = 20;
  public static final String BREAKER_FAILURES = "yarnrl.engine.breaker.failures";
  public static final int DEFAULT_BREAKER_FAILURES = 3;
  public static final String BREAKER_OPEN_MS = "yarnrl.engine.breaker.open-ms";
  public static final long DEFAULT_BREAKER_OPEN_MS = 10_000;
  public static final String REPORT_INTERVAL_MS = "yarnrl.engine.report.interval-ms";
  public static final long DEFAULT_REPORT_INTERVAL_MS = 200;
  /** The most asks one heartbeat's snapshot carries (the first in FIFO order); the engine refuses over 10,000. */
  public static final String SNAPSHOT_MAX_ASKS = "yarnrl.engine.snapshot.max-asks";
  public static final int DEFAULT_SNAPSHOT_MAX_ASKS = 1000;

  /** What a node update did: nothing to decide, an engine answer applied, native scheduling, an ask sent. */
  private enum Handled { IDLE, ENGINE, NATIVE, ASKED }

  private final RlSchedulerMetrics rlMetrics = new RlSchedulerMetrics();
  private EnginePath engine;
  private WaitCap waitCap;
  private ObjectName mbeanName;
  /** yarnrl.engine.mode: ACTIVE applies the engine's answers, SHADOW only records them (ShadowMode). */
  private volatile ShadowMode.Mode mode = ShadowMode.Mode.ACTIVE;
  private final ShadowMode shadow = new ShadowMode(rlMetrics);
  private final Map<ApplicationId, Snapshots.JobInfo> jobs = new ConcurrentHashMap<>();
  private final Set<String> racks = ConcurrentHashMap.newKeySet();
  private final EngineReports reports = new EngineReports(shadow);

  public RlScheduler() {
    super();
  }

  @Override
  public void serviceInit(Configuration conf) throws Exception {
    super.serviceInit(conf);
    mode = ShadowMode.Mode.fromConf(conf); // a bad value stops the RM here, with the key named
    rlMetrics.engineMode = mode.label();
    engine = EnginePath.fromConf(conf, rlMetrics, "RlScheduler, FIFO");
    reports.attach(engine);
    // checked with or without an engine: a bad value stops the RM either way
    waitCap = WaitCap.fromConf(conf, conf, rlMetrics);
    rlMetrics.resourceCalculator = getResourceCalculator().getClass().getSimpleName();
    if (engine != null) {
      engine.setRMContext(rmContext);
      // the batched path builds a batch's snapshot under FifoScheduler's lock (its monitor), never its call
      engine.setUnderLock(snapshot -> {
        synchronized (this) {
          snapshot.run();
        }
      });
      // a batched answer is applied as it arrives, under the same lock, not by a second node update
      engine.setApplier(this::applyArrived);
    }
  }

  /**
   * The batched path's answer for this node, applied as it arrives (EnginePath's apply thread) under FifoScheduler's
   * lock, exactly as the node update that would otherwise take it: re-validated, placed container by container, or
   * FIFO's own assignment on a fallback. Nothing when a node update took the answer first or the node left.
   */
  private synchronized void applyArrived(NodeId id) {
    if (!engine.hasAnswer(id)) {
      return;
    }
    FiCaSchedulerNode node = nodeTracker.getNode(id);
    if (node == null) {
      engine.forget(id);
      return;
    }
    long start = System.nanoTime();
    Handled handled = scheduleWithEngine(node);
    if (handled == Handled.ENGINE) {
      rlMetrics.engineNanos.add(System.nanoTime() - start);
    } else if (handled == Handled.NATIVE) {
      if (Resources.greaterThanOrEqual(getResourceCalculator(), getClusterResource(), node.getUnallocatedResource(),
          getMinimumResourceCapability())) {
        super.assignContainers(node);
      }
      rlMetrics.nativeHeartbeats.increment();
      rlMetrics.nativeNanos.add(System.nanoTime() - start);
    }
    updateAvailableResourcesMetrics();
  }

  @Override
  public void serviceStart() throws Exception {
    super.serviceStart();
    mbeanName = EnginePath.registerBean(rlMetrics);
    RlSchedulerPage.register(this);
  }

  @Override
  public void serviceStop() throws Exception {
    EnginePath.stop(mbeanName, engine, rlMetrics, "RlScheduler");
    mbeanName = null;
    super.serviceStop();
  }

  /** yarn.resourcemanager.scheduler refresh (rmadmin -refreshQueues): shadow and active switch without a restart. */
  @Override
  public void reinitialize(Configuration conf, RMContext rmContext) throws IOException {
    ShadowMode.Mode next = ShadowMode.Mode.fromSite(conf, rmContext); // refused before anything changes
    super.reinitialize(conf, rmContext);
    if (next != mode) {
      LOG.info("yarn-rl RlScheduler: {} {} -> {}", ShadowMode.MODE, mode, next);
      mode = next;
      rlMetrics.engineMode = next.label();
    }
  }

  /** Shadow mode's counters (asked, answered, failed, skipped, reported). */
  ShadowMode getShadow() {
    return shadow;
  }

  /** The plugin's counters (also on JMX). */
  public RlSchedulerMetrics getRlMetrics() {
    return rlMetrics;
  }

  /** The plugin's wait caps (tests, web view). */
  WaitCap waitCap() {
    return waitCap;
  }

  /** The engine path, or null (web view). */
  EnginePath enginePath() {
    return engine;
  }

  // ------------------------------------------------------------------ the hooks into FifoSchedulerBase

  @Override
  public synchronized void addApplication(ApplicationId applicationId, String queue, String user,
      boolean isAppRecovering, boolean unmanagedAM) {
    super.addApplication(applicationId, queue, user, isAppRecovering, unmanagedAM);
    RMApp rmApp = rmContext.getRMApps().get(applicationId);
    if (rmApp != null) {
      jobs.put(applicationId, new Snapshots.JobInfo(rmApp.getSubmitTime(),
          JobTags.parse(rmApp.getApplicationTags(), rmApp.getSubmitTime())));
    }
  }

  @Override
  protected synchronized void doneApplication(ApplicationId applicationId, RMAppState finalState) {
    boolean known = applications.containsKey(applicationId);
    super.doneApplication(applicationId, finalState);
    Snapshots.JobInfo job = jobs.remove(applicationId);
    if (engine != null) {
      engine.snapshots().forget(applicationId);
      waitCap.forget(applicationId);
    }
    if (known) {
      reports.jobFinished(applicationId, job, finalState == RMAppState.FINISHED);
    }
  }

  @Override
  protected synchronized void addNode(RMNode nodeManager) {
    super.addNode(nodeManager);
    racks.add(nodeManager.getRackName());
    reports.nodeAdded(nodeManager);
  }

  @Override
  protected synchronized void removeNode(RMNode nodeInfo) {
    boolean known = getNode(nodeInfo.getNodeID()) != null;
    super.removeNode(nodeInfo);
    if (known) {
      reports.nodeRemoved(nodeInfo.getNodeID());
    }
  }

  @Override
  protected synchronized void completedContainerInternal(RMContainer rmContainer, ContainerStatus containerStatus,
      RMContainerEventType event) {
    super.completedContainerInternal(rmContainer, containerStatus, event);
    reports.containerFinished(rmContainer, containerStatus);
  }

  /** FifoScheduler ignores relaxLocality; the plugin enforces it on the native path too ({@link LocalityRules}). */
  @Override
  protected boolean mayAssign(FiCaSchedulerNode node, RlAppAttempt application, SchedulerRequestKey schedulerKey,
      NodeType type) {
    int rack = application.getPendingAsk(schedulerKey, node.getRackName()).getCount();
    NodeType allowed = localityOn(application, schedulerKey, node, 0, rack);
    return type == NodeType.RACK_LOCAL ? allowed == NodeType.RACK_LOCAL : allowed != null;
  }

  @Override
  protected void containerAssigned(Container container, RlAppAttempt application, SchedulerRequestKey schedulerKey,
      FiCaSchedulerNode node, NodeType type) {
    rlMetrics.nativeContainers.increment();
    if (waitCap != null) {
      waitCap.placed(Snapshots.askId(application, schedulerKey));
    }
    reportStarted(container, application, schedulerKey, node, EngineReports.locality(type), "");
  }

  /** A node update of a node with room: the engine's part first, FIFO's own assignment when it falls back. */
  @Override
  protected void assignContainers(FiCaSchedulerNode node) {
    if (engine == null || !engine.hasAnswer(node.getNodeID())) {
      rlMetrics.nodeUpdates.increment(); // heartbeats, not the node updates that apply an answer
    }
    long start = System.nanoTime();
    Handled handled = scheduleWithEngine(node);
    if (handled == Handled.ENGINE || handled == Handled.ASKED) {
      rlMetrics.engineNanos.add(System.nanoTime() - start);
    } else if (handled == Handled.NATIVE) {
      super.assignContainers(node);
      rlMetrics.nativeHeartbeats.increment();
      rlMetrics.nativeNanos.add(System.nanoTime() - start);
    }
  }

  // ------------------------------------------------------------------ the engine path

  private ClusterSummary clusterSummary() {
    return ClusterSummary.newBuilder()
        .setNumNodes(nodeTracker.nodeCount())
        .setNumRacks(racks.size())
        .setTotal(Snapshots.resource(getClusterResource()))
        .setUnallocated(Snapshots.resource(Resources.subtract(getClusterResource(), getUsedResource())))
        .setResourceCalculator(ResourceFit.kind(getResourceCalculator()))
        .build();
  }

  /**
   * The engine's part of a node update (see {@link EnginePath}): apply the answer that came back for this node, or
   * send the node's snapshot and hold the node until its answer is in; NATIVE when this update must be scheduled
   * here (no engine, a failed or invalid answer, open breaker, refused or unknown engine version).
   */
  private Handled scheduleWithEngine(FiCaSchedulerNode node) {
    if (engine == null) {
      return Handled.NATIVE;
    }
    EnginePath.Answer answer = engine.take(node.getNodeID());
    if (answer != null) {
      return applyAnswer(node, answer);
    }
    if (engine.heldHeartbeat(node.getNodeID())) {
      return Handled.ASKED; // a heartbeat while the answer is on its way: the node stays held
    }
    List<RlAppAttempt> attempts = new ArrayList<>(applications.size());
    for (SchedulerApplication<RlAppAttempt> app : applications.values()) {
      RlAppAttempt attempt = app.getCurrentAppAttempt();
      if (attempt != null && !attempt.isStopped() && Snapshots.hasPending(attempt, node.getPartition())
          && !Snapshots.blacklisted(attempt, node)) {
        attempts.add(attempt);
      }
    }
    if (attempts.isEmpty()) {
      return Handled.IDLE; // nothing pending: nothing to decide, natively or not
    }
    long now = System.currentTimeMillis();
    if (waitCap.overdue(node, queue -> waitCap.schedulerLimit(), nodeTracker.nodeCount(), getResourceCalculator(),
        now) != null) {
      return Handled.NATIVE; // an ask that can use this node waited past its cap (counted by reason)
    }
    if (!engine.mayAsk()) {
      return Handled.NATIVE; // before the snapshot: an open breaker costs no snapshot
    }
    Snapshots.Snapshot snapshot = engine.snapshots().build(engine.nextRequestId(), node, attempts, jobs,
        clusterSummary(), getResourceCalculator(), now);
    if (!snapshot.anyFits) {
      // the AMs withdrew their asks meanwhile, or none fits the node by the RM's calculator or may go there:
      // native FIFO would place nothing either, so no engine call
      return Handled.IDLE;
    }
    if (mode == ShadowMode.Mode.SHADOW) { // ask, never wait, never apply: YARN schedules this heartbeat
      NodeId id = node.getNodeID();
      ShadowMode.Ask ask = shadow.begin(id);
      if (ask != null) {
        // on the call's thread: only ShadowMode's own state and the (thread-safe) report queue are touched
        engine.sendShadow(snapshot, (response, failure) -> shadow.answered(ask, response, failure, engine::report));
      }
      return Handled.NATIVE;
    }
    engine.send(node.getNodeID(), snapshot);
    return Handled.ASKED;
  }

  /** Re-validate and apply an answer on the node it was asked for; NATIVE when it cannot be used. */
  private Handled applyAnswer(FiCaSchedulerNode node, EnginePath.Answer answer) {
    if (answer.failure != null) {
      engine.failed(answer.failure);
      return Handled.NATIVE;
    }
    String problem = Snapshots.check(answer.response, answer.snapshot);
    if (problem == null) {
      problem = applyAssignments(node, answer.snapshot, answer.response);
    }
    if (problem != null) {
      engine.invalid(node.getNodeID(), problem);
      return Handled.NATIVE;
    }
    engine.applied();
    waitCap.answered(answer.snapshot, answer.response, System.currentTimeMillis());
    for (SchedulerApplication<RlAppAttempt> app : applications.values()) {
      if (app.getCurrentAppAttempt() != null) {
        updateAppHeadRoom(app.getCurrentAppAttempt());
      }
    }
    return Handled.ENGINE;
  }

  /**
   * Place the engine's containers one by one, each at the locality YARN's own counts give it on this node.
   * Returns null, or why the rest of the answer could not be applied (what was placed before that stays placed).
   */
  private String applyAssignments(FiCaSchedulerNode node, Snapshots.Snapshot snapshot, ScheduleResponse response) {
    placedNow.clear();
    for (Assignment a : response.getAssignmentsList()) {
      Snapshots.AskRef ref = snapshot.asks.get(a.getAskId());
      RlAppAttempt app = (RlAppAttempt) ref.app;
      // the application's monitor before its lock, as FifoScheduler's assignContainers and allocate take them: the
      // other order deadlocks against an AM's allocate call (seen in RlSchedulerTest)
      synchronized (app) {
        String problem = applyAssignment(node, a, ref, app, response);
        if (problem != null) {
          return problem;
        }
      }
    }
    return null;
  }

  /**
   * Place one assignment's containers, each re-checked against the ask as it is now (fresh answers): an ask the AM
   * withdrew, resized or blacklisted this node for while the answer was on its way, or one that no longer fits, gets
   * nothing more from this answer (counted in AnswerContainersDiscarded, not held against the engine). A container
   * the engine places where the ask's locality, unchanged since the snapshot, forbids is an invalid answer.
   */
  private String applyAssignment(FiCaSchedulerNode node, Assignment a, Snapshots.AskRef ref, RlAppAttempt app,
      ScheduleResponse response) {
    for (int i = 0; i < a.getCount(); i++) {
      PendingAsk now = app.isStopped() ? PendingAsk.ZERO : app.getPendingAsk(ref.key, ResourceRequest.ANY);
      boolean changed = now.getCount() != ref.outstanding - placedSoFar(ref)
          || !now.getPerAllocationResource().equals(ref.capability) || anyRelax(app, ref.key) != ref.anyRelax;
      NodeType type = now.getCount() <= 0 ? null : localityOn(app, ref.key, node);
      if (now.getCount() <= 0 || !now.getPerAllocationResource().equals(ref.capability)
          || Snapshots.blacklisted(app, node)
          || !ResourceFit.fits(getResourceCalculator(), ref.capability, 1, node.getUnallocatedResource())
          || (type == null && changed)) {
        rlMetrics.answerContainersDiscarded.add(a.getCount() - i); // stale: what is left of this assignment
        return null;
      }
      if (type == null) {
        return a.getAskId() + " may not be placed on " + node.getNodeName() + " (locality constraints)";
      }
      Container container = BuilderUtils.newContainer(
          BuilderUtils.newContainerId(app.getApplicationAttemptId(), app.getNewContainerId()),
          node.getRMNode().getNodeID(), node.getRMNode().getHttpAddress(), ref.capability,
          ref.key.getPriority(), null, ref.key.getAllocationRequestId());
      RMContainer rmContainer = app.allocate(type, node, ref.key, container);
      if (rmContainer == null) {
        rlMetrics.answerContainersDiscarded.add(a.getCount() - i);
        return null;
      }
      node.allocateContainer(rmContainer);
      increaseUsedResources(rmContainer);
      rlMetrics.engineContainers.increment();
      placedNow.merge(ref, 1, Integer::sum);
      waitCap.placed(a.getAskId());
      Locality locality = type == NodeType.NODE_LOCAL && a.getLocality() == Locality.LOCALITY_CACHE_LOCAL
          ? Locality.LOCALITY_CACHE_LOCAL : EngineReports.locality(type);
      reportStarted(container, app, ref.key, node, locality, response.getDecisionId());
    }
    return null;
  }

  /** Containers of each ask placed so far while applying the current answer (scheduler thread only). */
  private final Map<Snapshots.AskRef, Integer> placedNow = new java.util.IdentityHashMap<>();

  private int placedSoFar(Snapshots.AskRef ref) {
    return placedNow.getOrDefault(ref, 0);
  }

  private static boolean anyRelax(RlAppAttempt app, SchedulerRequestKey key) {
    AppPlacementAllocator<?> placement = app.getAppSchedulingInfo().getAppPlacementAllocator(key);
    ResourceRequest any = placement == null ? null : placement.getResourceRequests().get(ResourceRequest.ANY);
    return any == null || any.getRelaxLocality();
  }

  private void reportStarted(Container container, RlAppAttempt app, SchedulerRequestKey key, FiCaSchedulerNode node,
      Locality locality, String decisionId) {
    reports.containerStarted(container.getId(), app.getApplicationId(), node.getNodeID(), Snapshots.askId(app, key),
        locality, decisionId, mode == ShadowMode.Mode.SHADOW && decisionId.isEmpty());
  }

  /**
   * The locality a container of this ask would have on this node by YARN's counts and relaxLocality flags
   * ({@link LocalityRules}), or null when it may not go there.
   */
  private static NodeType localityOn(RlAppAttempt app, SchedulerRequestKey key, FiCaSchedulerNode node) {
    return localityOn(app, key, node, app.getPendingAsk(key, node.getNodeName()).getCount(),
        app.getPendingAsk(key, node.getRackName()).getCount());
  }

  private static NodeType localityOn(RlAppAttempt app, SchedulerRequestKey key, FiCaSchedulerNode node, int host,
      int rack) {
    int any = app.getPendingAsk(key, ResourceRequest.ANY).getCount();
    if (any <= 0) {
      return null;
    }
    AppPlacementAllocator<?> placement = app.getAppSchedulingInfo().getAppPlacementAllocator(key);
    if (placement == null) {
      return null;
    }
    return LocalityRules.allowed(placement.getResourceRequests(), any, host, rack, node.getRackName());
  }

}
