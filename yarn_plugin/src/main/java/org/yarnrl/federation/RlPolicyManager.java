package org.yarnrl.federation;

import org.apache.hadoop.yarn.server.federation.policies.amrmproxy.HomeAMRMProxyPolicy;
import org.apache.hadoop.yarn.server.federation.policies.dao.WeightedPolicyInfo;
import org.apache.hadoop.yarn.server.federation.policies.manager.AbstractPolicyManager;

/**
 * The policy manager to name in the Router's {@code yarn.federation.policy-manager}: the learned Router policy
 * ({@link RlRouterPolicy}) for submissions, and Hadoop's {@link HomeAMRMProxyPolicy} (every container in the home
 * sub-cluster) for an AMRMProxy, where one runs. Its settings are read from the Router's XML configuration, not from
 * policy parameters in the state store (whose JSON differs between Hadoop 3.4 and 3.5), so it carries no weights.
 */
public class RlPolicyManager extends AbstractPolicyManager {
  public RlPolicyManager() {
    routerFederationPolicy = RlRouterPolicy.class;
    amrmProxyFederationPolicy = HomeAMRMProxyPolicy.class;
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
