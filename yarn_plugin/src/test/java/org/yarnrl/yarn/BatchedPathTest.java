package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.resourcemanager.MockAM;
import org.apache.hadoop.yarn.server.resourcemanager.MockNM;
import org.apache.hadoop.yarn.server.resourcemanager.MockRMAppSubmissionData;
import org.apache.hadoop.yarn.server.resourcemanager.MockRMAppSubmitter;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainer;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerNode;
import org.junit.jupiter.api.Test;
import org.yarnrl.v1.Assignment;
import org.yarnrl.v1.ScheduleBatchNodeResult;
import org.yarnrl.v1.ScheduleBatchRefusal;
import org.yarnrl.v1.ScheduleBatchResponse;
import org.yarnrl.v1.ScheduleResponse;

/**
 * The batched engine path of RlScheduler (BatchPlanner, yarn_plugin/README.md "Batched engine path") in a real
 * ResourceManager (MockRM, 4 simulated 8 GB nodes): the same placements as one Schedule call per heartbeat with a
 * real `policy-engine serve` (FIFO and Delay), one batch answer never over-promising an ask, and every fallback
 * reason scheduling natively and counted (scripted engines).
 */
class BatchedPathTest {

  static YarnConfiguration conf(String address, boolean batched) {
    YarnConfiguration conf = RlSchedulerTest.conf(address);
    conf.setBoolean(BatchPlanner.ENABLED, batched);
    conf.setLong(BatchPlanner.INTERVAL_MS, 200);
    conf.setLong(BatchPlanner.DEADLINE_MS, 10_000); // generous: the test machine is loaded; timing is not tested
    conf.setLong(BatchPlanner.PLAN_MAX_AGE_MS, 60_000);
    // the tests heartbeat every ~30 ms, not every second: a node heartbeats several times while its batch is out
    conf.setInt(BatchPlanner.PLAN_MAX_HEARTBEATS, 1000);
    conf.setInt(BatchPlanner.MAX_NODES, 4);
    return conf;
  }

  private static RlScheduler scheduler(MockCluster c) {
    return assertInstanceOf(RlScheduler.class, c.rm.getResourceScheduler());
  }

  /**
   * One round: every node heartbeats once, in order h1..h4. Per heartbeat: each node's answer is applied before the
   * next node heartbeats (as a slow heartbeat stream would have it). Batched: the four heartbeats are held and sent
   * as one batch (max-nodes 4), in the same order.
   */
  private static void round(MockCluster c, boolean batched) throws Exception {
    RlSchedulerMetrics m = scheduler(c).getRlMetrics();
    for (MockNM nm : c.nodes) {
      nm.nodeHeartbeat(true);
      c.rm.drainEvents();
      if (!batched) {
        MockCluster.waitFor(() -> m.getAsksInFlight() == 0, "the answer for " + nm.getNodeId() + ", have " + m);
        c.rm.drainEvents();
      }
    }
    MockCluster.waitFor(() -> m.getAsksInFlight() == 0, "the batch's answers, have " + m);
    c.rm.drainEvents();
  }

  /** Per node, in node order, the containers on it: "h1: 1024x2 2048x1" (AM included). */
  private static List<String> placements(MockCluster c) {
    List<String> out = new ArrayList<>();
    for (MockNM nm : c.nodes) {
      SchedulerNode node = c.rm.getResourceScheduler().getSchedulerNode(nm.getNodeId());
      Map<Long, Integer> bySize = new TreeMap<>();
      for (RMContainer rc : node.getCopiedListOfRunningContainers()) {
        bySize.merge(rc.getAllocatedResource().getMemorySize(), 1, Integer::sum);
      }
      out.add(nm.getNodeId().getHost() + ": " + bySize);
    }
    return out;
  }

