package org.yarnrl.federation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.federation.policies.FederationPolicyInitializationContext;
import org.apache.hadoop.yarn.server.federation.policies.exceptions.FederationPolicyInitializationException;
import org.apache.hadoop.yarn.server.federation.policies.router.FederationRouterPolicy;
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
import org.yarnrl.v1.JobCategory;
import org.yarnrl.v1.RouteRequest;
import org.yarnrl.v1.RouteResponse;

/**
 * The Router policy against Hadoop's in-memory federation state store (the real facade and records) and a scripted
 * engine on a real loopback gRPC server, for the answers a real policy never gives.
 */
class RlRouterPolicyTest {
  private static final SubClusterId SC1 = SubClusterId.newInstance("SC1");
  private static final SubClusterId SC2 = SubClusterId.newInstance("SC2");

  private ScriptedEngine engine;
  private List<RouteRequest> seen;
  private AtomicReference<Function<RouteRequest, RouteResponse>> answer;
  private FederationStateStoreFacade facade;
  private MemoryFederationStateStore store;

  @BeforeEach
  void start() throws Exception {
    engine = new ScriptedEngine();
    seen = engine.seen;
    answer = engine.answer;
    Configuration conf = new YarnConfiguration();
    conf.set(YarnConfiguration.FEDERATION_STATESTORE_CLIENT_CLASS, MemoryFederationStateStore.class.getName());
    conf.setInt(YarnConfiguration.FEDERATION_CACHE_TIME_TO_LIVE_SECS, 0);
    store = new MemoryFederationStateStore();
    store.init(conf);
    facade = FederationStateStoreFacade.getInstance(conf);
    facade.reinitialize(store, conf);
    register(store, SC1, 6144, 8192);
    register(store, SC2, 2048, 4096);
  }

  private static void register(MemoryFederationStateStore store, SubClusterId id, long availMb, long totalMb)
      throws Exception {
    String json = "{\"clusterMetrics\":{\"appsPending\":1,\"availableMB\":" + availMb + ",\"totalMB\":" + totalMb
        + ",\"availableVirtualCores\":4,\"totalVirtualCores\":8,\"containersPending\":3,\"activeNodes\":2}}";
    store.registerSubCluster(SubClusterRegisterRequest.newInstance(SubClusterInfo.newInstance(id, "h:1", "h:2",
        "h:3", "h:4", SubClusterState.SC_RUNNING, System.currentTimeMillis(), json)));
  }

  @AfterEach
  void stop() {
    RlRouterPolicy.resetShared();
    engine.close();
  }

  private FederationRouterPolicy policy(String... settings) throws Exception {
    Configuration conf = facade.getConf();
    conf.set(RouterSettings.ENGINE_ADDRESS, engine.address());
    conf.set(RouterSettings.DEADLINE_MS, "3000"); // generous: this machine's 2 cores are shared
    conf.set(RouterSettings.BREAKER_FAILURES, "100");
    for (int i = 0; i < settings.length; i += 2) {
      conf.set(settings[i], settings[i + 1]);
    }
    RlPolicyManager manager = new RlPolicyManager();
    manager.setQueue("*");
    SubClusterPolicyConfiguration pc = SubClusterPolicyConfiguration.newInstance("*",
        RlPolicyManager.class.getName(), java.nio.ByteBuffer.allocate(0));
    FederationRouterPolicy p = manager.getRouterPolicy(new FederationPolicyInitializationContext(pc,
        new DefaultSubClusterResolverImpl(), facade, null), null);
    long until = System.currentTimeMillis() + 10_000;
    while (!RlRouterPolicy.metrics().getHandshakeState().equals("OK") && System.currentTimeMillis() < until) {
      Thread.sleep(20);
    }
    assertEquals("OK", RlRouterPolicy.metrics().getHandshakeState());
    return p;
  }

  private static ApplicationSubmissionContext app(int n, String... tags) {
    ApplicationSubmissionContext ctx = Records.newRecord(ApplicationSubmissionContext.class);
    ctx.setApplicationId(ApplicationId.newInstance(1234, n));
    ctx.setApplicationTags(new HashSet<>(Arrays.asList(tags)));
    return ctx;
  }

