package org.yarnrl.yarn;

import java.util.concurrent.atomic.LongAdder;

/** Counters of one RlScheduler, read over JMX (see {@link RlSchedulerMXBean}) and by the tests. */
public class RlSchedulerMetrics implements RlSchedulerMXBean {
  volatile String engineAddress = "";
  volatile String breakerState = "DISABLED";
  volatile String lastCallError = "";
  volatile String engineHealth = "";
  volatile String engineModelVersion = "";
  volatile String enginePolicy = "";
  final LongAdder failovers = new LongAdder();
  final LongAdder modelChanges = new LongAdder();
  final LongAdder nodeUpdates = new LongAdder();
  final LongAdder engineDecisions = new LongAdder();
  final LongAdder engineContainers = new LongAdder();
  final LongAdder nativeHeartbeats = new LongAdder();
  final LongAdder nativeContainers = new LongAdder();
  final LongAdder fallbacksTimeout = new LongAdder();
  final LongAdder fallbacksUnavailable = new LongAdder();
  final LongAdder fallbacksError = new LongAdder();
  final LongAdder fallbacksInvalidAnswer = new LongAdder();
  final LongAdder fallbacksBreakerOpen = new LongAdder();
  final LongAdder fallbacksVersionMismatch = new LongAdder();
  volatile String engineProtocolVersion = "";
  volatile String handshakeState = "DISABLED";
  final LongAdder asksInFlight = new LongAdder();
  final LongAdder reportEventsSent = new LongAdder();
  final LongAdder reportEventsDropped = new LongAdder();
  final LongAdder reportFailures = new LongAdder();
  final LongAdder engineNanos = new LongAdder();
  final LongAdder nativeNanos = new LongAdder();
  final LongAdder snapshots = new LongAdder();
  final LongAdder snapshotAsks = new LongAdder();
  final LongAdder snapshotAsksBuilt = new LongAdder();
  final LongAdder snapshotLocalityEntries = new LongAdder();
  final LongAdder snapshotAsksLeftOut = new LongAdder();
  final LongAdder snapshotCpuNanos = new LongAdder();
  /** Heartbeats scheduled natively because an ask waited past its cap ({@link WaitCap}), by reason. */
  final LongAdder fallbacksWaitHeartbeats = new LongAdder();
  final LongAdder fallbacksWaitTime = new LongAdder();
  /** Asks whose wait for the engine reached the cap (once per wait). */
  final LongAdder asksPastWaitCap = new LongAdder();
  /** Engine-placed containers not applied: the ask changed (resized, withdrawn, blacklisted) meanwhile, or the
   *  node no longer had room (RlCapacityScheduler: another queue took it first). */
  final LongAdder answerContainersDiscarded = new LongAdder();
  volatile String engineMode = "active";
  volatile String shadowQueues = "";
  final LongAdder shadowAsks = new LongAdder();
  final LongAdder shadowAnswers = new LongAdder();
  final LongAdder shadowFailures = new LongAdder();
  final LongAdder shadowAsksSkipped = new LongAdder();
  final LongAdder shadowEngineContainers = new LongAdder();
  final LongAdder shadowNativeContainers = new LongAdder();
  final LongAdder shadowAgreements = new LongAdder();
  final LongAdder shadowDisagreements = new LongAdder();
  volatile String waitCap = "";
  // the batched engine path (BatchPlanner)
  volatile String batchState = "OFF";
  final LongAdder batches = new LongAdder();
  final LongAdder batchNodes = new LongAdder();
  final LongAdder batchAsks = new LongAdder();
  final LongAdder batchCallNanos = new LongAdder();
  final LongAdder batchBuildCpuNanos = new LongAdder();
  final LongAdder batchAsksRefused = new LongAdder();
  final LongAdder fallbacksStalePlan = new LongAdder();
  final LongAdder fallbacksRefusedNode = new LongAdder();
  /** Batched answers that went back through the RM's event queue as a second node update (CapacityScheduler
   *  without asynchronous scheduling); the others are applied as they arrive. */
  final LongAdder answerRedispatches = new LongAdder();
  volatile String resourceCalculator = "";

  @Override
  public String getEngineAddress() {
    return engineAddress;
  }