  /**
   * An application whose AM is placed by rounds of heartbeats, then asks 10 x 2 GB on h1 or h3 (with their rack and
   * "*"; more than h1 and h3 hold) and 6 x 1 GB anywhere; the placements after every round, until nothing is pending
   * or 12 rounds passed.
   */
  private static List<List<String>> run(String address, boolean batched) throws Exception {
    List<List<String>> rounds = new ArrayList<>();
    try (MockCluster c = new MockCluster(conf(address, batched), 4, 8192, 8)) {
      RlSchedulerMetrics m = scheduler(c).getRlMetrics();
      MockCluster.waitFor(() -> "OK".equals(m.getHandshakeState()), "handshake, have " + m);
      RMApp app = MockRMAppSubmitter.submit(c.rm, MockRMAppSubmissionData.Builder.createWithMemory(1024, c.rm)
          .withQueue("default").withUser("alice").withWaitForAppAcceptedState(false).build());
      // the AM's ask pending before the first heartbeat, so that both paths see it from the same one
      MockCluster.waitFor(() -> app.getCurrentAppAttempt() != null, "an attempt of " + app.getApplicationId());
      c.rm.waitForState(app.getCurrentAppAttempt().getAppAttemptId(),
          org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptState.SCHEDULED);
      c.rm.drainEvents();
      for (int i = 0; i < 5 && (app.getCurrentAppAttempt() == null
          || app.getCurrentAppAttempt().getMasterContainer() == null); i++) {
        round(c, batched);
      }
      MockAM am = c.rm.sendAMLaunched(app.getCurrentAppAttempt().getAppAttemptId());
      am.registerAppAttempt();
      List<ResourceRequest> reqs = new ArrayList<>(am.createReq(new String[] {"h1", "h3"}, 2048, 1, 10, null, -1));
      reqs.addAll(am.createReq(new String[] {"*"}, 1024, 2, 6, null, -1));
      am.allocate(reqs, new ArrayList<>());
      rounds.add(placements(c));
      for (int r = 0; r < 12 && placed(c) < 17; r++) {
        round(c, batched);
        rounds.add(placements(c));
      }
      assertEquals(0, m.getFallbacks(), m.toString());
      assertEquals(17, m.getEngineContainers(), m.toString());
      if (batched) {
        assertEquals("ON", m.getBatchState(), m.toString());
        assertTrue(m.getBatches() > 0 && m.getBatchNodes() > m.getBatches(), "batches of several nodes: " + m);
        assertEquals(0, scheduler(c).enginePath().planner().promisedContainers(), m.toString());
      } else {
        assertEquals(0, m.getBatches(), m.toString());
      }
    }
    return rounds;
  }

  private static int placed(MockCluster c) {
    int n = 0;
    for (MockNM nm : c.nodes) {
      n += c.rm.getResourceScheduler().getSchedulerNode(nm.getNodeId()).getNumContainers();
    }
    return n;
  }

  private static void sameAsPerHeartbeat(String policy) throws Exception {
    Path work = Path.of("target", "batched-path-test").toAbsolutePath();
    Files.createDirectories(work);
    try (EngineProcess engine = new EngineProcess(policy, work.resolve(policy + ".log"))) {
      engine.start();
      List<List<String>> single = run(engine.address(), false);
      List<List<String>> batched = run(engine.address(), true);
      // equal round by round: the engine decides the batch's nodes in heartbeat order, each over what the nodes
      // before it were given, exactly as the per-heartbeat path's answers applied one after another
      System.out.println("BatchedPathTest " + policy + " rounds: " + single);
      assertEquals(single, batched, policy);
      assertTrue(single.size() >= 2, single.toString());
    }
  }

  @Test
  void fifoPlacesTheSameContainersBatchedAsPerHeartbeat() throws Exception {
    sameAsPerHeartbeat("fifo");
  }

  @Test
  void delayPlacesTheSameContainersBatchedAsPerHeartbeat() throws Exception {
    // Delay's missed opportunities count heartbeats: h2 and h4 are not asked-for hosts, so the 2 GB asks wait there
    sameAsPerHeartbeat("delay");
  }

  // ------------------------------------------------------------------ scripted engines: where and the fallbacks