  private static RouteResponse to(int cluster) {
    return RouteResponse.newBuilder().setJobIndex(0).setClusterId(cluster).setPolicy("scripted").build();
  }

  @Test
  void followsTheEngineAndSendsLoadAndTags() throws Exception {
    FederationRouterPolicy p = policy(RouterSettings.PAD_CLUSTERS, "5");
    answer.set(r -> to(2));
    long engine0 = RlRouterPolicy.metrics().getEngineDecisions();
    assertEquals(SC2, p.getHomeSubcluster(app(1, "yarnrl.category=time-critical", "yarnrl.deadline-ms=60000",
        "yarnrl.expected-runtime-ms=20000", "yarnrl.executors=3"), Collections.emptyList()));
    assertEquals(engine0 + 1, RlRouterPolicy.metrics().getEngineDecisions());
    RouteRequest r = seen.get(seen.size() - 1);
    assertEquals(1, r.getJobsCount());
    assertEquals(JobCategory.JOB_CATEGORY_TIME_CRITICAL, r.getJobs(0).getCategory());
    assertEquals(60.0, r.getJobs(0).getDeadline(), 1e-9);   // 1 s per step by default
    assertEquals(20.0, r.getJobs(0).getExecutorRuntime(), 1e-9);
    assertEquals(3, r.getJobs(0).getRequestDistribution(0));
    assertEquals(5, r.getClustersCount());                   // 2 sub-clusters + 3 padding
    assertEquals("SC1", r.getClusters(0).getSubCluster());
    assertEquals(1, r.getClusters(0).getClusterId());
    assertEquals(6144, r.getClusters(0).getAvailableMb());
    assertEquals(6, r.getClusters(0).getAvailable());        // 1024 MB executors
    assertEquals(8, r.getClusters(0).getCapacity());
    assertEquals(3, r.getClusters(0).getContainersPending());
    assertEquals(2, r.getClusters(0).getActiveNodes());
    assertEquals(100, r.getClusters(1).getOccupationHistoryCount());
    assertEquals(0.5f, r.getClusters(1).getOccupationHistory(99), 1e-6);
    assertTrue(r.getClusters(4).getPadding());
    assertFalse(r.getClusters(1).getPadding());
  }

  @Test
  void aModelsClusterShapeIsFilledSlotBySlot() throws Exception {
    FederationRouterPolicy p = policy(RouterSettings.CLUSTER_SHAPE, "800:70,1200:60,1500:100",
        RouterSettings.JOB_SCALE, "25");
    answer.set(r -> to(2));
    assertEquals(SC2, p.getHomeSubcluster(app(40, "yarnrl.executors=2"), new ArrayList<>(List.of(SC1))));
    RouteRequest r = seen.get(seen.size() - 1);
    assertEquals(3, r.getClustersCount());
    assertTrue(r.getClusters(0).getPadding());               // SC1 is blacklisted: its slot is full padding
    assertEquals(800, r.getClusters(0).getCapacity());
    assertEquals(0, r.getClusters(0).getAvailable());
    assertEquals("SC2", r.getClusters(1).getSubCluster());
    assertEquals(1200, r.getClusters(1).getCapacity());
    assertEquals(600, r.getClusters(1).getAvailable());      // half of SC2's memory is free
    assertEquals(60.0, r.getClusters(1).getHeteroFactor(), 1e-9);
    assertEquals(100.0, r.getClusters(2).getHeteroFactor(), 1e-9);
    assertEquals(50, r.getJobs(0).getRequestDistribution(0));
  }

