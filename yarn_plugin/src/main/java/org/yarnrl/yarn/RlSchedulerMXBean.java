package org.yarnrl.yarn;

/**
 * What RlScheduler exposes over JMX (bean {@code Hadoop:service=ResourceManager,name=RlScheduler}).
 *
 * <p>A heartbeat is either decided by the engine or scheduled natively; every native heartbeat that was meant for
 * the engine is a fallback, counted by its reason. Used by both RlScheduler (FIFO) and RlCapacityScheduler.
 */
public interface RlSchedulerMXBean {
  /** The engine the scheduler asks: the active one of {@code yarnrl.engine.address}'s list. */
  String getEngineAddress();

  /** Each engine's last health check, {@code address=SERVING|NOT_SERVING|UNREACHABLE|UNKNOWN}, in list order. */
  String getEngineHealth();

  /** How many times the active engine changed (failover and failback). */
  long getFailovers();

  /** The active engine's model version (GetInfo), empty before the first answer or without a model. */
  String getEngineModelVersion();

  /** Model version changes seen on an engine while it was active (live reloads). */
  long getModelChanges();

  /** The policy the engine serves (its GetInfo answer at the handshake). */
  String getEnginePolicy();

  /** CLOSED (engine used), OPEN (engine skipped until the open period ends), HALF_OPEN (next call probes it). */
  String getBreakerState();

  long getNodeUpdates();

  long getEngineDecisions();

  long getEngineContainers();

  long getNativeHeartbeats();

  long getNativeContainers();

  long getFallbacks();

  long getFallbacksTimeout();

  long getFallbacksUnavailable();

  long getFallbacksError();

  /**
   * The last call failure counted in FallbacksError (a gRPC status other than DEADLINE_EXCEEDED and UNAVAILABLE), as
   * {@code STATUS: description}; "" before the first. Only the first is logged (WARN).
   */
  String getLastCallError();

  long getFallbacksInvalidAnswer();

  long getFallbacksBreakerOpen();

  /** Heartbeats scheduled natively because the engine speaks a protocol version this plugin does not. */
  long getFallbacksVersionMismatch();

  /** Heartbeats scheduled natively because an ask had waited for the engine past its heartbeat cap (WaitCap). */
  long getFallbacksWaitHeartbeats();

  /** Heartbeats scheduled natively because an ask had waited for the engine past its time cap (WaitCap). */
  long getFallbacksWaitTime();

  /** Asks whose wait for the engine reached a cap (once per wait). */
  long getAsksPastWaitCap();

  /** Engine-placed containers not applied because the ask or the node changed while the answer was on its way. */
  long getAnswerContainersDiscarded();

  /** The scheduler-wide wait cap (yarnrl.engine.wait.max-heartbeats / max-ms). */
  String getWaitCap();

  /** The RM's ResourceCalculator the plugin checks with and tells the engine about. */
  String getResourceCalculator();

  /** The engine's GetInfo.protocol_version at the last handshake ("" before the first). */
  String getEngineProtocolVersion();

  /** UNKNOWN (not yet spoken to since the last connect), OK, REFUSED (version mismatch), DISABLED (no engine). */
  String getHandshakeState();

  /** Schedule calls sent and not yet answered (at most one per node). */
  long getAsksInFlight();

  long getReportEventsSent();

  long getReportEventsDropped();

  long getReportFailures();

  /** Snapshots built for the engine (one per ask sent). */
  long getSnapshots();

  /** Asks in those snapshots, in all. */
  long getSnapshotAsks();

  /** Asks whose message was built (new or changed); the other asks of a snapshot reuse the message built before. */
  long getSnapshotAsksBuilt();

  /** Host and rack entries in those snapshots (at most two per ask: the node's host and rack). */
  long getSnapshotLocalityEntries();

  /** Pending asks left out of a snapshot by {@code yarnrl.engine.snapshot.max-asks} (they wait for a later one). */
  long getSnapshotAsksLeftOut();

  /** The scheduler thread's CPU time spent building snapshots, in microseconds (divide by Snapshots for the mean). */
  long getSnapshotCpuMicros();

  /** Mean time spent in the allocation part of a node update decided by the engine, in microseconds. */
  double getMeanEngineNodeUpdateMicros();

  /** Mean time spent in the allocation part of a node update scheduled natively, in microseconds. */
  double getMeanNativeNodeUpdateMicros();

  /**
   * {@code active} or {@code shadow}: the scheduler-wide {@code yarnrl.engine.mode}. In shadow mode the engine is
   * asked on the heartbeats but its answers are never applied; YARN places every container (ShadowMode).
   */
  String getEngineMode();

  /** RlCapacityScheduler: the engine queues in shadow mode, comma-separated ("" when none; RlScheduler: ""). */
  String getShadowQueues();

  /** Shadow asks sent (one per shadowed heartbeat). */
  long getShadowAsks();

  /** Shadow asks answered by the engine. */
  long getShadowAnswers();

  /** Shadow asks that brought no answer (timeout, error, engine gone, node left); YARN scheduled them anyway. */
  long getShadowFailures();

  /**
   * Heartbeats with a shadowed ask pending that were not shadowed: their node already had the most shadow asks in
   * flight (8), or (RlCapacityScheduler) had no room by the snapshot, or the engine could not be asked (breaker open,
   * version refused). YARN scheduled them as always; 0 means the engine saw every such heartbeat.
   */
  long getShadowAsksSkipped();

  /** Containers the engine would have placed on the shadowed heartbeats (the sum of its answers' counts). */
  long getShadowEngineContainers();

  /** Containers YARN placed for shadowed asks, reported to the engine with the shadow decision's id. */
  long getShadowNativeContainers();

  /** Of those, the ones that went to an ask the engine had also given that node on that heartbeat. */
  long getShadowAgreements();

  /** Of those, the ones that went to an ask the engine had not given that node (or it placed nothing there). */
  long getShadowDisagreements();

  // ---- the batched engine path (yarnrl.engine.batch.enabled, BatchPlanner)

  /** OFF (per-heartbeat calls), WAITING_FOR_ENGINE, ON, or ENGINE_WITHOUT_BATCH (an older engine: per heartbeat). */
  String getBatchState();

  /** ScheduleBatch calls sent. */
  long getBatches();

  /** Nodes (held heartbeats) sent in them: divide by Batches for the mean batch size. */
  long getBatchNodes();

  /** Asks sent in them (each once per batch). */
  long getBatchAsks();

  /** Wall time of the batch calls, microseconds (send to answer, on the network and in the engine). */
  long getBatchCallMicros();

  /** The planner thread's CPU time building batches under the scheduler lock, microseconds. */
  long getBatchBuildCpuMicros();

  /** Asks the engine refused in a batch (malformed: left to native scheduling via the wait cap). */
  long getBatchAsksRefused();

  /**
   * Batched answers applied through a second, re-dispatched node update (RlCapacityScheduler without asynchronous
   * scheduling); RlScheduler and asynchronous scheduling apply each answer as it arrives, without one.
   */
  long getAnswerRedispatches();

  /** Heartbeats scheduled natively because their plan was older than yarnrl.engine.batch.plan-max-age-ms. */
  long getFallbacksStalePlan();

  /** Heartbeats scheduled natively because the engine refused that node of its batch. */
  long getFallbacksRefusedNode();
}