  private static List<List<Container>> askAndRun(MockCluster c, int count) throws Exception {
    RlSchedulerMetrics m = scheduler(c).getRlMetrics();
    MockCluster.waitFor(() -> "OK".equals(m.getHandshakeState()), "handshake, have " + m);
    MockAM am = c.startApp("default", "alice");
    MockCluster.ask(am, count, 1024);
    return c.run(List.of(am), count);
  }

  @Test
  void batchesDecideWhereWithOneCallForSeveralHeartbeats() throws Exception {
    try (FakeEngine fake = new FakeEngine("yarnrl.v1", req -> FakeEngine.onlyOn("h2", req),
        batch -> FakeEngine.perNode(batch, req -> FakeEngine.onlyOn("h2", req)));
         MockCluster c = new MockCluster(conf(fake.address(), true), 4, 8192, 8)) {
      RlSchedulerMetrics m = scheduler(c).getRlMetrics();
      List<List<Container>> got = askAndRun(c, 5);
      assertEquals(List.of("h2", "h2", "h2", "h2", "h2"), RlCapacitySchedulerTest.hosts(got.get(0)));
      assertEquals(0, m.getFallbacks(), m.toString());
      assertEquals(0, fake.scheduleCalls.get(), "no Schedule call per heartbeat");
      assertTrue(fake.batchCalls.get() > 0 && m.getBatchNodes() > m.getBatches(), m.toString());
      assertEquals(6, m.getEngineContainers(), m.toString()); // and the AM
    }
  }

  @Test
  void anEngineWithoutScheduleBatchIsAskedPerHeartbeat() throws Exception {
    try (FakeEngine fake = new FakeEngine("yarnrl.v1", req -> FakeEngine.onlyOn("h2", req));
         MockCluster c = new MockCluster(conf(fake.address(), true), 4, 8192, 8)) {
      RlSchedulerMetrics m = scheduler(c).getRlMetrics();
      List<List<Container>> got = askAndRun(c, 5);
      assertEquals(List.of("h2", "h2", "h2", "h2", "h2"), RlCapacitySchedulerTest.hosts(got.get(0)));
      assertEquals("ENGINE_WITHOUT_BATCH", m.getBatchState(), m.toString());
      assertEquals(0, fake.batchCalls.get());
      assertTrue(fake.scheduleCalls.get() > 0);
      assertEquals(0, m.getFallbacks(), m.toString());
    }
  }

  /** A scripted batch engine: every container scheduled natively, the reason counted, nothing over-allocated. */
  private static RlSchedulerMetrics fallsBack(java.util.function.Function<org.yarnrl.v1.ScheduleBatchRequest,
      ScheduleBatchResponse> batch, org.apache.hadoop.conf.Configuration extra) throws Exception {
    try (FakeEngine fake = new FakeEngine("yarnrl.v1", req -> FakeEngine.onlyOn("h2", req), batch)) {
      YarnConfiguration conf = conf(fake.address(), true);
      // both nodes in every batch (a one-node batch cannot promise one container to two nodes)
      conf.setInt(BatchPlanner.MAX_NODES, 2);
      conf.setLong(BatchPlanner.INTERVAL_MS, 5000);
      if (extra != null) {
        extra.forEach(e -> conf.set(e.getKey(), e.getValue()));
      }
      try (MockCluster c = new MockCluster(conf, 2, 8192, 8)) {
        RlSchedulerMetrics m = scheduler(c).getRlMetrics();
        List<List<Container>> got = askAndRun(c, 6);
        assertEquals(6, got.get(0).size(), m.toString());
        assertEquals(0, m.getEngineContainers(), m.toString());
        assertEquals(7, m.getNativeContainers(), m.toString()); // 6 and the AM: exactly what was asked, no more
        assertTrue(fake.batchCalls.get() > 0, m.toString());
        assertEquals(0, fake.scheduleCalls.get(), "no per-heartbeat call while batches fail");
        MockCluster.waitFor(() -> m.getAsksInFlight() == 0, "no node held, have " + m);
        return m;
      }
    }
  }

  private static org.apache.hadoop.conf.Configuration settings(String... keyValues) {
    org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration(false);
    for (int i = 0; i < keyValues.length; i += 2) {
      conf.set(keyValues[i], keyValues[i + 1]);
    }
    return conf;
  }

