package org.yarnrl.yarn;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.ObjectName;
import org.apache.hadoop.metrics2.util.MBeans;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.exceptions.YarnRuntimeException;
import org.apache.hadoop.yarn.server.resourcemanager.RMContext;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.NodeUpdateSchedulerEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.yarnrl.v1.Event;
import org.yarnrl.v1.ScheduleResponse;

/**
 * A scheduler's way to the engine, shared by RlScheduler (FIFO) and RlCapacityScheduler: the client (deadline,
 * breaker, Report), the version handshake, and the asynchronous per-node asks.
 *
 * <p>Why asynchronous: a node update runs under the scheduler's lock on its single event thread, so a blocking
 * Schedule call there caps an RM at 1 / latency heartbeats per second and makes every container completion, AM
 * allocate and application event wait behind the network. Instead a node update that wants the engine sends the
 * node's snapshot and returns (the node is held: nothing is allocated on it meanwhile); the answer, or its failure,
 * arrives on a gRPC thread, which only stores it and re-dispatches a NODE_UPDATE for that node through the RM's
 * dispatcher; that node update, on the scheduler's own thread and under its lock, re-validates and applies the
 * answer (or schedules natively on a failure). At most one ask per node is in flight; the deadline, the breaker,
 * the per-reason fallbacks and the "never worse than native" rule are as before.
 */
