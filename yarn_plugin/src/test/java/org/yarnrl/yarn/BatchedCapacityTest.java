package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.resourcemanager.MockAM;
import org.junit.jupiter.api.Test;
import org.yarnrl.v1.Assignment;
import org.yarnrl.v1.ScheduleResponse;

/**
 * RlCapacityScheduler with CapacityScheduler's asynchronous scheduling on (Hadoop 3.5.0's default) and the batched
 * engine path, in a real ResourceManager (MockRM, 4 simulated 8 GB nodes, queues root.analytics with the engine and
 * root.default, as RlCapacitySchedulerTest): heartbeats ask the engine, CapacityScheduler's own threads apply each
 * node's plan and its committer validates every container.
 */
class BatchedCapacityTest {

  static YarnConfiguration conf(String address, boolean async, boolean batched) {
    YarnConfiguration conf = RlCapacitySchedulerTest.conf(RlCapacityScheduler.class.getName(), address);
    conf.setBoolean("yarn.scheduler.capacity.schedule-asynchronously.enable", async);
    conf.setBoolean(BatchPlanner.ENABLED, batched);
    conf.setLong(BatchPlanner.INTERVAL_MS, 20);
    conf.setLong(BatchPlanner.DEADLINE_MS, 10_000); // generous: the test machine is loaded; timing is not tested
    conf.setLong(BatchPlanner.PLAN_MAX_AGE_MS, 60_000);
    // the tests heartbeat every ~30 ms, not every second: a node heartbeats several times while its batch is out
    conf.setInt(BatchPlanner.PLAN_MAX_HEARTBEATS, 1000);
    return conf;
  }

  private static YarnConfiguration withEngine(YarnConfiguration conf, String address) {
    conf.set(RlScheduler.ENGINE_ADDRESS, address);
    conf.setLong(RlScheduler.DEADLINE_MS, 5000);
    conf.setLong(RlScheduler.BREAKER_OPEN_MS, 500);
    return conf;
  }

  private static RlSchedulerMetrics metrics(MockCluster c) {
    return assertInstanceOf(RlCapacityScheduler.class, c.rm.getResourceScheduler()).getRlMetrics();
  }

  private static void handshake(MockCluster c) throws InterruptedException {
    RlSchedulerMetrics m = metrics(c);
    MockCluster.waitFor(() -> "OK".equals(m.getHandshakeState()), "handshake, have " + m);
  }

  @Test
  void asynchronousSchedulingWithARealEngineInBatches() throws Exception {
    Path work = Path.of("target", "batched-capacity-test").toAbsolutePath();
    Files.createDirectories(work);
    try (EngineProcess engine = new EngineProcess("fifo", work.resolve("engine.log"))) {
      engine.start();
      try (MockCluster c = new MockCluster(conf(engine.address(), true, true), 4, 8192, 8)) {
        RlSchedulerMetrics m = metrics(c);
        handshake(c);
        MockAM am = c.startApp("analytics", "alice");
        MockCluster.ask(am, 12, 1024);
        List<List<Container>> got = c.run(List.of(am), 12);
        assertEquals(12, got.get(0).size(), m.toString());
        assertEquals(13, m.getEngineContainers() + m.getNativeContainers(), m.toString()); // and the AM
        assertTrue(m.getEngineContainers() >= 1, m.toString());
        if (m.getFallbacks() == 0) { // a loaded machine may miss a deadline now and then: counted, never lost
          assertEquals(13, m.getEngineContainers(), m.toString());
        }
        assertEquals("ON", m.getBatchState(), m.toString());
        assertTrue(m.getBatches() > 0, m.toString());
        assertTrue(engine.metric("yarnrl_batch_nodes_count") > 0, "the engine answered batches");
        MockCluster.waitFor(() -> m.getAsksInFlight() == 0, "no ask in flight, have " + m);
      }
    }
  }

