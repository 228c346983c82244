package org.yarnrl.yarn;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.management.ObjectName;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.exceptions.YarnRuntimeException;
import org.apache.hadoop.yarn.server.resourcemanager.RMContext;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMAppState;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainer;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainerEventType;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.NodeType;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.Queue;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerApplication;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.AbstractLeafQueue;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CSQueue;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacitySchedulerConfiguration;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.ContainerAllocationProposal;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.ResourceCommitRequest;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.SchedulerContainer;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.fica.FiCaSchedulerApp;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.fica.FiCaSchedulerNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.AppAddedSchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.AppRemovedSchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.NodeAddedSchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.NodeRemovedSchedulerEvent;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.SchedulerEvent;
import org.apache.hadoop.yarn.server.scheduler.SchedulerRequestKey;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.yarnrl.v1.ContainerFinished;
import org.yarnrl.v1.ContainerStarted;
import org.yarnrl.v1.Event;
import org.yarnrl.v1.JobFinished;
import org.yarnrl.v1.Locality;
import org.yarnrl.v1.NodeAdded;
import org.yarnrl.v1.NodeRemoved;

/**
 * The yarn-rl CapacityScheduler ({@code yarn.resourcemanager.scheduler.class=org.yarnrl.yarn.RlCapacityScheduler}):
 * Hadoop's CapacityScheduler, unchanged, with the engine deciding where and whether now the pending containers of
 * the queues that opt in go.
 *
 * <p>Opt-in per queue in capacity-scheduler.xml: {@code yarn.scheduler.capacity.<queue-path>.yarnrl.engine.enabled}
 * = true (a parent's setting holds for its children unless they set their own). The engine (address, deadline,
 * breaker: the {@code yarnrl.engine.*} settings of RlScheduler, in yarn-site.xml) is asked asynchronously
 * ({@link EnginePath}): a heartbeat of a node with room while an engine queue has pending asks holds the node and
 * sends its snapshot; when the answer is in, a re-dispatched NODE_UPDATE runs CapacityScheduler's ordinary
 * allocation pass on that node with the answer as a per-node plan ({@link NodePlan}, read by
 * {@link RlAppPlacementAllocator}): queues are visited in CapacityScheduler's order under its capacities, user
 * limits, partitions, reservations and ACLs, and every container is committed through its tryCommit; an engine
 * queue's ask is placed only where and as often as the engine said. Other queues, and everything on a failure,
 * timeout, invalid answer, open breaker or refused engine version, are plain CapacityScheduler (counted per reason
 * on the same JMX bean as RlScheduler, {@code Hadoop:service=ResourceManager,name=RlScheduler}). Preemption is
 * CapacityScheduler's own monitor, untouched.
 *
 * <p>Shadow mode, per queue: {@code yarn.scheduler.capacity.<queue-path>.yarnrl.engine.mode} = shadow (or active;
 * a parent's setting holds for its children unless they set their own; the default is the scheduler's
 * {@code yarnrl.engine.mode}, itself active by default) for an engine queue: on each heartbeat where a shadow queue
 * has a pending ask that fits the node, the engine is asked ({@link ShadowMode}) but never waited for and never
 * applied; CapacityScheduler places that queue's containers exactly as without the plugin, and they are reported to
 * the engine with the shadow decision's id. The snapshot is taken before the heartbeat's node update (its
 * finished containers are released inside CapacityScheduler's private allocation step), so a node that frees its
 * room on a heartbeat is shadowed from its next one. {@code yarn rmadmin -refreshQueues} switches modes, no restart.
 *
 * <p>Asynchronous scheduling ({@code yarn.scheduler.capacity.schedule-asynchronously.enable}, on by default in
 * 3.5.0) allocates from CapacityScheduler's own threads outside node updates: with an engine address set it is
 * turned off unless yarn-site.xml sets it explicitly. When it is on, heartbeats still ask the engine and each answer
 * becomes its node's plan until the node's next heartbeat, applied by those threads and committed by tryCommit
 * ({@code asyncNodeUpdate}).
 */
public class RlCapacityScheduler extends CapacityScheduler {
  private static final Logger LOG = LoggerFactory.getLogger(RlCapacityScheduler.class);

  /** Per queue, after {@code yarn.scheduler.capacity.<queue-path>.}: whether the engine places its containers. */
  public static final String QUEUE_ENGINE_ENABLED = "yarnrl.engine.enabled";
  /** Per queue, after {@code yarn.scheduler.capacity.<queue-path>.}: active or shadow, for an engine queue. */
  public static final String QUEUE_ENGINE_MODE = ShadowMode.MODE;
  private static final String CS_PREFIX = "yarn.scheduler.capacity.";

