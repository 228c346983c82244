package org.yarnrl.federation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.federation.policies.FederationPolicyInitializationContext;
import org.apache.hadoop.yarn.server.federation.policies.amrmproxy.FederationAMRMProxyPolicy;
import org.apache.hadoop.yarn.server.federation.policies.exceptions.FederationPolicyInitializationException;
import org.apache.hadoop.yarn.server.federation.resolver.DefaultSubClusterResolverImpl;
import org.apache.hadoop.yarn.server.federation.store.impl.MemoryFederationStateStore;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterId;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterInfo;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterPolicyConfiguration;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterRegisterRequest;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterState;
import org.apache.hadoop.yarn.server.federation.utils.FederationStateStoreFacade;
import org.apache.hadoop.yarn.util.Records;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.yarnrl.v1.ManagerView;
import org.yarnrl.v1.RouteRequest;
import org.yarnrl.v1.RouteResponse;

/**
 * The AMRMProxy policy (DSRAP across sub-clusters) against Hadoop's in-memory federation state store and a scripted
 * engine on a real loopback gRPC server, for the answers a real policy never gives; RlAMRMProxyPolicyEngineTest
 * asks the real engine.
 */
class RlAMRMProxyPolicyTest {
  private static final SubClusterId SC1 = SubClusterId.newInstance("SC1");
  private static final SubClusterId SC2 = SubClusterId.newInstance("SC2");
  private static final SubClusterId SC3 = SubClusterId.newInstance("SC3");

  private ScriptedEngine engine;
  private List<RouteRequest> seen;
  private AtomicReference<Function<RouteRequest, RouteResponse>> answer;
  private FederationStateStoreFacade facade;

  @BeforeEach
  void start() throws Exception {
    engine = new ScriptedEngine();
    seen = engine.seen;
    answer = engine.answer;
    Configuration conf = new YarnConfiguration();
    conf.set(YarnConfiguration.FEDERATION_STATESTORE_CLIENT_CLASS, MemoryFederationStateStore.class.getName());
    conf.setInt(YarnConfiguration.FEDERATION_CACHE_TIME_TO_LIVE_SECS, 0);
    MemoryFederationStateStore store = new MemoryFederationStateStore();
    store.init(conf);
    facade = FederationStateStoreFacade.getInstance(conf);
    facade.reinitialize(store, conf);
    for (SubClusterId id : new SubClusterId[] {SC1, SC2, SC3}) {
      String json = "{\"clusterMetrics\":{\"availableMB\":4096,\"totalMB\":8192,\"availableVirtualCores\":4,"
          + "\"totalVirtualCores\":8,\"activeNodes\":2}}";
      store.registerSubCluster(SubClusterRegisterRequest.newInstance(SubClusterInfo.newInstance(id, "h:1", "h:2",
          "h:3", "h:4", SubClusterState.SC_RUNNING, System.currentTimeMillis(), json)));
    }
  }

  @AfterEach
  void stop() {
    RlAMRMProxyPolicy.resetShared();
    Configuration conf = facade.getConf();
    for (String k : new String[] {RlAMRMProxyPolicy.ENABLED, RlAMRMProxyPolicy.MAX_TASKS,
        RlAMRMProxyPolicy.NEIGHBOUR_TIMEOUT_MS,
        RouterSettings.ENGINE_ADDRESS, RouterSettings.DEADLINE_MS, RouterSettings.BREAKER_FAILURES}) {
      conf.unset(k);
    }
    engine.close();
  }

  private FederationAMRMProxyPolicy policy(String... settings) throws Exception {
    Configuration conf = facade.getConf();
    conf.set(RouterSettings.ENGINE_ADDRESS, engine.address());
    conf.set(RouterSettings.DEADLINE_MS, "3000"); // generous: this machine's 2 cores are shared
    conf.set(RouterSettings.BREAKER_FAILURES, "100");
    for (int i = 0; i < settings.length; i += 2) {
      conf.set(settings[i], settings[i + 1]);
    }
    RlPolicyManager manager = new RlPolicyManager();
    manager.setQueue("*");
    FederationAMRMProxyPolicy p = manager.getAMRMPolicy(new FederationPolicyInitializationContext(
        SubClusterPolicyConfiguration.newInstance("*", RlPolicyManager.class.getName(),
            java.nio.ByteBuffer.allocate(0)), new DefaultSubClusterResolverImpl(), facade, SC1), null);
    assertTrue(p instanceof RlAMRMProxyPolicy);
    if ("true".equals(conf.get(RlAMRMProxyPolicy.ENABLED))) {
      long until = System.currentTimeMillis() + 60_000;
      while (!RlAMRMProxyPolicy.handshakeState().equals("OK") && System.currentTimeMillis() < until) {
        Thread.sleep(20);
      }
      assertEquals("OK", RlAMRMProxyPolicy.handshakeState());
    }
    return p;
  }