  @Test
  void anEngineDownForBatchesMeansNativeCountedAsUnavailable() throws Exception {
    RlSchedulerMetrics m = fallsBack(batch -> {
      throw io.grpc.Status.UNAVAILABLE.withDescription("engine going away").asRuntimeException();
    }, settings(RlScheduler.BREAKER_OPEN_MS, "200"));
    assertTrue(m.getFallbacksUnavailable() > 0, m.toString());
  }

  @Test
  void aBatchPastItsDeadlineMeansNativeCountedAsTimeout() throws Exception {
    RlSchedulerMetrics m = fallsBack(batch -> {
      sleep(1500);
      return FakeEngine.perNode(batch, req -> FakeEngine.onlyOn("h2", req));
    }, settings(BatchPlanner.DEADLINE_MS, "300", RlScheduler.BREAKER_OPEN_MS, "200"));
    assertTrue(m.getFallbacksTimeout() > 0, m.toString());
  }

  @Test
  void aPlanOlderThanItsBoundIsScheduledNativelyCountedAsStale() throws Exception {
    RlSchedulerMetrics m = fallsBack(batch -> {
      sleep(400);
      return FakeEngine.perNode(batch, req -> FakeEngine.onlyOn("h2", req));
    }, settings(BatchPlanner.PLAN_MAX_AGE_MS, "100"));
    assertTrue(m.getFallbacksStalePlan() > 0, m.toString());
    assertEquals("CLOSED", m.getBreakerState(), "a stale plan is the RM's lateness, not an engine failure: " + m);
  }

  @Test
  void aPlanWhoseNodeHeartbeatedMeanwhileIsStaleWithoutAWallClockBound() throws Exception {
    // no wall-clock bound (the default): the batch takes 400 ms, the test heartbeats every node every ~30 ms, so each
    // node heartbeats more than once (yarnrl.engine.batch.plan-max-heartbeats, 1) while its plan is on its way
    RlSchedulerMetrics m = fallsBack(batch -> {
      sleep(400);
      return FakeEngine.perNode(batch, req -> FakeEngine.onlyOn("h2", req));
    }, settings(BatchPlanner.PLAN_MAX_AGE_MS, "0", BatchPlanner.PLAN_MAX_HEARTBEATS, "1"));
    assertTrue(m.getFallbacksStalePlan() > 0, m.toString());
    assertEquals(0, m.getFallbacksTimeout(), m.toString());
    assertEquals("CLOSED", m.getBreakerState(), m.toString());
  }

  /** Node updates that take {@value #SLOW_UPDATE_MS} ms each: an RM whose event queue is seconds behind. */
  static final long SLOW_UPDATE_MS = 400;

  /** RlScheduler behind a busy event queue (every NODE_UPDATE, regular or re-dispatched, costs SLOW_UPDATE_MS). */
  public static class SlowNodeUpdates extends RlScheduler {
    @Override
    public void handle(org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.SchedulerEvent event) {
      if (event.getType()
          == org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.SchedulerEventType.NODE_UPDATE) {
        sleep(SLOW_UPDATE_MS);
      }
      super.handle(event);
    }
  }