  private final RlSchedulerMetrics rlMetrics = new RlSchedulerMetrics();
  private final Map<NodeId, NodePlan> plans = new ConcurrentHashMap<>();
  /** Per queue path: whether the engine places its containers (an engine queue in active mode). */
  private final Map<String, Boolean> engineQueues = new ConcurrentHashMap<>();
  /** Per queue path: whether it is an engine queue in shadow mode. */
  private final Map<String, Boolean> shadowQueues = new ConcurrentHashMap<>();
  private final ShadowMode shadow = new ShadowMode(rlMetrics);
  /** The scheduler's yarnrl.engine.mode: the mode of every engine queue that does not set its own. */
  private volatile ShadowMode.Mode schedulerMode = ShadowMode.Mode.ACTIVE;
  private volatile boolean anyShadowQueue;
  private final Map<ApplicationId, Snapshots.JobInfo> jobs = new ConcurrentHashMap<>();
  private final EngineReports reports = new EngineReports(shadow);
  private final java.util.Set<String> racks = ConcurrentHashMap.newKeySet();
  private volatile NodePlan activePlan;
  /** The thread running the pass of {@link #activePlan} (the scheduler's), or null. */
  private volatile Thread passThread;
  /** CapacityScheduler's asynchronous scheduling is on: plans stay in force between heartbeats (AsyncPlans). */
  private boolean async;
  /** Asynchronous scheduling: nodes scheduled natively (a fallback) until their next heartbeat. */
  private final java.util.Set<NodeId> nativeUntilHeartbeat = ConcurrentHashMap.newKeySet();
  private volatile boolean anyEngineQueue;
  private EnginePath engine;
  private WaitCap waitCap;
  /** Per queue path: its wait cap (its own setting, else its nearest parent's, else the scheduler's). */
  private final Map<String, WaitCap.Limit> queueWaitLimits = new ConcurrentHashMap<>();
  private ObjectName mbeanName;

  public RlCapacityScheduler() {
    super();
  }

  @Override
  public void serviceInit(Configuration conf) throws Exception {
    // CapacityScheduler 3.5.0 schedules asynchronously by default, from its own threads outside node updates; the
    // engine's answers are applied in node updates, so with an engine configured it is off unless yarn-site.xml
    // sets it explicitly (then the engine is not used, see below)
    if (!conf.getTrimmed(RlScheduler.ENGINE_ADDRESS, "").isEmpty()
        && conf.get(CapacitySchedulerConfiguration.SCHEDULE_ASYNCHRONOUSLY_ENABLE) == null) {
      conf.setBoolean(CapacitySchedulerConfiguration.SCHEDULE_ASYNCHRONOUSLY_ENABLE, false);
      LOG.info("RlCapacityScheduler: {}=false (engine answers are applied in node updates)",
          CapacitySchedulerConfiguration.SCHEDULE_ASYNCHRONOUSLY_ENABLE);
    }
    usePlacementAllocator(conf);
    RMContext context = getRMContext();
    if (context != null && context.getYarnConfiguration() != null && context.getYarnConfiguration() != conf) {
      usePlacementAllocator(context.getYarnConfiguration());
    }
    super.serviceInit(conf);
    // checked with or without an engine: a bad value stops the RM either way
    waitCap = WaitCap.fromConf(conf, getConfiguration(), rlMetrics);
    refreshEngineQueues(conf);
    rlMetrics.resourceCalculator = getResourceCalculator().getClass().getSimpleName();
    async = getConfiguration().getScheduleAynschronously();
    engine = EnginePath.fromConf(conf, rlMetrics, "RlCapacityScheduler");
    reports.attach(engine);
    if (engine != null) {
      engine.setRMContext(getRMContext());
      // the batched path reads the asks under CapacityScheduler's read lock, as a heartbeat's snapshot does
      engine.setUnderLock(snapshot -> {
        readLock.lock();
        try {
          snapshot.run();
        } finally {
          readLock.unlock();
        }
      });
      if (async) {
        // a batched answer becomes its node's plan as it arrives: CapacityScheduler's threads apply plans, so it
        // needs no node update (a second one per heartbeat would wait behind the RM's whole event queue)
        engine.setApplier(this::installArrived); // its boolean: for node updates
        LOG.info("RlCapacityScheduler: {}=true: heartbeats ask the engine, CapacityScheduler's own threads apply "
            + "each node's plan until its next heartbeat", CapacitySchedulerConfiguration.SCHEDULE_ASYNCHRONOUSLY_ENABLE);
      }
    }
  }

