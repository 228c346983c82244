package org.yarnrl.federation;

/**
 * The AMRMProxy policy's counters (DSRAP across sub-clusters, {@link RlAMRMProxyPolicy}), on each NodeManager's JMX
 * as {@code Hadoop:service=NodeManager,name=RlAMRMProxyPolicy}: one set per NodeManager JVM, over every
 * ApplicationMaster that ran there.
 */
public interface AMRMProxyPolicyMXBean {
  String getEngineAddress();

  String getHandshakeState();

  String getBreakerState();

  /** The last split decided (engine or fallback), e.g. {@code SC1=3 SC2=3}. */
  String getLastSplit();

  /** splitResourceRequests calls with at least one ask. */
  long getSplits();

  /** Route calls made (an ANY ask new or grown). */
  long getEngineCalls();

  /** Asks unchanged or shrunk: the last split reused (trimmed), no call. */
  long getReusedSplits();

  /** Containers of decided asks sent to the home sub-cluster / to neighbours. */
  long getContainersHome();

  long getContainersForwarded();

  /** Containers the sub-clusters allocated (from their allocate answers): home / neighbours. */
  long getContainersAllocatedHome();

  long getContainersAllocatedNeighbours();

  long getFallbacksDisabled();

  long getFallbacksTimeout();

  long getFallbacksUnavailable();

  long getFallbacksError();

  long getFallbacksBreakerOpen();

  long getFallbacksVersionMismatch();

  long getFallbacksInvalidAnswer();

  /** Shares taken back home from a neighbour that had not answered within amrmproxy.neighbour-timeout-ms. */
  long getFallbacksNeighbourSilent();

  long getFallbacksTotal();
}
