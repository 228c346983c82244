package org.yarnrl.federation;

import org.apache.hadoop.yarn.server.federation.policies.dao.WeightedPolicyInfo;
import org.apache.hadoop.yarn.server.federation.policies.manager.AbstractPolicyManager;

/**
 * The policy manager to name in the Router's (and an AMRMProxy NodeManager's) {@code yarn.federation.policy-manager}:
 * the learned Router policy ({@link RlRouterPolicy}) for submissions, and {@link RlAMRMProxyPolicy} (DSRAP's sharing
 * across sub-clusters; with {@code yarnrl.federation.amrmproxy.enabled} false, its default, every container in the
 * home sub-cluster as Hadoop's {@code HomeAMRMProxyPolicy}) for an AMRMProxy, where one runs. Its settings are read from the Router's XML configuration, not from
 * policy parameters in the state store (whose JSON differs between Hadoop 3.4 and 3.5), so it carries no weights.
 */
public class RlPolicyManager extends AbstractPolicyManager {
  public RlPolicyManager() {
    routerFederationPolicy = RlRouterPolicy.class;
    amrmProxyFederationPolicy = RlAMRMProxyPolicy.class;
  }

  @Override
  public WeightedPolicyInfo getWeightedPolicyInfo() {
    return null;
  }

  @Override
  public void setWeightedPolicyInfo(WeightedPolicyInfo weightedPolicyInfo) {
    // no weights: the engine decides
  }

  /** In Hadoop 3.4 and 3.5 alike (no {@code @Override}, so one source compiles against both). */
  public boolean isSupportWeightedPolicyInfo() {
    return false;
  }
}