  /** Every application's asks go through RlAppPlacementAllocator (LocalityAppPlacementAllocator + the plan). */
  private static void usePlacementAllocator(Configuration conf) {
    String configured = conf.getTrimmed(YarnConfiguration.APPLICATION_PLACEMENT_TYPE_CLASS);
    if (configured == null || configured.isEmpty()) {
      conf.set(YarnConfiguration.APPLICATION_PLACEMENT_TYPE_CLASS, RlAppPlacementAllocator.class.getName());
      return;
    }
    try {
      if (!RlAppPlacementAllocator.class.isAssignableFrom(Class.forName(configured))) {
        throw new YarnRuntimeException(YarnConfiguration.APPLICATION_PLACEMENT_TYPE_CLASS + "=" + configured
            + ": RlCapacityScheduler needs " + RlAppPlacementAllocator.class.getName()
            + " (or a subclass) there; leave the setting unset");
      }
    } catch (ClassNotFoundException e) {
      throw new YarnRuntimeException(YarnConfiguration.APPLICATION_PLACEMENT_TYPE_CLASS + "=" + configured
          + ": no such class", e);
    }
  }

  @Override
  public void serviceStart() throws Exception {
    super.serviceStart();
    mbeanName = EnginePath.registerBean(rlMetrics);
  }

  @Override
  public void serviceStop() throws Exception {
    EnginePath.stop(mbeanName, engine, rlMetrics, "RlCapacityScheduler");
    mbeanName = null;
    super.serviceStop();
  }

  @Override
  public void reinitialize(Configuration newConf, RMContext rmContext, boolean validation) throws IOException {
    super.reinitialize(newConf, rmContext, validation);
    refreshEngineQueues(newConf); // refreshQueues may switch queues on or off, or between shadow and active
  }

  /** The plugin's counters (also on JMX). */
  public RlSchedulerMetrics getRlMetrics() {
    return rlMetrics;
  }

  private void refreshEngineQueues(Configuration yarnConf) {
    String wide = getConfiguration().get(ShadowMode.MODE);
    // a bad value is refused here, before anything of this refresh is in force (at start: the RM stops)
    // else yarn-site.xml's (as it is now on a refresh: the RM passes the configuration it read at start)
    ShadowMode.Mode nextMode = wide != null ? ShadowMode.Mode.parse(wide, ShadowMode.MODE)
        : ShadowMode.Mode.fromSite(yarnConf, getRMContext());
    boolean any = false;
    boolean anyShadowKey = nextMode == ShadowMode.Mode.SHADOW;
    for (Map.Entry<String, String> e : getConfiguration().getPropsWithPrefix(CS_PREFIX).entrySet()) {
      String key = e.getKey();
      String value = e.getValue() == null ? "" : e.getValue().trim();
      if (key.endsWith("." + QUEUE_ENGINE_ENABLED)) {
        if (!value.equalsIgnoreCase("true") && !value.equalsIgnoreCase("false")) {
          throw new YarnRuntimeException(CS_PREFIX + key + "=" + value + " is not valid: it must be true or false");
        }
        any |= Boolean.parseBoolean(value);
      } else if (key.endsWith("." + WaitCap.QUEUE_MAX_HEARTBEATS)) {
        WaitCap.heartbeats(CS_PREFIX + key, value); // throws naming the key and the range
      } else if (key.endsWith("." + WaitCap.QUEUE_MAX_MS)) {
        WaitCap.millis(CS_PREFIX + key, value, WaitCap.DEFAULT_MAX_MS);
      } else if (key.endsWith("." + QUEUE_ENGINE_MODE)) {
        anyShadowKey |= ShadowMode.Mode.parse(value, CS_PREFIX + key) == ShadowMode.Mode.SHADOW;
      }
    }
    engineQueues.clear();
    shadowQueues.clear();
    queueWaitLimits.clear();
    if (nextMode != schedulerMode) {
      LOG.info("RlCapacityScheduler: {} {} -> {}", ShadowMode.MODE, schedulerMode.label(), nextMode.label());
    }
    schedulerMode = nextMode;
    anyShadowQueue = any && anyShadowKey;
    anyEngineQueue = any;
    rlMetrics.engineMode = nextMode.label();
    List<String> inShadow = new ArrayList<>();
    if (anyShadowQueue && getRootQueue() != null) {
      collectShadowQueues(getRootQueue(), inShadow);
    }
    rlMetrics.shadowQueues = String.join(",", inShadow);
    if (anyShadowQueue) {
      LOG.info("RlCapacityScheduler: engine queues in shadow mode (asked, never applied): {}", inShadow);
    }
    if (!any) {
      LOG.info("RlCapacityScheduler: no queue sets {}{}.{}=true; scheduling is plain CapacityScheduler", CS_PREFIX,
          "<queue-path>", QUEUE_ENGINE_ENABLED);
    }
  }

  private void collectShadowQueues(CSQueue queue, List<String> out) {
    List<CSQueue> children = queue.getChildQueues();
    if (children == null || children.isEmpty()) {
      if (isShadowQueue(queue.getQueuePath())) {
        out.add(queue.getQueuePath());
      }
      return;
    }
    for (CSQueue child : children) {
      collectShadowQueues(child, out);
    }
  }