  private static ResourceRequest ask(String where, int n) {
    return ResourceRequest.newInstance(Priority.newInstance(1), where, Resource.newInstance(1024, 1), n);
  }

  private static int count(Map<SubClusterId, List<ResourceRequest>> split, SubClusterId id, String where) {
    int n = -1;
    for (ResourceRequest r : split.getOrDefault(id, Collections.emptyList())) {
      if (r.getResourceName().equals(where)) {
        n = r.getNumContainers();
      }
    }
    return n;
  }

  /** Allocates the first `local` tasks on the home node, forwards the next `fwd` to `to`, keeps the rest. */
  private static Function<RouteRequest, RouteResponse> answering(int local, int fwd, int to) {
    return req -> {
      RouteResponse.Builder b = RouteResponse.newBuilder().setPolicy("scripted");
      for (int t = 0; t < req.getManager().getTaskIdsCount(); t++) {
        b.addTaskNode(t < local ? 0 : -1).addTaskNextCluster(t >= local && t < local + fwd ? to : -1);
      }
      return b.build();
    };
  }

  private static AllocateResponse headroom(int mb, int vcores) {
    AllocateResponse r = Records.newRecord(AllocateResponse.class);
    r.setAvailableResources(Resource.newInstance(mb, vcores));
    return r;
  }

  @Test
  void withTheEngineOffEveryAskStaysHome() throws Exception {
    FederationAMRMProxyPolicy p = policy();
    long off0 = RlAMRMProxyPolicy.COUNTERS.fallbacks(RlAMRMProxyPolicy.Fallback.DISABLED);
    Map<SubClusterId, List<ResourceRequest>> s = p.splitResourceRequests(
        List.of(ask(ResourceRequest.ANY, 5), ask("node7", 2)), Collections.emptySet());
    assertEquals(Set.of(SC1), s.keySet());
    assertEquals(5, count(s, SC1, ResourceRequest.ANY));
    assertEquals(2, count(s, SC1, "node7"));
    assertEquals(off0 + 1, RlAMRMProxyPolicy.COUNTERS.fallbacks(RlAMRMProxyPolicy.Fallback.DISABLED));
    assertTrue(seen.isEmpty());
  }

  @Test
  void theEnginesForwardsSplitTheAskAndAnUnchangedAskIsNotSentAgain() throws Exception {
    FederationAMRMProxyPolicy p = policy(RlAMRMProxyPolicy.ENABLED, "true");
    p.notifyOfResponse(SC1, headroom(3072, 3));
    answer.set(answering(1, 2, 2));
    Map<SubClusterId, List<ResourceRequest>> s = p.splitResourceRequests(
        List.of(ask(ResourceRequest.ANY, 4), ask("node7", 2)), Collections.singleton(SC3));
    assertEquals(1, seen.size());
    ManagerView v = seen.get(0).getManager();
    assertEquals(1, v.getClusterId());
    assertEquals(List.of(2), v.getNeighborsList());        // SC3 timed out: not a neighbour
    assertEquals(3.0, v.getCpuFree(0), 1e-9);              // headroom from the home RM's last answer
    assertEquals(3.0, v.getNetworkFree(0), 1e-9);          // GB
    assertEquals(8.0, v.getCpuCapacity(0), 1e-9);
    assertEquals(4, v.getTaskIdsCount());
    assertEquals(1.0, v.getTaskNetwork(0), 1e-9);
    assertEquals(4, v.getTransferLimit());
    assertEquals(2, count(s, SC1, ResourceRequest.ANY));   // one allocated, one kept
    assertEquals(2, count(s, SC2, ResourceRequest.ANY));
    assertEquals(2, count(s, SC1, "node7"));
    assertEquals(-1, count(s, SC2, "node7"));
    // the same ask again: the last split, no call
    s = p.splitResourceRequests(List.of(ask(ResourceRequest.ANY, 4)), Collections.emptySet());
    assertEquals(1, seen.size());
    assertEquals(2, count(s, SC1, ResourceRequest.ANY));
    assertEquals(2, count(s, SC2, ResourceRequest.ANY));
    // it shrinks to 1: trimmed, no call; both sub-clusters hear of it (a zero cancels an earlier share)
    s = p.splitResourceRequests(List.of(ask(ResourceRequest.ANY, 1)), Collections.emptySet());
    assertEquals(1, seen.size());
    assertEquals(1, count(s, SC1, ResourceRequest.ANY) + count(s, SC2, ResourceRequest.ANY));
    assertTrue(count(s, SC1, ResourceRequest.ANY) >= 0 && count(s, SC2, ResourceRequest.ANY) >= 0);
    // it grows: asked again
    answer.set(answering(3, 0, -1));
    s = p.splitResourceRequests(List.of(ask(ResourceRequest.ANY, 3)), Collections.emptySet());
    assertEquals(2, seen.size());
    assertEquals(List.of(2, 3), seen.get(1).getManager().getNeighborsList());
    assertEquals(3, count(s, SC1, ResourceRequest.ANY));
    assertEquals(0, count(s, SC2, ResourceRequest.ANY));   // SC2's earlier share cancelled
  }