final class EnginePath implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EnginePath.class);
  /** policy_engine/codec.py MAX_ASKS: the engine refuses a request with more asks. */
  static final int MAX_ASKS_ENGINE = 10_000;

  /** An answer to one node's ask, or why there is none. */
  static final class Answer {
    final Snapshots.Snapshot snapshot;
    final ScheduleResponse response;
    final EngineClient.CallFailed failure;
    /** The engine that was asked (of a failover list): its breaker gets the outcome. */
    final EngineClient client;
    /** Batched path ({@link BatchPlanner}): when the plan's snapshot was taken (System.nanoTime), else 0. */
    final long plannedNanos;
    /** Batched path: per ask, the containers this answer promised (released when it is taken or dropped). */
    final Map<String, Integer> promised;
    /** Whether a failure of this answer counts for the breaker (a failed batch counts once, not once per node). */
    final boolean countsForBreaker;

    Answer(Snapshots.Snapshot snapshot, ScheduleResponse response, EngineClient.CallFailed failure,
        EngineClient client) {
      this(snapshot, response, failure, client, 0, null, true);
    }

    Answer(Snapshots.Snapshot snapshot, ScheduleResponse response, EngineClient.CallFailed failure,
        EngineClient client, long plannedNanos, Map<String, Integer> promised, boolean countsForBreaker) {
      this.snapshot = snapshot;
      this.response = response;
      this.failure = failure;
      this.client = client;
      this.plannedNanos = plannedNanos;
      this.promised = promised;
      this.countsForBreaker = countsForBreaker;
    }
  }

  /**
   * Applies the answer waiting for a node now, under the scheduler's lock, outside any node update (RlScheduler;
   * RlCapacityScheduler with asynchronous scheduling installs it as the node's plan). Runs on the plugin's apply
   * thread; finds nothing when a node update took the answer first.
   */
  interface Applier {
    void apply(NodeId node);
  }

  /** One engine or a failover list ({@link EngineFailover}), with TLS/token from {@link EngineChannels}. */
  final EngineFailover engines;
  /** One protocol handshake per engine: an engine is used, or failed over to, only once its version is accepted. */
  private final java.util.Map<EngineClient, EngineHandshake> handshakes = new java.util.IdentityHashMap<>();
  final RlSchedulerMetrics metrics;
  /** The engine whose answer the scheduler took last (scheduler thread only): failed/invalid/applied go to it. */
  private EngineClient taken;
  /** Whether a failure of the answer taken last counts for the breaker (scheduler thread only). */
  private boolean takenCountsForBreaker = true;
  /** The batched path (yarnrl.engine.batch.enabled), or null: one Schedule call per heartbeat. */
  private BatchPlanner planner;
  /** Whether the last send went batched (scheduler thread only): a change is logged once. */
  private Boolean lastBatched;
  private final Snapshots.Builder snapshots;
  private final ConcurrentHashMap<NodeId, Snapshots.Snapshot> inFlight = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<NodeId, Answer> ready = new ConcurrentHashMap<>();
  /** Per node in flight: its heartbeats that found it still waiting for its answer (a plan's age, in heartbeats). */
  private final ConcurrentHashMap<NodeId, Integer> heldHeartbeats = new ConcurrentHashMap<>();
  /** Applies a batched answer as it arrives (set by the scheduler), or null: its node update is re-dispatched. */
  private volatile Applier applier;
  /** The one thread that runs {@link #applier} (never a gRPC or the planner's thread: it waits for the lock). */
  private java.util.concurrent.ExecutorService applyThread;
  private final AtomicLong requestSeq = new AtomicLong();
  private volatile RMContext rmContext;
  private volatile boolean invalidAnswerLogged;
  /** Call failure reasons logged once already (scheduler thread only). */
  private final java.util.Set<EngineClient.Failure> failureLogged =
      java.util.EnumSet.noneOf(EngineClient.Failure.class);

  private EnginePath(EngineFailover engines, RlSchedulerMetrics metrics, int maxAsks, Configuration conf) {
    this.engines = engines;
    this.metrics = metrics;
    this.snapshots = new Snapshots.Builder(maxAsks, metrics);
    for (EngineClient c : engines.clients()) {
      handshakes.put(c, new EngineHandshake(c, metrics, 200, 1000));
    }
    engines.setReady(c -> handshakes.get(c).state() == EngineHandshake.State.OK);
    planner = BatchPlanner.fromConf(conf, this, metrics, this::deliver);
  }

  /** The active engine's handshake. */
  EngineHandshake handshake() {
    return handshakes.get(engines.current());
  }

  /** The engine path configured in {@code conf} (yarn-site.xml), or null when no engine address is set. */
  static EnginePath fromConf(Configuration conf, RlSchedulerMetrics metrics, String schedulerName) {
    String address = conf.getTrimmed(RlScheduler.ENGINE_ADDRESS, "");
    if (address.isEmpty()) {
      LOG.warn("{} is not set: every heartbeat is scheduled natively ({})", RlScheduler.ENGINE_ADDRESS,
          schedulerName);
      return null;
    }
    long deadline = conf.getLong(RlScheduler.DEADLINE_MS, RlScheduler.DEFAULT_DEADLINE_MS);
    if (deadline <= 0) {
      throw new YarnRuntimeException(RlScheduler.DEADLINE_MS + " must be positive, got " + deadline);
    }
    int maxAsks = conf.getInt(RlScheduler.SNAPSHOT_MAX_ASKS, RlScheduler.DEFAULT_SNAPSHOT_MAX_ASKS);
    if (maxAsks <= 0 || maxAsks > MAX_ASKS_ENGINE) {
      throw new YarnRuntimeException(RlScheduler.SNAPSHOT_MAX_ASKS + " must be in [1, " + MAX_ASKS_ENGINE
          + "] (the engine refuses larger requests), got " + maxAsks);
    }
    EngineFailover engines;
    try {
      // one engine or a failover list; TLS/mTLS/token from yarnrl.engine.tls.* and yarnrl.engine.token-file
      engines = EngineFailover.fromConf(conf, address, deadline,
          conf.getInt(RlScheduler.BREAKER_FAILURES, RlScheduler.DEFAULT_BREAKER_FAILURES),
          conf.getLong(RlScheduler.BREAKER_OPEN_MS, RlScheduler.DEFAULT_BREAKER_OPEN_MS),
          conf.getLong(RlScheduler.REPORT_INTERVAL_MS, RlScheduler.DEFAULT_REPORT_INTERVAL_MS), metrics);
    } catch (IllegalArgumentException e) {
      throw new YarnRuntimeException("yarn-rl engine settings: " + e.getMessage(), e);
    }
    metrics.breakerState = EngineClient.Breaker.CLOSED.name();
    LOG.info("yarn-rl {}: engine at {}, deadline {} ms, asked asynchronously, at most {} asks per snapshot",
        schedulerName, address, deadline, maxAsks);
    try {
      return new EnginePath(engines, metrics, maxAsks, conf);
    } catch (RuntimeException e) {
      engines.close();
      throw e;
    }
  }

  /** The plugin's JMX bean, registered when the scheduler starts (with or without an engine). */
  static ObjectName registerBean(RlSchedulerMetrics metrics) {
    return MBeans.register("ResourceManager", "RlScheduler", metrics);
  }

  /** The scheduler stops: its bean and its engine path (either may be null) go, and the counters are logged. */
  static void stop(ObjectName bean, EnginePath engine, RlSchedulerMetrics metrics, String schedulerName) {
    if (bean != null) {
      MBeans.unregister(bean);
    }
    if (engine != null) {
      engine.close();
    }
    LOG.info("{} stopped: {}", schedulerName, metrics);
  }

  /** Where this scheduler's heartbeat snapshots are built (bounded, cached between heartbeats). */
  Snapshots.Builder snapshots() {
    return snapshots;
  }

  /** Where answers re-dispatch their node's update (set once the scheduler has its RM context). */
  void setRMContext(RMContext context) {
    this.rmContext = context;
  }

  String nextRequestId() {
    return Long.toString(requestSeq.incrementAndGet());
  }

  /**
   * Whether this heartbeat may ask the engine; when not, the reason is counted (the heartbeat is a fallback).
   * No network: the handshake and breaker states are read as they are.
   */
  boolean mayAsk() {
    if (handshake().state() != EngineHandshake.State.OK && engines.size() > 1) {
      engines.switchAway(engines.address() + " protocol handshake " + handshake().state());
    }
    switch (handshake().state()) {
      case REFUSED:
        metrics.fallbacksVersionMismatch.increment();
        return false;
      case UNKNOWN:
        metrics.fallbacksUnavailable.increment();
        return false;
      default:
        break;
    }
    if (!engines.allowCall()) {
      metrics.fallbacksBreakerOpen.increment();
      return false;
    }
    return true;
  }

  boolean inFlight(NodeId node) {
    return inFlight.containsKey(node);
  }

  /**
   * A heartbeat of this node while its ask is on its way (the scheduler thread): true, and counted towards its plan's
   * age ({@value BatchPlanner#PLAN_MAX_HEARTBEATS}); false when nothing is in flight for it.
   */
  boolean heldHeartbeat(NodeId node) {
    if (!inFlight.containsKey(node)) {
      return false;
    }
    heldHeartbeats.merge(node, 1, Integer::sum);
    return true;
  }

  /**
   * Batched answers are applied as they arrive by {@code applier} on the plugin's apply thread (it takes the
   * scheduler's lock itself), instead of through a second node update in the RM's event queue, where a busy RM
   * would make every plan wait behind thousands of events and double the queue.
   */
  synchronized void setApplier(Applier applier) {
    if (planner == null || this.applier != null) {
      return;
    }
    applyThread = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "yarnrl-engine-apply");
      t.setDaemon(true);
      return t;
    });
    this.applier = applier;
  }

  boolean hasAnswer(NodeId node) {
    return ready.containsKey(node);
  }

  /**
   * The answer that arrived for this node, once (null when none is waiting). A batched plan older than its bound
   * comes back as a STALE_PLAN failure: the node is scheduled natively.
   */
  Answer take(NodeId node) {
    Answer a = ready.remove(node);
    if (a != null) {
      taken = a.client;
      takenCountsForBreaker = a.countsForBreaker;
      if (planner != null) {
        planner.release(a); // applied now or never: the containers it promised are the live counts' again
        long ageMs = a.plannedNanos == 0 ? 0 : (System.nanoTime() - a.plannedNanos) / 1_000_000;
        Integer held = heldHeartbeats.remove(node);
        int beats = held == null ? 0 : held;
        String stale = null;
        if (a.failure == null && a.plannedNanos != 0) {
          if (beats > planner.planMaxHeartbeats) {
            stale = "a plan whose node heartbeated " + beats + " times while it was on its way ("
                + BatchPlanner.PLAN_MAX_HEARTBEATS + " " + planner.planMaxHeartbeats + ")";
          } else if (planner.planMaxAgeMs > 0 && ageMs > planner.planMaxAgeMs) {
            stale = "a plan " + ageMs + " ms old (" + BatchPlanner.PLAN_MAX_AGE_MS + " " + planner.planMaxAgeMs + ")";
          }
        }
        if (stale != null) {
          takenCountsForBreaker = false;
          return new Answer(a.snapshot, null, new EngineClient.CallFailed(EngineClient.Failure.STALE_PLAN, stale,
              null), a.client, a.plannedNanos, null, false);
        }
      }
    }
    return a;
  }

  /** The batched path's planner, or null (tests). */
  BatchPlanner planner() {
    return planner;
  }

  /** Runs the batched path's snapshot under the scheduler's lock (never its call). */
  void setUnderLock(java.util.function.Consumer<Runnable> underLock) {
    if (planner != null) {
      planner.setUnderLock(underLock);
    }
  }

  /**
   * Whether this ask goes batched: the planner is on and the active engine offers ScheduleBatch (an older engine:
   * one Schedule call per heartbeat, as before). A change is logged once and shown as BatchState.
   */
  private boolean batched() {
    if (planner == null) {
      return false;
    }
    org.yarnrl.v1.GetInfoResponse info = handshake().info();
    if (info == null) { // between a reconnect and its handshake (no call goes out then): as last decided
      return lastBatched != null && lastBatched;
    }
    boolean batched = BatchPlanner.supports(info);
    if (lastBatched == null || lastBatched != batched) {
      lastBatched = batched;
      metrics.batchState = batched ? "ON" : "ENGINE_WITHOUT_BATCH";
      if (batched) {
        LOG.info("yarn-rl engine {} offers '{}': heartbeats are decided in batches", engines.address(),
            BatchPlanner.CAPABILITY);
      } else {
        LOG.warn("yarn-rl engine {} does not offer '{}': one Schedule call per heartbeat", engines.address(),
            BatchPlanner.CAPABILITY);
      }
    }
    return batched;
  }

  /** A node's answer from a batch (a gRPC or the planner's thread): stored, and the node's update re-dispatched. */
  private void deliver(NodeId node, Answer answer) {
    if (inFlight.remove(node) == null) {
      planner.release(answer); // the node left meanwhile
      return;
    }
    ready.put(node, answer);
    Applier a = applier;
    if (a == null) {
      metrics.asksInFlight.decrement();
      metrics.answerRedispatches.increment();
      redispatch(node);
      return;
    }
    try {
      // in flight until applied: a node update meanwhile still sees the node held, or takes the answer itself
      applyThread.execute(() -> {
        try {
          a.apply(node);
        } catch (RuntimeException e) {
          LOG.warn("yarn-rl: applying the engine's answer for {} failed", node, e);
        } finally {
          metrics.asksInFlight.decrement();
        }
      });
    } catch (java.util.concurrent.RejectedExecutionException e) {
      metrics.asksInFlight.decrement(); // closing
    }
  }

  /** Ask about this node without waiting; the node is re-dispatched when the answer (or its failure) is in. */
  void send(NodeId node, Snapshots.Snapshot snapshot) {
    heldHeartbeats.remove(node);
    inFlight.put(node, snapshot);
    metrics.asksInFlight.increment();
    if (batched()) {
      planner.enqueue(node, snapshot);
      return;
    }
    EngineClient client = engines.current();
    client.scheduleAsync(snapshot.request, (response, failure) -> {
      // stored before the in-flight mark goes, so a node update in between sees one or the other
      ready.put(node, new Answer(snapshot, response, failure, client));
      inFlight.remove(node);
      metrics.asksInFlight.decrement();
      redispatch(node);
    });
  }

  /**
   * Shadow mode: ask about this node without holding it (nothing is in flight for it, nothing will be applied);
   * the answer or failure goes to {@code done} on the call's thread. A failure is counted by ShadowMode
   * ({@code ShadowFailures}), not by the breaker: shadow traffic never changes how YARN schedules.
   */
  void sendShadow(Snapshots.Snapshot snapshot,
      java.util.function.BiConsumer<org.yarnrl.v1.ScheduleResponse, EngineClient.CallFailed> done) {
    EngineClient client = engines.current();
    client.scheduleAsync(snapshot.request.toBuilder().setShadow(true).build(), done);
  }

  private void redispatch(NodeId node) {
    RMContext context = rmContext;
    RMNode rmNode = context == null ? null : context.getRMNodes().get(node);
    if (rmNode == null) {
        Answer gone = ready.remove(node); // the node left; nothing to apply
        if (gone != null && planner != null) {
          planner.release(gone);
        }
      return;
    }
    context.getDispatcher().getEventHandler().handle(new NodeUpdateSchedulerEvent(rmNode));
  }

  /** The node left the cluster: an answer for it has nowhere to go. */
  void forget(NodeId node) {
    heldHeartbeats.remove(node);
    Answer gone = ready.remove(node);
    if (planner != null) {
      if (gone != null) {
        planner.release(gone);
      }
      if (planner.dequeue(node) && inFlight.remove(node) != null) {
        metrics.asksInFlight.decrement();
      }
    }
  }

  /** A call brought no answer: count its reason and tell the breaker (and the handshake, if the engine left). */
  void failed(EngineClient.CallFailed e) {
    String what = String.valueOf(e.getMessage());
    if (e.failure == EngineClient.Failure.ERROR) {
      metrics.lastCallError = what.length() > 400 ? what.substring(0, 400) + "..." : what;
    }
    if (failureLogged.add(e.failure)) {
      LOG.warn("yarn-rl engine call failed ({}); scheduling natively. Further {} failures are counted in "
          + "Fallbacks{} (errors: the last in LastCallError), logged at DEBUG", what, e.failure,
          counter(e.failure));
    } else {
      LOG.debug("yarn-rl engine call failed: {}", what);
    }
    switch (e.failure) {
      case STALE_PLAN:
        metrics.fallbacksStalePlan.increment(); // the RM was late applying it, not the engine: no breaker failure
        return;
      case REFUSED_NODE:
        metrics.fallbacksRefusedNode.increment(); // the plugin sent a node the engine could not read
        return;
      case INVALID_BATCH:
        metrics.fallbacksInvalidAnswer.increment();
        break;
      case TIMEOUT:
        metrics.fallbacksTimeout.increment();
        break;
      case UNAVAILABLE:
        metrics.fallbacksUnavailable.increment();
        handshakes.get(taken != null ? taken : engines.current()).reconnected("the engine is unavailable");
        break;
      default:
        metrics.fallbacksError.increment();
    }
    if (takenCountsForBreaker) {
      engines.recordFailure(taken, e.getMessage());
    }
  }

  private static String counter(EngineClient.Failure f) {
    switch (f) {
      case TIMEOUT:
        return "Timeout";
      case UNAVAILABLE:
        return "Unavailable";
      case STALE_PLAN:
        return "StalePlan";
      case REFUSED_NODE:
        return "RefusedNode";
      case INVALID_BATCH:
        return "InvalidAnswer";
      default:
        return "Error";
    }
  }

  /** An answer that cannot be applied: counted, logged once (then at DEBUG), and a breaker failure. */
  void invalid(NodeId node, String problem) {
    metrics.fallbacksInvalidAnswer.increment();
    if (!invalidAnswerLogged) {
      invalidAnswerLogged = true;
      LOG.warn("yarn-rl engine answer not applied on {} ({}); scheduling natively. Further invalid answers are "
          + "counted in FallbacksInvalidAnswer, logged at DEBUG", node, problem);
    } else {
      LOG.debug("yarn-rl engine answer not applied on {}: {}", node, problem);
    }
    engines.recordFailure(taken, "invalid answer: " + problem);
  }

  /** An answer was applied. */
  void applied() {
    engines.recordSuccess(taken);
    metrics.engineDecisions.increment();
  }

  void report(Event event) {
    engines.report(event);
  }

  @Override
  public void close() {
    if (planner != null) {
      planner.close();
    }
    synchronized (this) {
      if (applyThread != null) {
        applyThread.shutdownNow();
      }
    }
    handshakes.values().forEach(EngineHandshake::close);
    engines.close();
  }
}