  /**
   * Whether the engine places this queue's containers: an engine queue (its own {@value #QUEUE_ENGINE_ENABLED},
   * else its nearest parent's; default no) in active mode.
   */
  public boolean isEngineQueue(String queuePath) {
    if (queuePath == null || !anyEngineQueue) {
      return false;
    }
    return engineQueues.computeIfAbsent(queuePath,
        path -> optedIn(path) && queueMode(path) == ShadowMode.Mode.ACTIVE);
  }

  /** Whether this queue is an engine queue in shadow mode: the engine is asked, CapacityScheduler places. */
  public boolean isShadowQueue(String queuePath) {
    if (queuePath == null || !anyShadowQueue) {
      return false;
    }
    return shadowQueues.computeIfAbsent(queuePath,
        path -> optedIn(path) && queueMode(path) == ShadowMode.Mode.SHADOW);
  }

  private boolean optedIn(String path) {
    String v = nearest(path, QUEUE_ENGINE_ENABLED);
    return v != null && Boolean.parseBoolean(v);
  }

  private ShadowMode.Mode queueMode(String path) {
    String v = nearest(path, QUEUE_ENGINE_MODE);
    return v == null ? schedulerMode : ShadowMode.Mode.parse(v, CS_PREFIX + path + "." + QUEUE_ENGINE_MODE);
  }

  /** A per-queue setting: the queue's own, else its nearest parent's, else null. */
  private String nearest(String path, String suffix) {
    for (String p = path; !p.isEmpty(); p = p.contains(".") ? p.substring(0, p.lastIndexOf('.')) : "") {
      String v = getConfiguration().getTrimmed(CS_PREFIX + p + "." + suffix);
      if (v != null && !v.isEmpty()) {
        return v;
      }
    }
    return null;
  }

  /** A queue's wait cap: its own settings, else its nearest parent's, else the scheduler's (yarn-site.xml). */
  WaitCap.Limit waitLimit(String queuePath) {
    if (queuePath == null) {
      return waitCap.schedulerLimit();
    }
    return queueWaitLimits.computeIfAbsent(queuePath, path -> {
      int heartbeats = waitCap.schedulerLimit().heartbeats;
      long ms = waitCap.schedulerLimit().ms;
      boolean hbSet = false;
      boolean msSet = false;
      for (String p = path; !p.isEmpty() && !(hbSet && msSet);
           p = p.contains(".") ? p.substring(0, p.lastIndexOf('.')) : "") {
        String hb = getConfiguration().getTrimmed(CS_PREFIX + p + "." + WaitCap.QUEUE_MAX_HEARTBEATS);
        if (!hbSet && hb != null && !hb.isEmpty()) {
          heartbeats = WaitCap.heartbeats(CS_PREFIX + p + "." + WaitCap.QUEUE_MAX_HEARTBEATS, hb);
          hbSet = true;
        }
        String v = getConfiguration().getTrimmed(CS_PREFIX + p + "." + WaitCap.QUEUE_MAX_MS);
        if (!msSet && v != null && !v.isEmpty()) {
          ms = WaitCap.millis(CS_PREFIX + p + "." + WaitCap.QUEUE_MAX_MS, v, ms);
          msSet = true;
        }
      }
      return new WaitCap.Limit(heartbeats, ms);
    });
  }

  /** The plugin's wait caps (tests, web view). */
  WaitCap waitCap() {
    return waitCap;
  }

  /** The engine path, or null (web view). */
  EnginePath enginePath() {
    return engine;
  }

  /** Whether the attempt's queue uses less than its guaranteed capacity (default partition). */
  boolean withinGuarantee(ApplicationAttemptId attempt) {
    FiCaSchedulerApp app = getApplicationAttempt(attempt);
    Queue queue = app == null ? null : app.getQueue();
    if (!(queue instanceof CSQueue)) {
      return true;
    }
    return ((CSQueue) queue).getQueueCapacities().getUsedCapacity("") < 1.0f;
  }

  private boolean isEngineQueue(Queue queue) {
    return queue instanceof CSQueue && isEngineQueue(((CSQueue) queue).getQueuePath());
  }

  private boolean isShadowQueue(Queue queue) {
    return queue instanceof CSQueue && isShadowQueue(((CSQueue) queue).getQueuePath());
  }

  /** Whether the engine places this attempt's containers (by its queue now). */
  boolean isEngineApp(ApplicationAttemptId attempt) {
    FiCaSchedulerApp app = getApplicationAttempt(attempt);
    return app != null && isEngineQueue(app.getQueue());
  }

  /** The plan in force on this node during the current pass, or null (CapacityScheduler alone). */
  NodePlan planFor(NodeId node) {
    if (async && engine != null && anyEngineQueue) {
      // CapacityScheduler's threads visit every node every few ms: an engine queue's ask goes only where a plan
      // allows it, and nowhere on a node that has not been decided yet (NONE) unless that node fell back
      return nativeUntilHeartbeat.contains(node) ? null : plans.getOrDefault(node, NodePlan.NONE);
    }
    return plans.isEmpty() ? null : plans.get(node);
  }