  @Test
  void invalidAnswersFallBackToMostAvailableMemory() throws Exception {
    FederationRouterPolicy p = policy(RouterSettings.PAD_CLUSTERS, "3");
    RouterPolicyMetrics m = RlRouterPolicy.metrics();
    long invalid0 = m.getFallbacksInvalidAnswer();
    long padding0 = m.getFallbacksPaddingChosen();
    long blacklisted0 = m.getFallbacksBlacklisted();
    answer.set(r -> to(7));                                  // no such sub-cluster
    assertEquals(SC1, p.getHomeSubcluster(app(2), Collections.emptyList()));
    answer.set(r -> RouteResponse.newBuilder().setJobIndex(3).setClusterId(2).build()); // no such job
    assertEquals(SC1, p.getHomeSubcluster(app(3), Collections.emptyList()));
    assertEquals(invalid0 + 2, m.getFallbacksInvalidAnswer());
    answer.set(r -> to(RlRouterPolicy.PADDING_BASE + 2));
    assertEquals(SC1, p.getHomeSubcluster(app(4), Collections.emptyList()));
    assertEquals(padding0 + 1, m.getFallbacksPaddingChosen());
    // SC1 failed an earlier try: it is no candidate, and an answer naming it is never followed
    answer.set(r -> to(1));
    assertEquals(SC2, p.getHomeSubcluster(app(5), new ArrayList<>(List.of(SC1))));
    assertEquals(blacklisted0 + 1, m.getFallbacksBlacklisted());
    RouteRequest last = seen.get(seen.size() - 1);
    assertEquals("SC2", last.getClusters(0).getSubCluster());
    assertEquals(3, last.getClustersCount());
  }

