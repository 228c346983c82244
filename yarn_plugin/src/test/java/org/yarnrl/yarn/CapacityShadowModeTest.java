package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

/**
 * Shadow mode of RlCapacityScheduler, per queue ({@code yarn.scheduler.capacity.<queue-path>.yarnrl.engine.mode}),
 * in a MockRM (4 simulated 8 GB nodes, queues root.analytics (engine queue) and root.default at 50/50) with a real
 * `policy-engine serve` (Delay): CapacityScheduler places every container as it does alone, the engine is asked on
 * the heartbeats and counts YARN's placements against its own; refreshQueues switches shadow to active and back.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CapacityShadowModeTest {
  private static final String ANALYTICS_MODE = "yarn.scheduler.capacity.root.analytics."
      + RlCapacityScheduler.QUEUE_ENGINE_MODE;
  @RegisterExtension static final EngineProcess engine = EngineProcess.perTestClass("delay", "capacity-shadow-test");

  private static YarnConfiguration conf(String schedulerClass, String address, String analyticsMode) {
    YarnConfiguration conf = RlCapacitySchedulerTest.conf(schedulerClass, address);
    if (analyticsMode != null) {
      conf.set(ANALYTICS_MODE, analyticsMode);
    }
    return conf;
  }

  private static RlCapacityScheduler scheduler(MockCluster c) {
    return assertInstanceOf(RlCapacityScheduler.class, c.rm.getResourceScheduler());
  }

  private double metric(String name, String... labels) {
    try {
      return engine.metric(name, labels);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  /** Both queues ask for more than the cluster holds; per queue, how many containers and MB it got. */
  private static Map<String, Long> contend(MockCluster c) throws Exception {
    MockAM analytics = c.startApp("analytics", "alice");
    MockAM other = c.startApp("default", "bob");
    MockCluster.ask(analytics, 40, 1024);
    MockCluster.ask(other, 40, 1024);
    List<List<Container>> got = c.run(List.of(analytics, other), 30);
    Map<String, Long> m = new TreeMap<>();
    for (int q = 0; q < got.size(); q++) {
      for (Container ct : got.get(q)) {
        m.merge("queue" + q + " containers", 1L, Long::sum);
        m.merge("queue" + q + " MB", ct.getResource().getMemorySize(), Long::sum);
      }
    }
    return m;
  }

  @Test
  void aShadowQueueIsPlacedByCapacitySchedulerAloneAndTheEngineSeesItsHeartbeats() throws Exception {
    Map<String, Long> plain;
    try (MockCluster c = new MockCluster(conf(CapacityScheduler.class.getName(), null, null), 4, 8192, 8)) {
      plain = contend(c);
    }
    double decisionsBefore = metric("yarnrl_shadow_decisions_total");
    double yarnBefore = metric("yarnrl_shadow_containers_total", "placed_by=\"yarn\"");
    double agreeBefore = metric("yarnrl_shadow_placements_total", "outcome=\"agree\"");
    double differBefore = metric("yarnrl_shadow_placements_total", "outcome=\"differ\"");
    try (MockCluster c = new MockCluster(conf(RlCapacityScheduler.class.getName(), engine.address(), "shadow"), 4,
        8192, 8)) {
      RlCapacityScheduler s = scheduler(c);
      RlSchedulerMetrics m = s.getRlMetrics();
      MockCluster.waitFor(() -> "OK".equals(m.getHandshakeState()), "handshake, have " + m);
      assertEquals("root.analytics", m.getShadowQueues(), m.toString());
      assertEquals("active", m.getEngineMode(), m.toString()); // the scheduler's; the queue sets its own
      Map<String, Long> shadowed = contend(c);
      // the same shares as CapacityScheduler alone (16 GB per queue: 15 containers and the AM)
      assertEquals(plain, shadowed, m.toString());
      assertEquals(15L, shadowed.get("queue0 containers"), shadowed.toString());
      assertEquals(0, m.getEngineContainers(), m.toString()); // nothing the engine said was applied
      assertEquals(0, m.getEngineDecisions(), m.toString());
      assertEquals(32, m.getNativeContainers(), m.toString()); // 30 + the two AMs
      assertEquals(0, m.getFallbacks(), m.toString());
      assertTrue(m.getShadowAsks() >= 1, m.toString());
      MockCluster.waitFor(() -> m.getShadowAnswers() + m.getShadowFailures() == m.getShadowAsks(),
          "every shadow ask answered, have " + m);
      assertEquals(0, m.getShadowFailures(), m.toString());
      // analytics' 16 containers (15 + its AM) went to the engine with the shadow decisions' ids; default's not
      MockCluster.waitFor(() -> m.getShadowNativeContainers() == 16, "analytics' 16 containers reported, have " + m);
      assertEquals(16, m.getShadowAgreements() + m.getShadowDisagreements(), m.toString());
      assertTrue(m.getShadowEngineContainers() > 0, m.toString());
      // the engine saw every shadow ask as one, and counted YARN's 16 containers and the same comparison
      MockCluster.waitFor(() -> metric("yarnrl_shadow_decisions_total") - decisionsBefore == m.getShadowAnswers(),
          "the engine counted every shadow decision, have " + m);
      MockCluster.waitFor(() -> metric("yarnrl_shadow_containers_total", "placed_by=\"yarn\"") - yarnBefore == 16,
          "the engine counted YARN's 16 containers");
      assertEquals(m.getShadowAgreements(), metric("yarnrl_shadow_placements_total", "outcome=\"agree\"")
          - agreeBefore, m.toString());
      assertEquals(m.getShadowDisagreements(), metric("yarnrl_shadow_placements_total", "outcome=\"differ\"")
          - differBefore, m.toString());
    }
  }

  @Test
  void refreshQueuesSwitchesShadowToActiveAndBackWithoutARestart() throws Exception {
    // scheduler-wide shadow (yarn-site.xml); the engine queue follows it until it sets its own mode
    YarnConfiguration conf = conf(RlCapacityScheduler.class.getName(), engine.address(), null);
    conf.set(ShadowMode.MODE, "shadow");
    try (MockCluster c = new MockCluster(conf, 4, 8192, 8)) {
      RlCapacityScheduler s = scheduler(c);
      RlSchedulerMetrics m = s.getRlMetrics();
      MockCluster.waitFor(() -> "OK".equals(m.getHandshakeState()), "handshake, have " + m);
      assertEquals("shadow", m.getEngineMode());
      assertEquals("root.analytics", m.getShadowQueues());
      MockAM first = c.startApp("analytics", "alice");
      MockCluster.ask(first, 4, 1024);
      assertEquals(4, c.run(List.of(first), 4).get(0).size(), m.toString());
      assertEquals(0, m.getEngineContainers(), m.toString());
      long shadowAsks = m.getShadowAsks();
      assertTrue(shadowAsks >= 1, m.toString());

      // canary: this queue goes active (rmadmin -refreshQueues reinitializes the scheduler with the new file)
      YarnConfiguration active = new YarnConfiguration(conf);
      active.set(ANALYTICS_MODE, "active");
      s.reinitialize(active, c.rm.getRMContext());
      assertEquals("", m.getShadowQueues(), m.toString());
      MockAM second = c.startApp("analytics", "alice");
      MockCluster.ask(second, 4, 1024);
      assertEquals(4, c.run(List.of(second), 4).get(0).size(), m.toString());
      assertTrue(m.getEngineContainers() >= 1, m.toString()); // the engine places again
      long engineContainers = m.getEngineContainers();

      // an unknown mode is refused naming the key, and the modes in force stay as they were
      YarnConfiguration bad = new YarnConfiguration(active);
      bad.set(ANALYTICS_MODE, "canary");
      Exception e = assertThrows(Exception.class, () -> s.reinitialize(bad, c.rm.getRMContext()));
      assertTrue(String.valueOf(e.getMessage()).contains(ANALYTICS_MODE + " must be 'active' or 'shadow', got "
          + "'canary'"), String.valueOf(e.getMessage()));
      assertTrue(s.isEngineQueue("root.analytics"));

      // and back to shadow (the queue's own setting removed: the scheduler's shadow holds again)
      s.reinitialize(conf, c.rm.getRMContext());
      assertEquals("root.analytics", m.getShadowQueues(), m.toString());
      MockAM third = c.startApp("analytics", "alice");
      MockCluster.ask(third, 4, 1024);
      assertEquals(4, c.run(List.of(third), 4).get(0).size(), m.toString());
      assertEquals(engineContainers, m.getEngineContainers(), m.toString()); // nothing applied in shadow
      assertTrue(m.getShadowAsks() > shadowAsks, m.toString());
      MockCluster.waitFor(() -> m.getShadowAnswers() + m.getShadowFailures() == m.getShadowAsks(),
          "every shadow ask answered, have " + m);
    }
  }

  @Test
  void anUnknownQueueModeStopsTheRmWithTheKeyNamed() {
    YarnConfiguration conf = conf(RlCapacityScheduler.class.getName(), engine.address(), "shaddow");
    Throwable e = assertThrows(Throwable.class, () -> new MockCluster(conf, 1, 8192, 8).close());
    while (e.getCause() != null && !String.valueOf(e.getMessage()).contains(ANALYTICS_MODE)) {
      e = e.getCause();
    }
    assertTrue(String.valueOf(e.getMessage()).contains(ANALYTICS_MODE + " must be 'active' or 'shadow', got "
        + "'shaddow'"), String.valueOf(e.getMessage()));
  }
}