  /** The plan of the pass running now on the scheduler thread, or null. */
  NodePlan activePlan() {
    return activePlan;
  }

  /** The plan of the pass the calling thread is running (a node update on the scheduler's thread), or null. */
  NodePlan passPlanOnThisThread() {
    return passThread == Thread.currentThread() ? activePlan : null;
  }

  @Override
  protected void nodeUpdate(RMNode nm) {
    if (engine == null || !anyEngineQueue) {
      super.nodeUpdate(nm);
      return;
    }
    if (async) {
      asyncNodeUpdate(nm);
      return;
    }
    NodeId id = nm.getNodeID();
    EnginePath.Answer answer = engine.take(id);
    if (answer != null) {
      applyAnswer(nm, answer);
      return;
    }
    if (anyShadowQueue) {
      shadowAsk(id); // the shadow queues' ask for this heartbeat, before anything is placed on it
    }
    if (engine.heldHeartbeat(id)) {
      pass(nm, NodePlan.HOLD); // a heartbeat while the answer is on its way: bookkeeping only
      return;
    }
    FiCaSchedulerNode before = getNode(id);
    List<FiCaSchedulerApp> attempts = before == null ? List.of() : engineAttempts(before);
    if (attempts.isEmpty()) {
      pass(nm, NodePlan.NONE); // nothing for the engine to decide here (an engine ask arriving meanwhile waits)
      return;
    }
    rlMetrics.nodeUpdates.increment();
    long start = System.nanoTime();
    if (waitCap.overdue(before, this::waitLimit, getNumClusterNodes(), getResourceCalculator(),
        System.currentTimeMillis()) != null || !engine.mayAsk()) {
      // an engine queue's ask that can use this node waited past its cap, or the engine may not be asked: plain
      // CapacityScheduler on this heartbeat (counted by reason)
      super.nodeUpdate(nm);
      rlMetrics.nativeHeartbeats.increment();
      rlMetrics.nativeNanos.add(System.nanoTime() - start);
      return;
    }
    // CapacityScheduler's bookkeeping (finished containers released) with the node held, then its snapshot
    pass(nm, NodePlan.HOLD);
    FiCaSchedulerNode node = getNode(id);
    if (node == null
        || !ResourceFit.fits(getResourceCalculator(), getMinimumResourceCapability(), 1, node.getUnallocatedResource())) {
      return; // gone, or no room for any container by the RM's calculator: nothing to decide
    }
    Snapshots.Snapshot snapshot;
    readLock.lock();
    try {
      snapshot = engine.snapshots().build(engine.nextRequestId(), node, attempts, jobs,
          Snapshots.cluster(this, racks), getResourceCalculator(), System.currentTimeMillis());
    } finally {
      readLock.unlock();
    }
    if (!snapshot.anyFits) {
      // the asks went meanwhile, or none fits the node by the calculator or may go there: no engine call (the
      // other queues had their turn in the held pass above)
      return;
    }
    engine.send(id, snapshot);
    rlMetrics.engineNanos.add(System.nanoTime() - start);
  }

  /** Shadow mode: ask about the shadow queues' asks on this node, never wait, never apply (ShadowMode). */
  private void shadowAsk(NodeId id) {
    FiCaSchedulerNode node = getNode(id);
    List<FiCaSchedulerApp> attempts = node == null ? List.of() : attemptsIn(node, true);
    if (attempts.isEmpty()) {
      return; // no shadow queue's ask may use this node: CapacityScheduler places none of theirs here
    }
    if (!engine.mayAsk()
        || !ResourceFit.fits(getResourceCalculator(), getMinimumResourceCapability(), 1, node.getUnallocatedResource())) {
      shadow.unshadowed(id);
      return;
    }
    Snapshots.Snapshot snapshot;
    readLock.lock();
    try {
      snapshot = engine.snapshots().build(engine.nextRequestId(), node, attempts, jobs,
          Snapshots.cluster(this, racks), getResourceCalculator(), System.currentTimeMillis());
    } finally {
      readLock.unlock();
    }
    ShadowMode.Ask ask = snapshot.anyFits ? shadow.begin(id) : null;
    if (ask == null) {
      if (!snapshot.anyFits) {
        shadow.unshadowed(id);
      }
      return;
    }
    // on the call's thread: only ShadowMode's own state and the (thread-safe) report queue are touched
    engine.sendShadow(snapshot, (response, failure) -> shadow.answered(ask, response, failure, engine::report));
  }

  /** Shadow mode's counters (tests). */
  ShadowMode getShadow() {
    return shadow;
  }

  /** One CapacityScheduler node update with this plan in force on the node. */
  private void pass(RMNode nm, NodePlan plan) {
    plans.put(nm.getNodeID(), plan);
    activePlan = plan;
    passThread = Thread.currentThread();
    try {
      super.nodeUpdate(nm);
    } finally {
      passThread = null;
      activePlan = null;
      plans.remove(nm.getNodeID());
    }
  }