  private static AllocateResponse allocated(int containers, int priority) {
    AllocateResponse r = Records.newRecord(AllocateResponse.class);
    List<Container> got = new ArrayList<>();
    ApplicationAttemptId attempt = ApplicationAttemptId.newInstance(ApplicationId.newInstance(1, 1), 1);
    for (int i = 0; i < containers; i++) {
      got.add(Container.newInstance(ContainerId.newContainerId(attempt, i + 2), NodeId.newInstance("sc2-w1", 1),
          "sc2-w1:2", Resource.newInstance(1024, 1), Priority.newInstance(priority), null));
    }
    r.setAllocatedContainers(got);
    return r;
  }

  @Test
  void aShrinkTheAllocationsExplainLowersTheSubClustersThatAllocatedAndTheCountersAreOnJmx() throws Exception {
    FederationAMRMProxyPolicy p = policy(RlAMRMProxyPolicy.ENABLED, "true");
    long calls0 = RlAMRMProxyPolicy.COUNTERS.engineCalls.get();
    long fwd0 = RlAMRMProxyPolicy.COUNTERS.allocatedNeighbours.get();
    answer.set(answering(1, 3, 2));                          // 1 allocated home, 3 forwarded to SC2
    Map<SubClusterId, List<ResourceRequest>> s = p.splitResourceRequests(List.of(ask(ResourceRequest.ANY, 5)),
        Collections.emptySet());
    assertEquals(2, count(s, SC1, ResourceRequest.ANY));
    assertEquals(3, count(s, SC2, ResourceRequest.ANY));
    // SC2 allocates 2 (another priority's container does not count), the AM asks for 5 - 2 = 3 more
    p.notifyOfResponse(SC2, allocated(2, 1));
    p.notifyOfResponse(SC2, allocated(1, 7));
    s = p.splitResourceRequests(List.of(ask(ResourceRequest.ANY, 3)), Collections.emptySet());
    assertEquals(2, count(s, SC1, ResourceRequest.ANY));    // largest share first would have cut SC1's to 1
    assertEquals(1, count(s, SC2, ResourceRequest.ANY));    // what SC2's RM still has outstanding
    // a cancellation no allocation explains: largest share first
    s = p.splitResourceRequests(List.of(ask(ResourceRequest.ANY, 2)), Collections.emptySet());
    assertEquals(1, count(s, SC1, ResourceRequest.ANY));
    assertEquals(1, count(s, SC2, ResourceRequest.ANY));
    assertEquals(calls0 + 1, RlAMRMProxyPolicy.COUNTERS.engineCalls.get());
    ObjectName bean = new ObjectName("Hadoop:service=NodeManager,name=RlAMRMProxyPolicy");
    MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
    assertEquals(calls0 + 1, (Long) jmx.getAttribute(bean, "EngineCalls"));
    assertEquals(fwd0 + 3, (Long) jmx.getAttribute(bean, "ContainersAllocatedNeighbours"));
    assertEquals("SC1=2 SC2=3", jmx.getAttribute(bean, "LastSplit"));
    assertEquals("OK", jmx.getAttribute(bean, "HandshakeState"));
    assertEquals(engine.address(), jmx.getAttribute(bean, "EngineAddress"));
  }