  /**
   * Issue 24's 10,000-node run: the batched path re-dispatched one more node update per answer, which waited behind
   * the RM's whole event queue (doubling it) and reached its node more than 1 s after the snapshot: every plan fell
   * back as stale. Now the answer is applied as it arrives (no second node update) and a plan's age is counted in its
   * node's heartbeats: with the queue 1-3 s behind, every container is the engine's, none stale.
   */
  @Test
  void answersAreAppliedAsTheyArriveNotBehindABusyEventQueue() throws Exception {
    Path work = Path.of("target", "batched-path-test").toAbsolutePath();
    Files.createDirectories(work);
    try (EngineProcess engine = new EngineProcess("fifo", work.resolve("slow-queue.log"))) {
      engine.start();
      YarnConfiguration conf = conf(engine.address(), true);
      conf.set(YarnConfiguration.RM_SCHEDULER, SlowNodeUpdates.class.getName());
      conf.unset(BatchPlanner.PLAN_MAX_AGE_MS); // the defaults
      conf.unset(BatchPlanner.PLAN_MAX_HEARTBEATS);
      conf.setLong(BatchPlanner.INTERVAL_MS, 20);
      try (MockCluster c = new MockCluster(conf, 4, 8192, 8)) {
        RlSchedulerMetrics m = scheduler(c).getRlMetrics();
        List<List<Container>> got = askAndRun(c, 12);
        assertEquals(12, got.get(0).size(), m.toString());
        assertEquals(13, m.getEngineContainers() + m.getNativeContainers(), m.toString()); // and the AM
        assertEquals(0, m.getFallbacksStalePlan(), m.toString());
        assertEquals(0, m.getAnswerRedispatches(), "no second node update per answer: " + m);
        assertTrue(m.getBatches() > 0, m.toString());
        if (m.getFallbacks() == 0) { // a loaded machine may miss a deadline now and then: counted, never lost
          assertEquals(13, m.getEngineContainers(), m.toString());
        }
        assertTrue(m.getEngineContainers() >= 10, m.toString());
      }
    }
  }

  @Test
  void aBatchGivingOneAskToEveryNodeIsInvalidAndNothingIsOverAllocated() throws Exception {
    // every node is given the whole of every ask: each node's answer alone would pass, the batch promises the same
    // containers to two nodes
    RlSchedulerMetrics m = fallsBack(batch -> FakeEngine.perNode(batch, req -> {
      ScheduleResponse.Builder b = ScheduleResponse.newBuilder().setRequestId(req.getRequestId());
      req.getAsksList().forEach(a -> b.addAssignments(
          Assignment.newBuilder().setAskId(a.getAskId()).setCount(a.getNumContainers())));
      return b.build();
    }), settings(RlScheduler.BREAKER_OPEN_MS, "200"));
    assertTrue(m.getFallbacksInvalidAnswer() > 0, m.toString());
  }

  @Test
  void aNodeTheEngineRefusesIsScheduledNativelyCountedAsRefused() throws Exception {
    RlSchedulerMetrics m = fallsBack(batch -> {
      ScheduleBatchResponse.Builder b = ScheduleBatchResponse.newBuilder().setBatchId(batch.getBatchId());
      for (int i = 0; i < batch.getNodesCount(); i++) {
        b.addResults(ScheduleBatchNodeResult.newBuilder().setNodeId(batch.getNodes(i).getNodeId())
            .setRequestId(batch.getRequestIds(i)).setRefusal(ScheduleBatchRefusal.newBuilder().setCode(3)
                .setMessage("nodes[" + i + "] (node_id '" + batch.getNodes(i).getNodeId() + "'): total: missing")));
      }
      return b.build();
    }, null);
    assertTrue(m.getFallbacksRefusedNode() > 0, m.toString());
    assertEquals("CLOSED", m.getBreakerState(), m.toString());
  }

  @Test
  void aBatchAnswerForOtherNodesIsInvalid() throws Exception {
    RlSchedulerMetrics m = fallsBack(batch -> ScheduleBatchResponse.newBuilder().setBatchId(batch.getBatchId())
        .addResults(ScheduleBatchNodeResult.newBuilder().setNodeId("elsewhere:1")).build(),
        settings(RlScheduler.BREAKER_OPEN_MS, "200"));
    assertTrue(m.getFallbacksInvalidAnswer() > 0, m.toString());
  }

  @Test
  void aBadBatchSettingStopsTheRmNamingTheKey() {
    YarnConfiguration conf = conf("127.0.0.1:1", true);
    conf.set(BatchPlanner.INTERVAL_MS, "0");
    Exception e = assertThrows(Exception.class, () -> new MockCluster(conf, 1, 8192, 8).close());
    StringBuilder messages = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      messages.append(t.getMessage()).append('\n');
    }
    assertTrue(messages.toString().contains(BatchPlanner.INTERVAL_MS + "=0 is not valid: it must be an integer in [1, "
        + "10000]"), messages.toString());
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