  private void applyAnswer(RMNode nm, EnginePath.Answer answer) {
    long start = System.nanoTime();
    FiCaSchedulerNode node = getNode(nm.getNodeID());
    String problem = null;
    if (answer.failure != null) {
      engine.failed(answer.failure);
    } else if (node != null) {
      problem = Snapshots.check(answer.response, answer.snapshot);
      if (problem != null) {
        engine.invalid(nm.getNodeID(), problem);
      }
    }
    if (answer.failure != null || problem != null || node == null) {
      super.nodeUpdate(nm);
      rlMetrics.nativeHeartbeats.increment();
      rlMetrics.nativeNanos.add(System.nanoTime() - start);
      return;
    }
    NodePlan plan = NodePlan.of(answer.response, answer.snapshot);
    pass(nm, plan);
    // what the plan allowed for asks withdrawn meanwhile (resized ones are discarded in precheckNode)
    rlMetrics.answerContainersDiscarded.add(plan.unusedWithdrawn(answer.snapshot));
    engine.applied();
    waitCap.answered(answer.snapshot, answer.response, System.currentTimeMillis());
    rlMetrics.engineNanos.add(System.nanoTime() - start);
  }

  // ------------------------------------------------------------------ asynchronous scheduling (3.5.0's default)

  /**
   * A node update with CapacityScheduler's asynchronous scheduling on: the update itself only does bookkeeping
   * (CapacityScheduler's threads allocate, sweeping every node every few ms under the read lock, and its committer
   * validates each proposal in {@code tryCommit} under the write lock). A heartbeat of a node with room while an
   * engine queue has asks that may use it holds the node for the engine queues (HOLD: other queues go on within
   * their guarantee) and asks the engine (batched or not); the answer's re-dispatched update installs it as the
   * node's plan, which the sweep applies through {@link RlAppPlacementAllocator} until the node's next heartbeat
   * asks again. A failed, invalid or stale answer, an open breaker or a waited-out ask: the node is CapacityScheduler's
   * alone until its next heartbeat (counted by reason).
   */
  private void asyncNodeUpdate(RMNode nm) {
    NodeId id = nm.getNodeID();
    if (engine.hasAnswer(id)) { // an answer not installed yet (per heartbeat, or before the apply thread got to it)
      if (!installArrived(id)) {
        return; // a per-heartbeat answer: this is the update re-dispatched for it
      } // a batched answer was applied on arrival (no update re-dispatched): this is the node's own heartbeat
    }
    super.nodeUpdate(nm); // bookkeeping only: asynchronous scheduling allocates elsewhere
    if (anyShadowQueue) {
      shadowAsk(id); // YARN's containers on this node until its next heartbeat are compared with this answer
    }
    if (engine.heldHeartbeat(id)) {
      return; // still held for the engine queues
    }
    nativeUntilHeartbeat.remove(id);
    FiCaSchedulerNode node = getNode(id);
    List<FiCaSchedulerApp> attempts = node == null ? List.of() : engineAttempts(node);
    if (attempts.isEmpty()) {
      nothingToAsk(id);
      return;
    }
    rlMetrics.nodeUpdates.increment();
    long start = System.nanoTime();
    if (waitCap.overdue(node, this::waitLimit, getNumClusterNodes(), getResourceCalculator(),
        System.currentTimeMillis()) != null || !engine.mayAsk()) {
      nativeUntilHeartbeat.add(id);
      plans.remove(id);
      rlMetrics.nativeHeartbeats.increment();
      return;
    }
    if (!ResourceFit.fits(getResourceCalculator(), getMinimumResourceCapability(), 1, node.getUnallocatedResource())) {
      nothingToAsk(id);
      return;
    }
    Snapshots.Snapshot snapshot;
    readLock.lock();
    try {
      snapshot = engine.snapshots().build(engine.nextRequestId(), node, attempts, jobs,
          Snapshots.cluster(this, racks), getResourceCalculator(), System.currentTimeMillis());
    } finally {
      readLock.unlock();
    }
    if (!snapshot.anyFits) {
      nothingToAsk(id);
      return;
    }
    NodePlan current = plans.get(id);
    if (current == null || current == NodePlan.NONE) {
      plans.put(id, NodePlan.HOLD);
    } // else the node's last plan stays in force until the new answer replaces it (the sweep keeps applying it)
    engine.send(id, snapshot);
    rlMetrics.engineNanos.add(System.nanoTime() - start);
  }

