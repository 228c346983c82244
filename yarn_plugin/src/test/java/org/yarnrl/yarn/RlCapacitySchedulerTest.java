package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.resourcemanager.MockAM;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.yarnrl.v1.Assignment;
import org.yarnrl.v1.ScheduleResponse;

/**
 * RlCapacityScheduler in a real ResourceManager (MockRM, 4 simulated 8 GB nodes), TestCapacityScheduler style:
 * queues root.analytics (engine) and root.default at 50/50, a real `policy-engine serve` over loopback or a scripted
 * engine ({@link FakeEngine}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RlCapacitySchedulerTest {
  private static final int NODES = 4;
  private static final int NODE_MB = 8192;
  @RegisterExtension static final EngineProcess engine = EngineProcess.perTestClass("fifo", "rlcapacity-test");

  static YarnConfiguration conf(String schedulerClass, String engineAddress) {
    YarnConfiguration conf = new YarnConfiguration();
    conf.set(YarnConfiguration.RM_SCHEDULER, schedulerClass);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 1024);
    // on by default in 3.5.0; RlCapacityScheduler turns it off itself, plain CapacityScheduler is compared with it off
    conf.setBoolean("yarn.scheduler.capacity.schedule-asynchronously.enable", false);
    conf.set("yarn.scheduler.capacity.root.queues", "analytics,default");
    for (String q : new String[] {"analytics", "default"}) {
      conf.set("yarn.scheduler.capacity.root." + q + ".capacity", "50");
      conf.set("yarn.scheduler.capacity.root." + q + ".maximum-capacity", "100");
      // one user may take the whole cluster: only CapacityScheduler's queue ordering keeps the shares
      conf.set("yarn.scheduler.capacity.root." + q + ".user-limit-factor", "2");
    }
    conf.set("yarn.scheduler.capacity.root.analytics." + RlCapacityScheduler.QUEUE_ENGINE_ENABLED, "true");
    if (engineAddress != null) {
      conf.set(RlScheduler.ENGINE_ADDRESS, engineAddress);
      conf.setLong(RlScheduler.DEADLINE_MS, 5000); // generous: the test machine is loaded; timing is not tested
      conf.setLong(RlScheduler.BREAKER_OPEN_MS, 500);
    }
    return conf;
  }

  private static RlSchedulerMetrics metrics(MockCluster c) {
    return assertInstanceOf(RlCapacityScheduler.class, c.rm.getResourceScheduler()).getRlMetrics();
  }

  private static void awaitHandshake(MockCluster c, String state) throws InterruptedException {
    RlSchedulerMetrics m = metrics(c);
    MockCluster.waitFor(() -> state.equals(m.getHandshakeState()), "handshake " + state + ", have " + m);
  }

  /** Both queues ask for more than the cluster holds at once; returns the containers each got. */
  private static List<List<Container>> contend(MockCluster c) throws Exception {
    MockAM analytics = c.startApp("analytics", "alice");
    MockAM other = c.startApp("default", "bob");
    MockCluster.ask(analytics, 40, 1024);
    MockCluster.ask(other, 40, 1024);
    // 32 GB: two 1 GB AMs + 30 containers; the run ends when the cluster is full and nothing moves for a while
    return c.run(List.of(analytics, other), 30);
  }

  private static long usedMb(MockCluster c, String queue) {
    return ((CapacityScheduler) c.rm.getResourceScheduler()).getQueue(queue).getQueueResourceUsage().getUsed()
        .getMemorySize();
  }

  @Test
  void bothQueuesGetTheirGuaranteedShareWhileTheEnginePlacesOne() throws Exception {
    try (MockCluster c = new MockCluster(conf(RlCapacityScheduler.class.getName(), engine.address()), NODES,
        NODE_MB, 8)) {
      awaitHandshake(c, "OK");
      List<List<Container>> got = contend(c);
      RlSchedulerMetrics m = metrics(c);
      int a = got.get(0).size();
      int b = got.get(1).size();
      assertEquals(30, a + b, "the cluster is full: " + a + " + " + b + ", " + m);
      // each queue's guarantee is 16 GB (AM included); CapacityScheduler serves the less-used queue first
      assertTrue(usedMb(c, "analytics") >= 15 * 1024, "analytics used " + usedMb(c, "analytics") + ", " + m);
      assertTrue(usedMb(c, "default") >= 15 * 1024, "default used " + usedMb(c, "default") + ", " + m);
      // the engine placed analytics' containers (its AM included), and only those
      assertTrue(m.getEngineDecisions() > 0, m.toString());
      assertTrue(m.getEngineContainers() > 0, m.toString());
      assertTrue(m.getEngineContainers() <= a + 1, m.toString());
      assertTrue(m.getNativeContainers() >= b + 1, m.toString()); // default's containers and its AM
      assertTrue(engine.metric("yarnrl_decisions_total", "rpc=\"schedule\"") >= m.getEngineDecisions());
      assertEquals("OK", m.getHandshakeState());
      assertEquals("yarnrl.v1", m.getEngineProtocolVersion());
      // the last asks may still be out when the cluster fills; each comes back by its deadline
      MockCluster.waitFor(() -> m.getAsksInFlight() == 0, "no ask in flight, have " + m);
    }
  }

  /**
   * How many containers and MB each queue got. (Not per node: MockRM handles heartbeats on its dispatcher thread, so
   * which node a container lands on depends on timing in either scheduler; the queues' shares do not.)
   */
  private static Map<String, Long> placement(List<List<Container>> got) {
    Map<String, Long> m = new TreeMap<>();
    for (int q = 0; q < got.size(); q++) {
      for (Container c : got.get(q)) {
        m.merge("queue" + q + " containers", 1L, Long::sum);
        m.merge("queue" + q + " MB", c.getResource().getMemorySize(), Long::sum);
      }
    }
    return m;
  }

  @Test
  void withTheEngineDownItSharesExactlyAsCapacityScheduler() throws Exception {
    Map<String, Long> plain;
    try (MockCluster c = new MockCluster(conf(CapacityScheduler.class.getName(), null), NODES, NODE_MB, 8)) {
      plain = placement(contend(c));
    }
    String nobody = "127.0.0.1:" + EngineProcess.freePort();
    try (MockCluster c = new MockCluster(conf(RlCapacityScheduler.class.getName(), nobody), NODES, NODE_MB, 8)) {
      Map<String, Long> rl = placement(contend(c));
      RlSchedulerMetrics m = metrics(c);
      assertEquals(plain, rl, m.toString());
      assertEquals(15L, rl.get("queue0 containers"), rl.toString()); // 16 GB each, the AMs included
      assertEquals(15L, rl.get("queue1 containers"), rl.toString());
      assertEquals(0, m.getEngineContainers(), m.toString());
      assertTrue(m.getFallbacksUnavailable() > 0, m.toString());
      assertEquals("UNKNOWN", m.getHandshakeState(), m.toString());
    }
  }

  @Test
  void theEngineDecidesWhereAndWhetherNow() throws Exception {
    List<org.yarnrl.v1.ScheduleRequest> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
    try (FakeEngine fake = new FakeEngine("yarnrl.v1", req -> {
      seen.add(req);
      return FakeEngine.onlyOn("h3", req);
    });
         MockCluster c = new MockCluster(conf(RlCapacityScheduler.class.getName(), fake.address()), NODES,
             NODE_MB, 8)) {
      awaitHandshake(c, "OK");
      MockAM analytics = c.startApp("analytics", "alice");
      MockAM other = c.startApp("default", "bob");
      assertEquals("h3", analytics.getApplicationAttemptId() == null ? "" : c.rm.getRMContext().getRMApps()
          .get(analytics.getApplicationAttemptId().getApplicationId()).getCurrentAppAttempt().getMasterContainer()
          .getNodeId().getHost());
      MockCluster.ask(analytics, 4, 1024, "h1", "h3"); // YARN holds h1, h3, /default-rack and "*"
      MockCluster.ask(other, 4, 1024);
      List<List<Container>> got = c.run(List.of(analytics, other), 8);
      RlSchedulerMetrics m = metrics(c);
      // snapshots: only the engine queue's asks, each with only the node's own host and rack entries
      assertTrue(seen.stream().anyMatch(r -> r.getAsksList().stream().anyMatch(a -> a.getLocalityNames() == 3)),
          "no snapshot with the task ask");
      for (org.yarnrl.v1.ScheduleRequest r : seen) {
        for (org.yarnrl.v1.ResourceAsk a : r.getAsksList()) {
          assertEquals("root.analytics", a.getQueuePath(), a.toString());
          assertTrue(a.getLocalityCount() <= 2, a.toString());
          for (org.yarnrl.v1.LocalityRequest lr : a.getLocalityList()) {
            assertTrue(lr.getResourceName().equals(r.getNode().getHost())
                || lr.getResourceName().equals("/default-rack"), r.getNode().getHost() + ": " + a);
          }
        }
      }
      assertEquals(4, got.get(0).size(), m.toString());
      assertEquals(4, got.get(1).size(), m.toString());
      for (Container ct : got.get(0)) {
        assertEquals("h3", ct.getNodeId().getHost(), "the engine said h3 only: " + got.get(0));
      }
      // the other queue is CapacityScheduler's alone: its containers go to the first nodes that heartbeat
      assertFalse(got.get(1).stream().allMatch(ct -> ct.getNodeId().getHost().equals("h3")), got.get(1).toString());
      assertEquals(5, m.getEngineContainers(), m.toString()); // 4 + the AM
      assertEquals(0, m.getFallbacks(), m.toString());
    }
  }

  @Test
  void anInvalidAnswerFallsBackToCapacitySchedulerAndIsCounted() throws Exception {
    try (FakeEngine fake = new FakeEngine("yarnrl.v1", req -> ScheduleResponse.newBuilder()
        .setRequestId(req.getRequestId())
        .addAssignments(Assignment.newBuilder().setAskId("no-such-ask").setCount(1)).build());
         MockCluster c = new MockCluster(conf(RlCapacityScheduler.class.getName(), fake.address()), NODES,
             NODE_MB, 8)) {
      awaitHandshake(c, "OK");
      MockAM analytics = c.startApp("analytics", "alice");
      MockCluster.ask(analytics, 3, 1024);
      List<List<Container>> got = c.run(List.of(analytics), 3);
      RlSchedulerMetrics m = metrics(c);
      assertEquals(3, got.get(0).size(), m.toString());
      assertTrue(m.getFallbacksInvalidAnswer() > 0, m.toString());
      assertEquals(0, m.getEngineContainers(), m.toString());
      assertTrue(m.getNativeContainers() >= 4, m.toString());
    }
  }

  @Test
  void anEngineSpeakingAnotherProtocolIsRefused() throws Exception {
    try (FakeEngine fake = new FakeEngine("yarnrl.v2", req -> FakeEngine.onlyOn("h3", req));
         MockCluster c = new MockCluster(conf(RlCapacityScheduler.class.getName(), fake.address()), NODES,
             NODE_MB, 8)) {
      awaitHandshake(c, "REFUSED");
      MockAM analytics = c.startApp("analytics", "alice");
      MockCluster.ask(analytics, 3, 1024);
      List<List<Container>> got = c.run(List.of(analytics), 3);
      RlSchedulerMetrics m = metrics(c);
      assertEquals(3, got.get(0).size(), m.toString());
      assertEquals(0, fake.scheduleCalls.get(), "a refused engine was asked");
      assertTrue(m.getFallbacksVersionMismatch() > 0, m.toString());
      assertEquals("yarnrl.v2", m.getEngineProtocolVersion());
      assertEquals(0, m.getEngineContainers(), m.toString());
    }
  }

  @Test
  void queueOptInIsInheritedAndOverridable() throws Exception {
    YarnConfiguration conf = conf(RlCapacityScheduler.class.getName(), null);
    conf.set("yarn.scheduler.capacity.root.analytics.queues", "etl,adhoc");
    conf.set("yarn.scheduler.capacity.root.analytics.etl.capacity", "50");
    conf.set("yarn.scheduler.capacity.root.analytics.adhoc.capacity", "50");
    conf.set("yarn.scheduler.capacity.root.analytics.adhoc." + RlCapacityScheduler.QUEUE_ENGINE_ENABLED, "false");
    conf.unset("yarn.scheduler.capacity.schedule-asynchronously.enable");
    conf.set(RlScheduler.ENGINE_ADDRESS, "127.0.0.1:" + EngineProcess.freePort());
    try (MockCluster c = new MockCluster(conf, 1, NODE_MB, 8)) {
      RlCapacityScheduler cs = (RlCapacityScheduler) c.rm.getResourceScheduler();
      // asynchronous scheduling (3.5.0's default) is turned off when an engine is configured and nobody set it
      assertFalse(cs.getConfiguration().getScheduleAynschronously());
      assertTrue(cs.isEngineQueue("root.analytics"));
      assertTrue(cs.isEngineQueue("root.analytics.etl"));
      assertFalse(cs.isEngineQueue("root.analytics.adhoc"));
      assertFalse(cs.isEngineQueue("root.default"));
      assertFalse(cs.isEngineQueue("root"));
    }
  }

  static List<String> hosts(List<Container> cs) {
    List<String> h = new ArrayList<>();
    for (Container c : cs) {
      h.add(c.getNodeId().getHost());
    }
    return h;
  }
}