  @Test
  void aNeighbourThatNeverAnswersGivesItsShareBackHome() throws Exception {
    FederationAMRMProxyPolicy p = policy(RlAMRMProxyPolicy.ENABLED, "true", RlAMRMProxyPolicy.NEIGHBOUR_TIMEOUT_MS,
        "1000");
    long silent0 = RlAMRMProxyPolicy.COUNTERS.fallbacks(RlAMRMProxyPolicy.Fallback.NEIGHBOUR_SILENT);
    answer.set(answering(1, 2, 2));
    Map<SubClusterId, List<ResourceRequest>> s = p.splitResourceRequests(List.of(ask(ResourceRequest.ANY, 4)),
        Collections.emptySet());
    assertEquals(2, count(s, SC2, ResourceRequest.ANY));
    p.notifyOfResponse(SC1, allocated(1, 1));
    s = p.splitResourceRequests(List.of(ask(ResourceRequest.ANY, 3)), Collections.emptySet());
    assertEquals(2, count(s, SC2, ResourceRequest.ANY));    // within the timeout: SC2 keeps its share
    Thread.sleep(1200);                                     // SC2 (its unmanaged AM) never answered
    p.notifyOfResponse(SC1, allocated(1, 1));
    s = p.splitResourceRequests(List.of(ask(ResourceRequest.ANY, 2)), Collections.emptySet());
    assertEquals(2, count(s, SC1, ResourceRequest.ANY));
    assertEquals(0, count(s, SC2, ResourceRequest.ANY));    // cancelled there
    assertEquals(silent0 + 1, RlAMRMProxyPolicy.COUNTERS.fallbacks(RlAMRMProxyPolicy.Fallback.NEIGHBOUR_SILENT));
    // and it is no neighbour for the next decision
    answer.set(answering(0, 0, -1));
    p.splitResourceRequests(List.of(ask(ResourceRequest.ANY, 5)), Collections.emptySet());
    assertEquals(List.of(3), seen.get(seen.size() - 1).getManager().getNeighborsList());
  }

  @Test
  void invalidAnswersAndTimeoutsSendTheWholeAskHome() throws Exception {
    FederationAMRMProxyPolicy p = policy(RlAMRMProxyPolicy.ENABLED, "true", RouterSettings.DEADLINE_MS, "300",
        RlAMRMProxyPolicy.MAX_TASKS, "3");
    long invalid0 = RlAMRMProxyPolicy.COUNTERS.fallbacks(RlAMRMProxyPolicy.Fallback.INVALID_ANSWER);
    long timeout0 = RlAMRMProxyPolicy.COUNTERS.fallbacks(RlAMRMProxyPolicy.Fallback.TIMEOUT);
    answer.set(answering(0, 2, 9));                         // cluster 9 is no neighbour
    Map<SubClusterId, List<ResourceRequest>> s = p.splitResourceRequests(List.of(ask(ResourceRequest.ANY, 5)),
        Collections.emptySet());
    assertEquals(3, seen.get(0).getManager().getTaskIdsCount()); // max-tasks caps the view; the rest stays home
    assertEquals(Set.of(SC1), s.keySet());
    assertEquals(5, count(s, SC1, ResourceRequest.ANY));
    assertEquals(invalid0 + 1, RlAMRMProxyPolicy.COUNTERS.fallbacks(RlAMRMProxyPolicy.Fallback.INVALID_ANSWER));
    answer.set(req -> RouteResponse.newBuilder().addTaskNode(0).build()); // answers for 1 task of 3
    s = p.splitResourceRequests(List.of(ask(ResourceRequest.ANY, 6)), Collections.emptySet());
    assertEquals(6, count(s, SC1, ResourceRequest.ANY));
    assertEquals(invalid0 + 2, RlAMRMProxyPolicy.COUNTERS.fallbacks(RlAMRMProxyPolicy.Fallback.INVALID_ANSWER));
    answer.set(req -> {
      try {
        Thread.sleep(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return answering(0, 3, 2).apply(req);
    });
    long t0 = System.nanoTime();
    s = p.splitResourceRequests(List.of(ask(ResourceRequest.ANY, 7)), Collections.emptySet());
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertTrue(ms < 3000, "a timed-out split took " + ms + " ms (deadline 300 ms, the engine answers after 5 s)");
    assertEquals(7, count(s, SC1, ResourceRequest.ANY));
    assertEquals(timeout0 + 1, RlAMRMProxyPolicy.COUNTERS.fallbacks(RlAMRMProxyPolicy.Fallback.TIMEOUT));
  }

  @Test
  void settingsThatMakeNoSenseNameTheirKey() {
    for (String[] bad : new String[][] {{RlAMRMProxyPolicy.ENABLED, "maybe"}, {RlAMRMProxyPolicy.MAX_TASKS, "0"},
        {RlAMRMProxyPolicy.MAX_TASKS, "many"}, {RlAMRMProxyPolicy.NEIGHBOUR_TIMEOUT_MS, "10"}}) {
      FederationPolicyInitializationException e =
          assertThrows(FederationPolicyInitializationException.class, () -> policy(bad));
      assertTrue(e.getMessage().contains(bad[0]), e.getMessage());
      facade.getConf().unset(bad[0]);
    }
    facade.getConf().set(RouterSettings.DEADLINE_MS, "0");
    FederationPolicyInitializationException e = assertThrows(FederationPolicyInitializationException.class,
        () -> policy(RlAMRMProxyPolicy.ENABLED, "true", RouterSettings.DEADLINE_MS, "0"));
    assertTrue(e.getMessage().contains(RouterSettings.DEADLINE_MS), e.getMessage());
  }
}