  /**
   * Asynchronous scheduling: whether every container this proposal allocates for an engine queue is one its node's
   * plan in force now still allows (a proposal made under a plan that a newer answer replaced, or one more than the
   * plan allowed because the sweep proposed twice before the first commit, is refused: the engine decides).
   */
  private boolean planAllows(ResourceCommitRequest<?, ?> r) {
    for (Object o : r.getContainersToAllocate()) {
      SchedulerContainer<?, ?> c = ((ContainerAllocationProposal<?, ?>) o).getAllocatedOrReservedContainer();
      if (c == null || c.getSchedulerNode() == null || c.getSchedulerRequestKey() == null
          || !(c.getSchedulerApplicationAttempt() instanceof FiCaSchedulerApp)) {
        continue;
      }
      FiCaSchedulerApp app = (FiCaSchedulerApp) c.getSchedulerApplicationAttempt();
      if (!isEngineQueue(app.getQueue())) {
        continue;
      }
      NodePlan plan = planFor(c.getSchedulerNode().getNodeID());
      if (plan != null && (plan == NodePlan.HOLD || !plan.allows(Snapshots.askId(app, c.getSchedulerRequestKey())))) {
        return false;
      }
    }
    return true;
  }

  /**
   * Asynchronous scheduling: a heartbeat found nothing to ask the engine about on this node. A plan in force stays
   * (an application's last container may be in a proposal not yet committed, which CapacityScheduler counts as not
   * pending: replacing the plan would refuse that commit); otherwise nothing of the engine queues goes there.
   */
  private void nothingToAsk(NodeId id) {
    plans.compute(id, (k, v) -> v == null || v == NodePlan.HOLD ? NodePlan.NONE : v);
  }

  /**
   * Asynchronous scheduling: the answer waiting for this node becomes its plan now (EnginePath's apply thread, or a
   * node update that found it first), under the write lock, as tryCommit reads plans under it.
   */
  private boolean installArrived(NodeId id) {
    writeLock.lock();
    try {
      EnginePath.Answer answer = engine.take(id);
      if (answer != null) {
        installPlan(id, answer);
      }
      return answer != null && answer.plannedNanos != 0;
    } finally {
      writeLock.unlock();
    }
  }

  /** Asynchronous scheduling: an answer becomes its node's plan, or the node CapacityScheduler's alone. */
  private void installPlan(NodeId id, EnginePath.Answer answer) {
    FiCaSchedulerNode node = getNode(id);
    String problem = null;
    if (answer.failure != null) {
      engine.failed(answer.failure);
    } else if (node != null) {
      problem = Snapshots.check(answer.response, answer.snapshot);
      if (problem != null) {
        engine.invalid(id, problem);
      }
    }
    if (answer.failure != null || problem != null || node == null) {
      plans.remove(id);
      nativeUntilHeartbeat.add(id);
      rlMetrics.nativeHeartbeats.increment();
      return;
    }
    plans.put(id, NodePlan.of(answer.response, answer.snapshot));
    engine.applied();
    waitCap.answered(answer.snapshot, answer.response, System.currentTimeMillis());
  }

  /** Attempts in engine queues with pending asks that may use this node, in submission order. */
  private List<FiCaSchedulerApp> engineAttempts(FiCaSchedulerNode node) {
    return attemptsIn(node, false);
  }

  /**
   * Attempts in active (or, with {@code inShadow}, shadow) engine queues with pending asks that may use the node, in
   * submission order. Only applications CapacityScheduler has activated in their leaf queue: one still waiting for
   * activation (the queue's or its user's AM resource limit, maximum-am-resource-percent, which counts the AM of
   * every activated application from activation on, allocated or not) is never allocated to by CapacityScheduler,
   * so an engine that chose it would leave the node idle while the jobs CapacityScheduler can run wait (DeepRM's
   * two-resource run: 5-minute waits up to the wait cap). It waits for activation, as under CapacityScheduler alone.
   */
  private List<FiCaSchedulerApp> attemptsIn(FiCaSchedulerNode node, boolean inShadow) {
    List<FiCaSchedulerApp> out = new ArrayList<>();
    Set<Queue> queuesSeen = Collections.newSetFromMap(new IdentityHashMap<>());
    Set<FiCaSchedulerApp> notActivated = Collections.newSetFromMap(new IdentityHashMap<>());
    for (SchedulerApplication<FiCaSchedulerApp> app : applications.values()) {
      FiCaSchedulerApp attempt = app.getCurrentAppAttempt();
      if (attempt == null || attempt.isStopped() || !(inShadow ? isShadowQueue(attempt.getQueue())
          : isEngineQueue(attempt.getQueue()))) {
        continue;
      }
      if (!Snapshots.hasPending(attempt, node.getPartition()) || Snapshots.blacklisted(attempt, node)) {
        continue;
      }
      Queue queue = attempt.getQueue();
      if (queue instanceof AbstractLeafQueue && queuesSeen.add(queue)) {
        // a weakly consistent view of the queue's pending (not yet activated) applications, usually few
        notActivated.addAll(((AbstractLeafQueue) queue).getPendingApplications());
      }
      if (!notActivated.contains(attempt)) {
        out.add(attempt);
      }
    }
    out.sort(Comparator.comparing(FiCaSchedulerApp::getApplicationId));
    return out;
  }

