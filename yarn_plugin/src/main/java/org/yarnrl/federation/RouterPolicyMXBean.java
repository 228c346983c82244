package org.yarnrl.federation;

/**
 * The learned Router policy's counters, on the Router's JMX as {@code Hadoop:service=Router,name=RlRouterPolicy}
 * (and its web UI's {@code /jmx}).
 */
public interface RouterPolicyMXBean {
  String getEngineAddress();

  String getBreakerState();

  String getHandshakeState();

  String getLastDecision();

  String getLastFallback();

  long getDecisions();

  /** Decisions whose sub-cluster load came from the background copy (load.max-age-ms), not a state-store read. */
  long getLoadCopyReads();

  long getEngineDecisions();

  long getBuiltinDecisions();

  long getFallbacksTimeout();

  long getFallbacksUnavailable();

  long getFallbacksError();

  long getFallbacksInvalidAnswer();

  long getFallbacksBlacklisted();

  long getFallbacksBreakerOpen();

  long getFallbacksVersionMismatch();

  long getFallbacksMalformedTags();

  long getFallbacksPaddingChosen();

  long getFallbacksDisabled();

  long getFallbacksTotal();

  /** Time getHomeSubcluster took, the engine call included, over the last 4096 decisions. */
  long getDecisionMicrosP50();

  long getDecisionMicrosP99();

  long getDecisionMicrosMax();

  /** Of that, reading the active sub-clusters and their load from the state store (the Router's cache is off). */
  long getStateStoreMicrosP50();

  long getStateStoreMicrosP99();

  /** Of that, the engine's Route call (bounded by engine.deadline-ms), for decisions that called it. */
  long getEngineMicrosP50();

  long getEngineMicrosP99();
}
