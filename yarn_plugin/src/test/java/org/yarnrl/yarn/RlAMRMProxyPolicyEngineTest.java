package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.federation.policies.FederationPolicyInitializationContext;
import org.apache.hadoop.yarn.server.federation.policies.amrmproxy.FederationAMRMProxyPolicy;
import org.apache.hadoop.yarn.server.federation.resolver.DefaultSubClusterResolverImpl;
import org.apache.hadoop.yarn.server.federation.store.impl.MemoryFederationStateStore;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterId;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterInfo;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterPolicyConfiguration;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterRegisterRequest;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterState;
import org.apache.hadoop.yarn.server.federation.utils.FederationStateStoreFacade;
import org.apache.hadoop.yarn.util.Records;
import org.junit.jupiter.api.Test;
import org.yarnrl.federation.RlAMRMProxyPolicy;
import org.yarnrl.federation.RlPolicyManager;

/**
 * The AMRMProxy policy asking a real `policy-engine serve --policy sdl` (DSRAP's SDL: best-first allocation in the
 * home cluster, Learning2 forwarding): what fits the home sub-cluster's headroom stays home, what does not is
 * forwarded to neighbours, and the split always adds up to the ask.
 */
class RlAMRMProxyPolicyEngineTest {
  private static final SubClusterId SC1 = SubClusterId.newInstance("SC1");
  private static final SubClusterId SC2 = SubClusterId.newInstance("SC2");
  private static final SubClusterId SC3 = SubClusterId.newInstance("SC3");

  @Test
  void sdlKeepsWhatFitsTheHeadroomAndForwardsTheRest() throws Exception {
    Path work = Path.of("target", "amrmproxy-engine-test").toAbsolutePath();
    Files.createDirectories(work);
    try (EngineProcess engine = new EngineProcess("sdl", work.resolve("engine.log"))) {
      engine.start();
      Configuration conf = new YarnConfiguration();
      conf.set(YarnConfiguration.FEDERATION_STATESTORE_CLIENT_CLASS, MemoryFederationStateStore.class.getName());
      conf.setInt(YarnConfiguration.FEDERATION_CACHE_TIME_TO_LIVE_SECS, 0);
      conf.set("yarnrl.federation.amrmproxy.enabled", "true");
      conf.set("yarnrl.federation.engine.address", engine.address());
      conf.set("yarnrl.federation.engine.deadline-ms", "5000"); // the test machine is loaded; timing is not tested
      MemoryFederationStateStore store = new MemoryFederationStateStore();
      store.init(conf);
      FederationStateStoreFacade facade = FederationStateStoreFacade.getInstance(conf);
      facade.reinitialize(store, conf);
      for (SubClusterId id : new SubClusterId[] {SC1, SC2, SC3}) {
        store.registerSubCluster(SubClusterRegisterRequest.newInstance(SubClusterInfo.newInstance(id, "h:1", "h:2",
            "h:3", "h:4", SubClusterState.SC_RUNNING, System.currentTimeMillis(),
            "{\"clusterMetrics\":{\"availableMB\":8192,\"totalMB\":8192,\"availableVirtualCores\":8,"
                + "\"totalVirtualCores\":8,\"activeNodes\":1}}")));
      }
      AllocateResponse home = Records.newRecord(AllocateResponse.class);
      home.setAvailableResources(Resource.newInstance(2048, 2));  // room for 2 of the 6 containers
      long until = System.currentTimeMillis() + 30_000;
      Map<SubClusterId, List<ResourceRequest>> split;
      do { // a policy per application: the first may ask before the engine's protocol handshake (then all home)
        FederationAMRMProxyPolicy p = new RlPolicyManager().getAMRMPolicy(new FederationPolicyInitializationContext(
            SubClusterPolicyConfiguration.newInstance("*", RlPolicyManager.class.getName(),
                java.nio.ByteBuffer.allocate(0)), new DefaultSubClusterResolverImpl(), facade, SC1), null);
        p.notifyOfResponse(SC1, home);
        split = p.splitResourceRequests(List.of(ResourceRequest.newInstance(Priority.newInstance(1),
            ResourceRequest.ANY, Resource.newInstance(1024, 1), 6)), Collections.emptySet());
        if (split.size() > 1) {
          break;
        }
        Thread.sleep(200);
      } while (System.currentTimeMillis() < until);
      int total = 0;
      for (Map.Entry<SubClusterId, List<ResourceRequest>> e : split.entrySet()) {
        assertTrue(List.of(SC1, SC2, SC3).contains(e.getKey()), e.getKey().toString());
        for (ResourceRequest r : e.getValue()) {
          total += r.getNumContainers();
        }
      }
      assertEquals(6, total);
      assertEquals(2, split.get(SC1).get(0).getNumContainers(), "home keeps what fits its headroom: " + split);
      assertTrue(split.size() > 1, "nothing was forwarded: " + split);
    } finally {
      RlAMRMProxyPolicy.resetShared();
    }
  }
}