  // ------------------------------------------------------------------ feedback to the engine (Report)

  @Override
  public boolean tryCommit(Resource cluster, ResourceCommitRequest r, boolean updatePending) {
    if (async && engine != null && anyEngineQueue && !planAllows(r)) {
      // refused as CapacityScheduler refuses a proposal: what the proposal held back as unconfirmed is released
      // (else the application looks as if it had nothing pending, and is never asked about again)
      ContainerAllocationProposal<?, ?> first = (ContainerAllocationProposal<?, ?>) r.getFirstAllocatedOrReservedContainer();
      if (first != null && first.getAllocatedOrReservedContainer() != null
          && first.getAllocatedOrReservedContainer().getSchedulerApplicationAttempt() instanceof FiCaSchedulerApp) {
        ((FiCaSchedulerApp) first.getAllocatedOrReservedContainer().getSchedulerApplicationAttempt())
            .decUnconfirmedRes(r.getTotalAllocatedResource());
      }
      return false;
    }
    boolean committed = super.tryCommit(cluster, r, updatePending);
    if (committed) {
      for (Object o : r.getContainersToAllocate()) {
        ContainerAllocationProposal<?, ?> p = (ContainerAllocationProposal<?, ?>) o;
        SchedulerContainer<?, ?> c = p.getAllocatedOrReservedContainer();
        if (c == null || c.getRmContainer() == null || !c.isAllocated()) {
          continue;
        }
        NodePlan plan = activePlan;
        if (plan == null && async && c.getSchedulerNode() != null) {
          plan = planFor(c.getSchedulerNode().getNodeID()); // committed from CapacityScheduler's own threads
        }
        FiCaSchedulerApp app = (FiCaSchedulerApp) c.getSchedulerApplicationAttempt();
        boolean byEngine = plan != null && plan != NodePlan.HOLD && plan != NodePlan.NONE && app != null
            && isEngineQueue(app.getQueue());
        if (byEngine) {
          rlMetrics.engineContainers.increment();
        } else {
          rlMetrics.nativeContainers.increment();
        }
        if (waitCap != null && app != null && c.getSchedulerRequestKey() != null) {
          waitCap.placed(Snapshots.askId(app, c.getSchedulerRequestKey()));
        }
        reportStarted(c.getRmContainer(), app, c.getSchedulerRequestKey(), p.getAllocationLocalityType(),
            byEngine ? plan.decisionId : "");
      }
    }
    return committed;
  }

  private void reportStarted(RMContainer container, FiCaSchedulerApp app, SchedulerRequestKey key, NodeType type,
      String decisionId) {
    if (app == null) {
      return;
    }
    reports.containerStarted(container.getContainerId(), app.getApplicationId(), container.getAllocatedNode(),
        key == null ? "" : Snapshots.askId(app, key), EngineReports.locality(type), decisionId,
        decisionId.isEmpty() && isShadowQueue(app.getQueue()));
  }

  @Override
  protected void completedContainerInternal(RMContainer rmContainer, ContainerStatus containerStatus,
      RMContainerEventType event) {
    super.completedContainerInternal(rmContainer, containerStatus, event);
    reports.containerFinished(rmContainer, containerStatus);
  }

  @Override
  public void handle(SchedulerEvent event) {
    super.handle(event);
    switch (event.getType()) {
      case APP_ADDED: {
        ApplicationId id = ((AppAddedSchedulerEvent) event).getApplicationId();
        RMApp rmApp = getRMContext().getRMApps().get(id);
        if (rmApp != null) {
          jobs.put(id, new Snapshots.JobInfo(rmApp.getSubmitTime(),
              JobTags.parse(rmApp.getApplicationTags(), rmApp.getSubmitTime())));
        }
        break;
      }
      case APP_REMOVED: {
        AppRemovedSchedulerEvent removed = (AppRemovedSchedulerEvent) event;
        Snapshots.JobInfo job = jobs.remove(removed.getApplicationID());
        if (engine != null) {
          engine.snapshots().forget(removed.getApplicationID());
          waitCap.forget(removed.getApplicationID());
        }
        reports.jobFinished(removed.getApplicationID(), job, removed.getFinalState() == RMAppState.FINISHED);
        break;
      }
      case NODE_ADDED: {
        RMNode n = ((NodeAddedSchedulerEvent) event).getAddedRMNode();
        racks.add(n.getRackName());
        reports.nodeAdded(n);
        break;
      }
      case NODE_REMOVED: {
        RMNode n = ((NodeRemovedSchedulerEvent) event).getRemovedRMNode();
        plans.remove(n.getNodeID());
        nativeUntilHeartbeat.remove(n.getNodeID());
        reports.nodeRemoved(n.getNodeID());
        break;
      }
      default:
        break;
    }
  }
}