  /** RlCapacityScheduler behind a busy event queue: every NODE_UPDATE, regular or re-dispatched, costs 400 ms. */
  public static class SlowNodeUpdates extends RlCapacityScheduler {
    @Override
    public void handle(org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.SchedulerEvent event) {
      if (event.getType()
          == org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.SchedulerEventType.NODE_UPDATE) {
        try {
          Thread.sleep(BatchedPathTest.SLOW_UPDATE_MS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      super.handle(event);
    }
  }

  /**
   * Issue 24's 10,000-node run placed nothing with asynchronous scheduling on: each answer came back through a
   * second node update at the back of the RM's event queue, seconds later, and fell back as stale; meanwhile the node
   * was held for the engine queue (HOLD) and, after the fallback, CapacityScheduler's threads had it only until the
   * node's next heartbeat, queued right behind, held it again. Now the answer becomes the node's plan as it arrives
   * (no second node update, a plan's age counted in heartbeats): every container placed, by the engine's plans.
   */
  @Test
  void asynchronousSchedulingPlacesBehindABusyEventQueue() throws Exception {
    Path work = Path.of("target", "batched-capacity-test").toAbsolutePath();
    Files.createDirectories(work);
    try (EngineProcess engine = new EngineProcess("fifo", work.resolve("slow-queue.log"))) {
      engine.start();
      YarnConfiguration conf = conf(engine.address(), true, true);
      conf.set(YarnConfiguration.RM_SCHEDULER, SlowNodeUpdates.class.getName());
      conf.unset(BatchPlanner.PLAN_MAX_AGE_MS); // the defaults
      conf.unset(BatchPlanner.PLAN_MAX_HEARTBEATS);
      try (MockCluster c = new MockCluster(conf, 4, 8192, 8)) {
        RlSchedulerMetrics m = metrics(c);
        handshake(c);
        MockAM am = c.startApp("analytics", "alice");
        MockCluster.ask(am, 12, 1024);
        List<List<Container>> got = c.run(List.of(am), 12);
        assertEquals(12, got.get(0).size(), m.toString());
        assertEquals(13, m.getEngineContainers() + m.getNativeContainers(), m.toString()); // and the AM
        assertEquals(0, m.getFallbacksStalePlan(), m.toString());
        assertEquals(0, m.getAnswerRedispatches(), "no second node update per answer: " + m);
        if (m.getFallbacks() == 0) {
          assertEquals(13, m.getEngineContainers(), m.toString());
        }
        assertTrue(m.getEngineContainers() >= 10, m.toString());
      }
    }
  }

  /** A scripted engine that places everything on h3; default's app is placed by CapacityScheduler alone. */
  private static void onlyOnH3(boolean async, boolean batched) throws Exception {
    YarnConfiguration conf = conf(null, async, batched);
    // this engine says "wait" on three nodes of four for ever; the test is about where plans go, not the wait cap
    // (CapacityScheduler's rule gives 4 heartbeats here, and the sweep applies h3's plan a few ms after its answer)
    conf.setInt(WaitCap.MAX_HEARTBEATS, 1000);
    try (FakeEngine fake = new FakeEngine("yarnrl.v1", req -> FakeEngine.onlyOn("h3", req),
        batch -> FakeEngine.perNode(batch, req -> FakeEngine.onlyOn("h3", req)));
         MockCluster c = new MockCluster(withEngine(conf, fake.address()), 4, 8192, 8)) {
      RlSchedulerMetrics m = metrics(c);
      handshake(c);
      MockAM analytics = c.startApp("analytics", "alice");
      MockAM other = c.startApp("default", "bob");
      // analytics first: h3 (8 GB) holds its AM, its 6 and at most default's AM; default's 6 come after (in the
      // asynchronous sweep CapacityScheduler would otherwise fill h3 with them while analytics waits for h3)
      MockCluster.ask(analytics, 6, 1024);
      List<List<Container>> got = c.run(List.of(analytics, other), 6);
      assertEquals(Collections.nCopies(6, "h3"), RlCapacitySchedulerTest.hosts(got.get(0)), m.toString());
      MockCluster.ask(other, 6, 1024);
      assertEquals(6, c.run(List.of(other), 6).get(0).size(), m.toString());
      assertEquals(0, m.getFallbacks(), m.toString());
      assertEquals(7, m.getEngineContainers(), m.toString()); // analytics' 6 and its AM
      assertEquals(7, m.getNativeContainers(), m.toString()); // default's 6 and its AM
      if (batched) {
        assertEquals(0, fake.scheduleCalls.get(), m.toString());
        assertTrue(fake.batchCalls.get() > 0, m.toString());
      } else {
        assertEquals(0, fake.batchCalls.get(), m.toString());
      }
    }
  }

  @Test
  void asynchronousSchedulingAppliesBatchedPlans() throws Exception {
    onlyOnH3(true, true);
  }

  @Test
  void asynchronousSchedulingAppliesPerHeartbeatAnswers() throws Exception {
    onlyOnH3(true, false);
  }

  @Test
  void synchronousSchedulingAppliesBatchedPlans() throws Exception {
    onlyOnH3(false, true);
  }

  @Test
  void asynchronousSchedulingWithTheEngineDownIsCapacitySchedulerCounted() throws Exception {
    try (MockCluster c = new MockCluster(conf("127.0.0.1:" + EngineProcess.freePort(), true, true), 4, 8192, 8)) {
      RlSchedulerMetrics m = metrics(c);
      MockAM am = c.startApp("analytics", "alice");
      MockCluster.ask(am, 6, 1024);
      List<List<Container>> got = c.run(List.of(am), 6);
      assertEquals(6, got.get(0).size(), m.toString());
      assertEquals(0, m.getEngineContainers(), m.toString());
      assertEquals(7, m.getNativeContainers(), m.toString());
      assertTrue(m.getFallbacksUnavailable() > 0, m.toString());
    }
  }

  @Test
  void asynchronousSchedulingWithAnOverPromisingBatchIsCapacitySchedulerCounted() throws Exception {
    // every node of every batch is given the whole of every ask: invalid as a whole, nothing of it applied
    try (FakeEngine fake = new FakeEngine("yarnrl.v1", req -> FakeEngine.onlyOn("h3", req),
        batch -> FakeEngine.perNode(batch, req -> {
          ScheduleResponse.Builder b = ScheduleResponse.newBuilder().setRequestId(req.getRequestId());
          req.getAsksList().forEach(a -> b.addAssignments(
              Assignment.newBuilder().setAskId(a.getAskId()).setCount(a.getNumContainers())));
          return b.build();
        }))) {
      YarnConfiguration conf = conf(fake.address(), true, true);
      conf.setInt(BatchPlanner.MAX_NODES, 2); // two nodes per batch: each batch promises one container twice
      conf.setLong(BatchPlanner.INTERVAL_MS, 5000);
      conf.setLong(RlScheduler.BREAKER_OPEN_MS, 200);
      try (MockCluster c = new MockCluster(conf, 2, 8192, 8)) {
        RlSchedulerMetrics m = metrics(c);
        handshake(c);
        MockAM am = c.startApp("analytics", "alice");
        MockCluster.ask(am, 6, 1024);
        List<List<Container>> got = c.run(List.of(am), 6);
        assertEquals(6, got.get(0).size(), m.toString());
        assertEquals(0, m.getEngineContainers(), m.toString());
        assertEquals(7, m.getNativeContainers(), m.toString()); // exactly what was asked: nothing over-allocated
        assertTrue(m.getFallbacksInvalidAnswer() > 0, m.toString());
      }
    }
  }
}