  @Test
  void timeoutsAndAnAbsentEngineFallBackWithinTheDeadline() throws Exception {
    FederationRouterPolicy p = policy(RouterSettings.BREAKER_FAILURES, "2", RouterSettings.BREAKER_OPEN_MS, "60000",
        RouterSettings.DEADLINE_MS, "500");
    RouterPolicyMetrics m = RlRouterPolicy.metrics();
    long timeouts0 = m.getFallbacksTimeout();
    long open0 = m.getFallbacksBreakerOpen();
    answer.set(r -> {
      try {
        Thread.sleep(8000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return to(2);
    });
    for (int i = 0; i < 2; i++) {
      long t0 = System.nanoTime();
      assertEquals(SC1, p.getHomeSubcluster(app(10 + i), Collections.emptyList()));
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertTrue(ms < 5000, "a timed-out decision took " + ms + " ms (deadline 500 ms, the engine answers after 8 s)");
    }
    assertEquals(timeouts0 + 2, m.getFallbacksTimeout());
    // the decision time is split: the engine's part holds the two 500 ms timeouts
    assertTrue(m.getEngineMicrosP99() >= 400_000 && m.getEngineMicrosP99() < 5_000_000,
        "engine call p99 " + m.getEngineMicrosP99() + " us");
    assertTrue(m.getDecisionMicrosMax() >= m.getEngineMicrosP99());
    assertTrue(m.getStateStoreMicrosP99() < m.getDecisionMicrosMax());
    // two consecutive failures opened the breaker: the engine is not asked again for the open period
    int calls = seen.size();
    assertEquals(SC1, p.getHomeSubcluster(app(12), Collections.emptyList()));
    assertEquals(open0 + 1, m.getFallbacksBreakerOpen());
    assertEquals(calls, seen.size());
    assertEquals("OPEN", m.getBreakerState());
  }

  @Test
  void malformedTagsAreRoutedByTheBuiltInRuleNeverRefused() throws Exception {
    FederationRouterPolicy p = policy();
    answer.set(r -> to(2));
    long malformed0 = RlRouterPolicy.metrics().getFallbacksMalformedTags();
    int calls = seen.size();
    assertEquals(SC1, p.getHomeSubcluster(app(20, "yarnrl.category=urgent"), Collections.emptyList()));
    assertEquals(SC1, p.getHomeSubcluster(app(21, "yarnrl.deadline-ms=-5"), Collections.emptyList()));
    assertEquals(SC1, p.getHomeSubcluster(app(22, "yarnrl.executors=many"), Collections.emptyList()));
    assertEquals(malformed0 + 3, RlRouterPolicy.metrics().getFallbacksMalformedTags());
    assertEquals(calls, seen.size());
    // other tags are not ours to judge
    assertEquals(SC2, p.getHomeSubcluster(app(23, "team=x", "yarnrl.input=/in"), Collections.emptyList()));
  }

  @Test
  void settingsThatMakeNoSenseNameTheirKey() {
    for (String[] bad : new String[][] {
        {RouterSettings.DEADLINE_MS, "0"}, {RouterSettings.DEADLINE_MS, "fast"},
        {RouterSettings.EXECUTOR_MB, "-1"}, {RouterSettings.PAD_CLUSTERS, "-2"},
        {RouterSettings.SECONDS_PER_STEP, "0"}, {RouterSettings.ENGINE_ADDRESS, "engine"},
        {RouterSettings.ENABLED, "maybe"}, {RouterSettings.HISTORY_LENGTH, "0"},
        {RouterSettings.CLUSTER_SHAPE, "800:70,-3"}, {RouterSettings.JOB_SCALE, "0"},
        {RouterSettings.LOAD_MAX_AGE_MS, "-1"}}) {
      FederationPolicyInitializationException e =
          assertThrows(FederationPolicyInitializationException.class, () -> policy(bad));
      assertTrue(e.getMessage().contains(bad[0]), e.getMessage());
      facade.getConf().unset(bad[0]);
    }
  }

  @Test
  void aFreshLoadCopySparesTheStateStoreReadAndAStaleOneIsNotUsed() throws Exception {
    try {
      FederationRouterPolicy p = policy(RouterSettings.LOAD_MAX_AGE_MS, "600000");
      answer.set(r -> to(1));
      long copy0 = RlRouterPolicy.metrics().getLoadCopyReads();
      long until = System.currentTimeMillis() + 10_000;
      do { // the first background read follows the policy's initialisation
        p.getHomeSubcluster(app(40), Collections.emptyList());
      } while (RlRouterPolicy.metrics().getLoadCopyReads() == copy0 && System.currentTimeMillis() < until);
      assertEquals(6144, seen.get(seen.size() - 1).getClusters(0).getAvailableMb());
      register(store, SC1, 1024, 8192); // the store changes; the copy (10 min) is still fresh
      long copy1 = RlRouterPolicy.metrics().getLoadCopyReads();
      p.getHomeSubcluster(app(41), Collections.emptyList());
      assertEquals(copy1 + 1, RlRouterPolicy.metrics().getLoadCopyReads());
      assertEquals(6144, seen.get(seen.size() - 1).getClusters(0).getAvailableMb());
      RlRouterPolicy.resetShared();
      // 50 ms: the copy is refreshed every 25 ms, and a copy older than 50 ms is never used
      p = policy(RouterSettings.LOAD_MAX_AGE_MS, "50");
      Thread.sleep(200);
      p.getHomeSubcluster(app(42), Collections.emptyList());
      assertEquals(1024, seen.get(seen.size() - 1).getClusters(0).getAvailableMb());
    } finally {
      facade.getConf().unset(RouterSettings.LOAD_MAX_AGE_MS);
    }
  }

  @Test
  void withTheEngineOffTheBuiltInRuleRoutes() throws Exception {
    Configuration conf = facade.getConf();
    conf.set(RouterSettings.ENABLED, "false");
    try {
      RlPolicyManager manager = new RlPolicyManager();
      FederationRouterPolicy p = manager.getRouterPolicy(new FederationPolicyInitializationContext(
          SubClusterPolicyConfiguration.newInstance("*", RlPolicyManager.class.getName(),
              java.nio.ByteBuffer.allocate(0)), new DefaultSubClusterResolverImpl(), facade, null), null);
      long builtin0 = RlRouterPolicy.metrics().getBuiltinDecisions();
      assertEquals(SC1, p.getHomeSubcluster(app(30), Collections.emptyList()));
      assertEquals(SC2, p.getHomeSubcluster(app(31), new ArrayList<>(List.of(SC1))));
      assertEquals(builtin0 + 2, RlRouterPolicy.metrics().getBuiltinDecisions());
      assertThrows(org.apache.hadoop.yarn.exceptions.YarnException.class,
          () -> p.getHomeSubcluster(app(32), new ArrayList<>(List.of(SC1, SC2))));
    } finally {
      conf.unset(RouterSettings.ENABLED);
    }
  }

  @Test
  void loadJsonOfBothHadoopLines() {
    SubClusterLoad l = SubClusterLoad.parse("{\"clusterMetrics\":{\"availableMB\":1536,\"totalMB\":4096,"
        + "\"activeNodes\":2,\"totalVirtualCores\":8,\"availableVirtualCores\":3,\"containersPending\":0}}");
    assertEquals(1536, l.availableMb);
    assertEquals(0.625, l.occupation(), 1e-9);
    assertEquals(-1, l.appsPending);
    assertFalse(SubClusterLoad.parse("not json").known());
    assertEquals(1.0, SubClusterLoad.parse(null).occupation());
  }
}