  @Override
  public String getLastCallError() {
    return lastCallError;
  }

  @Override
  public String getBreakerState() {
    return breakerState;
  }

  @Override
  public String getEngineHealth() {
    return engineHealth;
  }

  @Override
  public long getFailovers() {
    return failovers.sum();
  }

  @Override
  public String getEngineModelVersion() {
    return engineModelVersion;
  }

  @Override
  public String getEnginePolicy() {
    return enginePolicy;
  }

  @Override
  public long getModelChanges() {
    return modelChanges.sum();
  }

  @Override
  public long getNodeUpdates() {
    return nodeUpdates.sum();
  }

  @Override
  public long getEngineDecisions() {
    return engineDecisions.sum();
  }

  @Override
  public long getEngineContainers() {
    return engineContainers.sum();
  }

  @Override
  public long getNativeHeartbeats() {
    return nativeHeartbeats.sum();
  }

  @Override
  public long getNativeContainers() {
    return nativeContainers.sum();
  }

  @Override
  public long getFallbacks() {
    return getFallbacksTimeout() + getFallbacksUnavailable() + getFallbacksError() + getFallbacksInvalidAnswer()
        + getFallbacksBreakerOpen() + getFallbacksVersionMismatch() + getFallbacksWaitHeartbeats()
        + getFallbacksWaitTime() + getFallbacksStalePlan() + getFallbacksRefusedNode();
  }

  @Override
  public String getBatchState() {
    return batchState;
  }

  @Override
  public long getBatches() {
    return batches.sum();
  }

  @Override
  public long getBatchNodes() {
    return batchNodes.sum();
  }

  @Override
  public long getBatchAsks() {
    return batchAsks.sum();
  }

  @Override
  public long getBatchCallMicros() {
    return batchCallNanos.sum() / 1000;
  }

  @Override
  public long getBatchBuildCpuMicros() {
    return batchBuildCpuNanos.sum() / 1000;
  }

  @Override
  public long getAnswerRedispatches() {
    return answerRedispatches.sum();
  }

  @Override
  public long getBatchAsksRefused() {
    return batchAsksRefused.sum();
  }

  @Override
  public long getFallbacksStalePlan() {
    return fallbacksStalePlan.sum();
  }

  @Override
  public long getFallbacksRefusedNode() {
    return fallbacksRefusedNode.sum();
  }

  @Override
  public long getFallbacksWaitHeartbeats() {
    return fallbacksWaitHeartbeats.sum();
  }

  @Override
  public long getFallbacksWaitTime() {
    return fallbacksWaitTime.sum();
  }

  @Override
  public long getAsksPastWaitCap() {
    return asksPastWaitCap.sum();
  }

  @Override
  public long getAnswerContainersDiscarded() {
    return answerContainersDiscarded.sum();
  }

  @Override
  public String getWaitCap() {
    return waitCap;
  }

  @Override
  public String getResourceCalculator() {
    return resourceCalculator;
  }

  @Override
  public long getFallbacksVersionMismatch() {
    return fallbacksVersionMismatch.sum();
  }

  @Override
  public String getEngineProtocolVersion() {
    return engineProtocolVersion;
  }

  @Override
  public String getHandshakeState() {
    return handshakeState;
  }

  @Override
  public long getAsksInFlight() {
    return asksInFlight.sum();
  }

  @Override
  public long getFallbacksTimeout() {
    return fallbacksTimeout.sum();
  }

  @Override
  public long getFallbacksUnavailable() {
    return fallbacksUnavailable.sum();
  }

  @Override
  public long getFallbacksError() {
    return fallbacksError.sum();
  }

  @Override
  public long getFallbacksInvalidAnswer() {
    return fallbacksInvalidAnswer.sum();
  }

  @Override
  public long getFallbacksBreakerOpen() {
    return fallbacksBreakerOpen.sum();
  }

  @Override
  public long getReportEventsSent() {
    return reportEventsSent.sum();
  }

  @Override
  public long getReportEventsDropped() {
    return reportEventsDropped.sum();
  }

  @Override
  public long getReportFailures() {
    return reportFailures.sum();
  }

  @Override
  public double getMeanEngineNodeUpdateMicros() {
    long n = engineDecisions.sum();
    return n == 0 ? 0.0 : engineNanos.sum() / 1000.0 / n;
  }

  @Override
  public double getMeanNativeNodeUpdateMicros() {
    long n = nativeHeartbeats.sum();
    return n == 0 ? 0.0 : nativeNanos.sum() / 1000.0 / n;
  }

  @Override
  public long getSnapshots() {
    return snapshots.sum();
  }

  @Override
  public long getSnapshotAsks() {
    return snapshotAsks.sum();
  }

  @Override
  public long getSnapshotAsksBuilt() {
    return snapshotAsksBuilt.sum();
  }

  @Override
  public long getSnapshotLocalityEntries() {
    return snapshotLocalityEntries.sum();
  }

  @Override
  public long getSnapshotAsksLeftOut() {
    return snapshotAsksLeftOut.sum();
  }

  @Override
  public long getSnapshotCpuMicros() {
    return snapshotCpuNanos.sum() / 1000;
  }

  @Override
  public String getEngineMode() {
    return engineMode;
  }

  @Override
  public String getShadowQueues() {
    return shadowQueues;
  }

  @Override
  public long getShadowAsks() {
    return shadowAsks.sum();
  }

  @Override
  public long getShadowAnswers() {
    return shadowAnswers.sum();
  }

  @Override
  public long getShadowFailures() {
    return shadowFailures.sum();
  }

  @Override
  public long getShadowAsksSkipped() {
    return shadowAsksSkipped.sum();
  }

  @Override
  public long getShadowEngineContainers() {
    return shadowEngineContainers.sum();
  }

  @Override
  public long getShadowNativeContainers() {
    return shadowNativeContainers.sum();
  }

  @Override
  public long getShadowAgreements() {
    return shadowAgreements.sum();
  }

  @Override
  public long getShadowDisagreements() {
    return shadowDisagreements.sum();
  }

  @Override
  public String toString() {
    return "nodeUpdates=" + getNodeUpdates() + " engineDecisions=" + getEngineDecisions() + " engineContainers="
        + getEngineContainers() + " nativeHeartbeats=" + getNativeHeartbeats() + " nativeContainers="
        + getNativeContainers() + " fallbacks=" + getFallbacks() + " (timeout=" + getFallbacksTimeout()
        + " unavailable=" + getFallbacksUnavailable() + " error=" + getFallbacksError() + " invalid="
        + getFallbacksInvalidAnswer() + " breakerOpen=" + getFallbacksBreakerOpen() + " versionMismatch="
        + getFallbacksVersionMismatch() + " waitHeartbeats=" + getFallbacksWaitHeartbeats() + " waitTime="
        + getFallbacksWaitTime() + " stalePlan=" + getFallbacksStalePlan() + " refusedNode="
        + getFallbacksRefusedNode() + ") batch=" + getBatchState() + " batches=" + getBatches() + " batchNodes="
        + getBatchNodes() + " redispatches=" + getAnswerRedispatches() + " asksPastWaitCap=" + getAsksPastWaitCap() + " discarded="
        + getAnswerContainersDiscarded() + " reportEventsSent="
        + getReportEventsSent() + " reportEventsDropped=" + getReportEventsDropped() + " breaker=" + getBreakerState()
        + " handshake=" + getHandshakeState() + " engine=" + getEngineAddress() + " failovers=" + getFailovers()
        + " health=" + getEngineHealth() + " snapshots=" + getSnapshots() + " (asks=" + getSnapshotAsks()
        + " built=" + getSnapshotAsksBuilt() + " localityEntries=" + getSnapshotLocalityEntries() + " leftOut="
        + getSnapshotAsksLeftOut() + ") mode=" + getEngineMode() + " shadowQueues=" + getShadowQueues()
        + " shadow(asks=" + getShadowAsks() + " answers=" + getShadowAnswers() + " failures=" + getShadowFailures()
        + " skipped=" + getShadowAsksSkipped() + " engineContainers=" + getShadowEngineContainers()
        + " nativeContainers=" + getShadowNativeContainers() + " agree=" + getShadowAgreements() + " differ="
        + getShadowDisagreements() + ")";
  }
}
