package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.resourcemanager.MockAM;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.AbstractYarnScheduler;
import org.apache.hadoop.yarn.util.resource.DominantResourceCalculator;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.yarnrl.v1.Assignment;
import org.yarnrl.v1.ResourceAsk;
import org.yarnrl.v1.ScheduleRequest;
import org.yarnrl.v1.ScheduleResponse;

/**
 * Issue 23, "the plugin never makes YARN worse", for both scheduler classes in a real ResourceManager (MockRM):
 * YARN's resource calculator on the engine path, bounded waiting for an engine that only waits, queue isolation
 * while an engine answer is out, and answers applied fresh to an ask resized while they were on their way.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NeverWorseTest {
  private static final String FIFO = "RlScheduler";
  private static final String CAPACITY = "RlCapacityScheduler";
  @RegisterExtension static final EngineProcess engine = EngineProcess.perTestClass("fifo", "never-worse-test");

  /** One scheduler class with 512 MB minimum allocations; RlCapacityScheduler with root.default on the engine. */
  static YarnConfiguration conf(String scheduler, String engineAddress) {
    YarnConfiguration conf = new YarnConfiguration();
    conf.set(YarnConfiguration.RM_SCHEDULER, "org.yarnrl.yarn." + scheduler);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 512);
    conf.set(RlScheduler.ENGINE_ADDRESS, engineAddress);
    conf.setLong(RlScheduler.DEADLINE_MS, 20_000); // generous: the test machine is loaded; timing is not tested
    conf.setLong(RlScheduler.BREAKER_OPEN_MS, 500);
    conf.setBoolean("yarn.scheduler.capacity.schedule-asynchronously.enable", false);
    conf.set("yarn.scheduler.capacity.root.queues", "default");
    conf.set("yarn.scheduler.capacity.root.default.capacity", "100");
    conf.set("yarn.scheduler.capacity.root.default.user-limit-factor", "1");
    conf.set("yarn.scheduler.capacity.maximum-am-resource-percent", "0.5");
    conf.set("yarn.scheduler.capacity.root.default." + RlCapacityScheduler.QUEUE_ENGINE_ENABLED, "true");
    return conf;
  }

  private static RlSchedulerMetrics metrics(MockCluster c) {
    Object s = c.rm.getResourceScheduler();
    return s instanceof RlScheduler ? ((RlScheduler) s).getRlMetrics() : ((RlCapacityScheduler) s).getRlMetrics();
  }

  private static void awaitHandshake(MockCluster c) throws InterruptedException {
    RlSchedulerMetrics m = metrics(c);
    MockCluster.waitFor(() -> "OK".equals(m.getHandshakeState()), "handshake OK, have " + m);
  }

  private static Map<NodeId, Integer> perNode(List<Container> containers) {
    Map<NodeId, Integer> n = new HashMap<>();
    for (Container c : containers) {
      n.merge(c.getNodeId(), 1, Integer::sum);
    }
    return n;
  }

  // ---------------------------------------------------------------------------------------- the calculator

  /**
   * Hadoop's default NodeManager (4,096 MB, 4 vcores) and 512 MB maps: YARN's DefaultResourceCalculator (FIFO
   * always, CapacityScheduler by default) counts memory only, so the engine path fills both nodes, 8 containers of
   * 512 MB each (the AM's 1,024 MB included), as native scheduling does; before issue 23 it stopped at 4 vcores.
   */
  @ParameterizedTest
  @ValueSource(strings = {FIFO, CAPACITY})
  void theEnginePlacesAsManyContainersPerNodeAsYarnsDefaultCalculator(String scheduler) throws Exception {
    try (MockCluster c = new MockCluster(conf(scheduler, engine.address()), 2, 4096, 4)) {
      awaitHandshake(c);
      RlSchedulerMetrics m = metrics(c);
      assertEquals("DefaultResourceCalculator", m.getResourceCalculator());
      MockAM am = c.startApp("default", "alice");
      MockCluster.ask(am, 14, 512); // 2 x 4,096 MB = the 1,024 MB AM + 14 x 512 MB
      List<Container> got = c.run(List.of(am), 14).get(0);
      assertEquals(14, got.size(), "containers placed, " + m);
      assertEquals(0, m.getFallbacks(), m.toString());
      assertEquals(0, m.getNativeContainers(), m.toString()); // the engine placed every one
      // both nodes full by memory: the AM's node 1 + 6, the other 8 containers, over the nodes' 4 vcores
      List<Integer> counts = new ArrayList<>();
      for (org.apache.hadoop.yarn.server.resourcemanager.MockNM n : c.nodes) {
        org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerNode sn =
            ((AbstractYarnScheduler<?, ?>) c.rm.getResourceScheduler()).getSchedulerNode(n.getNodeId());
        assertEquals(0, sn.getUnallocatedResource().getMemorySize(), perNode(got) + ", " + m);
        counts.add(sn.getNumContainers());
      }
      counts.sort(null);
      assertEquals(List.of(7, 8), counts, perNode(got) + ", " + m);
    }
  }

  /** DominantResourceCalculator (CapacityScheduler's option): vcores count, 4 containers per 4-vcore node. */
  @org.junit.jupiter.api.Test
  void withTheDominantCalculatorVcoresCount() throws Exception {
    YarnConfiguration conf = conf(CAPACITY, engine.address());
    conf.set("yarn.scheduler.capacity.resource-calculator", DominantResourceCalculator.class.getName());
    try (MockCluster c = new MockCluster(conf, 2, 4096, 4)) {
      awaitHandshake(c);
      RlSchedulerMetrics m = metrics(c);
      assertEquals("DominantResourceCalculator", m.getResourceCalculator());
      MockAM am = c.startApp("default", "alice");
      MockCluster.ask(am, 14, 512);
      List<Container> got = c.run(List.of(am), 14).get(0);
      assertEquals(7, got.size(), "8 vcores, the AM's one included: " + m); // as native CapacityScheduler
      assertEquals(0, m.getFallbacks(), m.toString());
      assertEquals(0, m.getNativeContainers(), m.toString());
    }
  }

  // ---------------------------------------------------------------------------------------- bounded waiting

  /**
   * An engine that answers "wait" to every heartbeat: every container is still placed (natively, once an ask has
   * waited its cap of heartbeats on nodes it fitted), no ask waits much past the cap, and the counter says why.
   */
  @ParameterizedTest
  @ValueSource(strings = {FIFO, CAPACITY})
  void anEngineThatOnlyWaitsCannotStarveAnAsk(String scheduler) throws Exception {
    try (FakeEngine waits = new FakeEngine("yarnrl.v1", NeverWorseTest::nothing)) {
      YarnConfiguration conf = conf(scheduler, waits.address());
      conf.setInt(WaitCap.MAX_HEARTBEATS, 6);
      try (MockCluster c = new MockCluster(conf, 2, 8192, 8)) {
        awaitHandshake(c);
        RlSchedulerMetrics m = metrics(c);
        MockAM am = c.startApp("default", "alice"); // the AM's own container waits its cap too
        MockCluster.ask(am, 6, 1024);
        List<Container> got = c.run(List.of(am), 6).get(0);
        assertEquals(6, got.size(), m.toString());
        assertTrue(m.getFallbacksWaitHeartbeats() >= 2, m.toString()); // the AM's ask and the maps'
        assertTrue(m.getAsksPastWaitCap() >= 2, m.toString());
        assertEquals(m.getFallbacksWaitHeartbeats() + m.getFallbacksWaitTime(), m.getFallbacks(), m.toString());
        assertEquals(0, m.getEngineContainers(), m.toString());
        assertTrue(waits.scheduleCalls.get() > 0);
        WaitCap cap = waitCap(c);
        // what waits now (nothing pending), and every wait ended once the ask got its containers
        assertEquals(0, cap.waiting(), m.toString());
      }
    }
  }

  private static WaitCap waitCap(MockCluster c) {
    Object s = c.rm.getResourceScheduler();
    return s instanceof RlScheduler ? ((RlScheduler) s).waitCap() : ((RlCapacityScheduler) s).waitCap();
  }

  /** The default cap is CapacityScheduler's: node-locality-delay (40) + the number of nodes. */
  @org.junit.jupiter.api.Test
  void theDefaultCapIsCapacitySchedulersLocalityDelay() {
    WaitCap cap = WaitCap.fromConf(new YarnConfiguration(), new YarnConfiguration(), new RlSchedulerMetrics());
    assertEquals(40 + 4, cap.heartbeatCap(cap.schedulerLimit(), 4));
    YarnConfiguration cs = new YarnConfiguration();
    cs.setInt(WaitCap.NODE_LOCALITY_DELAY, 10);
    cs.setInt(WaitCap.RACK_LOCALITY_ADDITIONAL_DELAY, 5);
    WaitCap set = WaitCap.fromConf(new YarnConfiguration(), cs, new RlSchedulerMetrics());
    assertEquals(15, set.heartbeatCap(set.schedulerLimit(), 400));
    assertEquals(WaitCap.DEFAULT_MAX_MS, set.schedulerLimit().ms);
  }

  /** A cap that makes no sense stops the RM, naming the key and the valid range. */
  @ParameterizedTest
  @ValueSource(strings = {FIFO, CAPACITY})
  void aBadCapStopsTheResourceManager(String scheduler) {
    for (String[] bad : new String[][] {{WaitCap.MAX_HEARTBEATS, "-2"}, {WaitCap.MAX_HEARTBEATS, "lots"},
        {WaitCap.MAX_MS, "0"}, {"yarn.scheduler.capacity.root.default.yarnrl.engine.wait.max-ms", "-1"},
        {"yarn.scheduler.capacity.root.default.yarnrl.engine.enabled", "yes"}}) {
      if (scheduler.equals(FIFO) && bad[0].startsWith("yarn.scheduler.capacity.")) {
        continue; // queue settings are RlCapacityScheduler's
      }
      YarnConfiguration conf = conf(scheduler, "127.0.0.1:1");
      conf.set(bad[0], bad[1]);
      Throwable e = org.junit.jupiter.api.Assertions.assertThrows(Throwable.class, () -> {
        try (MockCluster c = new MockCluster(conf, 1, 4096, 4)) {
          c.heartbeatAll();
        }
      }, bad[0] + "=" + bad[1]);
      String text = messages(e);
      assertTrue(text.contains(bad[0] + "=" + bad[1]) && text.contains("must be"), text);
    }
  }

  private static String messages(Throwable e) {
    StringBuilder b = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      b.append(t.getMessage()).append(" / ");
    }
    return b.toString();
  }

  /** A queue's own cap holds for it (and for its children), the scheduler's elsewhere. */
  @org.junit.jupiter.api.Test
  void aQueueCapOverridesTheSchedulers() throws Exception {
    YarnConfiguration conf = conf(CAPACITY, "127.0.0.1:1");
    conf.set("yarn.scheduler.capacity.root.queues", "a,b");
    conf.set("yarn.scheduler.capacity.root.a.capacity", "50");
    conf.set("yarn.scheduler.capacity.root.b.capacity", "50");
    conf.set("yarn.scheduler.capacity.root.a.queues", "a1");
    conf.set("yarn.scheduler.capacity.root.a.a1.capacity", "100");
    conf.setInt(WaitCap.MAX_HEARTBEATS, 30);
    conf.set("yarn.scheduler.capacity.root.a." + WaitCap.QUEUE_MAX_HEARTBEATS, "3");
    conf.set("yarn.scheduler.capacity.root.a." + WaitCap.QUEUE_MAX_MS, "500");
    try (MockCluster c = new MockCluster(conf, 1, 4096, 4)) {
      RlCapacityScheduler s = assertInstanceOf(RlCapacityScheduler.class, c.rm.getResourceScheduler());
      assertEquals(3, s.waitLimit("root.a.a1").heartbeats);
      assertEquals(500, s.waitLimit("root.a.a1").ms);
      assertEquals(30, s.waitLimit("root.b").heartbeats);
      assertEquals(WaitCap.DEFAULT_MAX_MS, s.waitLimit("root.b").ms);
    }
  }

  // ---------------------------------------------------------------------------------------- queue isolation

  /**
   * RlCapacityScheduler with root.analytics on the engine and root.default not: while every node's engine ask is
   * out (the engine does not answer), root.default still gets its AM and its containers on those nodes.
   */
  @org.junit.jupiter.api.Test
  void anotherQueueIsNotDelayedByTheEngineQueue() throws Exception {
    AtomicBoolean gate = new AtomicBoolean(false);
    CountDownLatch release = new CountDownLatch(1);
    try (FakeEngine gated = new FakeEngine("yarnrl.v1", gated(gate, release, NeverWorseTest::everything))) {
      YarnConfiguration conf = conf(CAPACITY, gated.address());
      conf.set("yarn.scheduler.capacity.root.queues", "analytics,default");
      conf.set("yarn.scheduler.capacity.root.analytics.capacity", "50");
      conf.set("yarn.scheduler.capacity.root.default.capacity", "50");
      conf.set("yarn.scheduler.capacity.root.analytics." + RlCapacityScheduler.QUEUE_ENGINE_ENABLED, "true");
      conf.set("yarn.scheduler.capacity.root.default." + RlCapacityScheduler.QUEUE_ENGINE_ENABLED, "false");
      try (MockCluster c = new MockCluster(conf, 2, 8192, 8)) {
        awaitHandshake(c);
        RlSchedulerMetrics m = metrics(c);
        MockAM analytics = c.startApp("analytics", "alice");
        gate.set(true); // from now on the engine holds every answer
        MockCluster.ask(analytics, 20, 1024);
        c.heartbeatAll(); // both nodes' asks go out and stay out
        MockCluster.waitFor(() -> m.getAsksInFlight() == 2, "both nodes held, have " + m);
        MockAM other = c.startApp("default", "bob");
        MockCluster.ask(other, 4, 1024);
        List<List<Container>> got = c.run(List.of(analytics, other), 4);
        assertEquals(4, got.get(1).size(), "root.default's containers while the engine holds root.analytics, " + m);
        assertEquals(0, got.get(0).size(), m.toString());
        assertEquals(2, m.getAsksInFlight(), m.toString());
        release.countDown();
      }
    }
  }

  // ---------------------------------------------------------------------------------------- fresh answers

  /**
   * The AM resizes its ask (1,024 MB to 2,048 MB) while the engine's answer for it is on its way: the answer's
   * containers are discarded (counted), not placed at the old size, and the resized ask is placed afterwards.
   */
  @ParameterizedTest
  @ValueSource(strings = {FIFO, CAPACITY})
  void anAskResizedWhileItsAnswerIsOutGetsNoContainerOfTheOldSize(String scheduler) throws Exception {
    AtomicBoolean gate = new AtomicBoolean(false);
    CountDownLatch release = new CountDownLatch(1);
    try (FakeEngine gated = new FakeEngine("yarnrl.v1", gated(gate, release, NeverWorseTest::everything))) {
      try (MockCluster c = new MockCluster(conf(scheduler, gated.address()), 1, 16384, 16)) {
        awaitHandshake(c);
        RlSchedulerMetrics m = metrics(c);
        MockAM am = c.startApp("default", "alice");
        gate.set(true);
        MockCluster.ask(am, 4, 1024);
        c.heartbeatAll();
        MockCluster.waitFor(() -> m.getAsksInFlight() == 1, "the ask out, have " + m);
        MockCluster.ask(am, 4, 2048); // the same scheduler key, a new size
        gate.set(false);
        release.countDown(); // the held answer: 4 containers of the ask as the engine saw it (1,024 MB)
        List<Container> got = c.run(List.of(am), 4).get(0);
        assertEquals(4, got.size(), m.toString());
        for (Container ct : got) {
          assertEquals(2048, ct.getResource().getMemorySize(), got + ", " + m);
        }
        assertEquals(4, m.getAnswerContainersDiscarded(), m.toString());
        assertEquals(0, m.getFallbacksInvalidAnswer(), m.toString()); // stale, not the engine's fault
      }
    }
  }

  /** The AM withdraws its ask while the answer is out: nothing is placed for it, the discard is counted. */
  @ParameterizedTest
  @ValueSource(strings = {FIFO, CAPACITY})
  void anAskWithdrawnWhileItsAnswerIsOutGetsNothing(String scheduler) throws Exception {
    AtomicBoolean gate = new AtomicBoolean(false);
    CountDownLatch release = new CountDownLatch(1);
    try (FakeEngine gated = new FakeEngine("yarnrl.v1", gated(gate, release, NeverWorseTest::everything))) {
      try (MockCluster c = new MockCluster(conf(scheduler, gated.address()), 1, 16384, 16)) {
        awaitHandshake(c);
        RlSchedulerMetrics m = metrics(c);
        MockAM am = c.startApp("default", "alice");
        gate.set(true);
        MockCluster.ask(am, 4, 1024);
        c.heartbeatAll();
        MockCluster.waitFor(() -> m.getAsksInFlight() == 1, "the ask out, have " + m);
        MockCluster.ask(am, 0, 1024); // withdrawn
        long before = m.getEngineDecisions();
        release.countDown();
        MockCluster.waitFor(() -> m.getEngineDecisions() > before || m.getFallbacks() > 0, "the answer, have " + m);
        c.heartbeatAll();
        assertTrue(am.schedule().getAllocatedContainers().isEmpty(), m.toString());
        assertEquals(4, m.getAnswerContainersDiscarded(), m.toString());
        assertEquals(0, m.getFallbacks(), m.toString());
      }
    }
  }

  // ---------------------------------------------------------------------------------------- the RM's own views

  /**
   * The RM web UI's Scheduler page answers 200 (it was HTTP 500 for RlScheduler: no scheduler page class) and
   * shows the queue and the engine's state; /ws/v1/cluster/scheduler answers 200 (it was 404 "Unknown scheduler
   * configured") and /ws/v1/cluster/scheduler/yarnrl gives the engine's state, for both scheduler classes, configured
   * as the deploy snippet does.
   */
  @ParameterizedTest
  @ValueSource(strings = {FIFO, CAPACITY})
  void theSchedulerPageAndTheRestEndpointAnswer(String scheduler) throws Exception {
    YarnConfiguration conf = conf(scheduler, engine.address());
    int port;
    try (java.net.ServerSocket free = new java.net.ServerSocket(0)) {
      port = free.getLocalPort();
    }
    conf.setBoolean("mockrm.webapp.enabled", true);
    conf.set(YarnConfiguration.RM_WEBAPP_ADDRESS, "127.0.0.1:" + port);
    conf.set("yarn.http.rmwebapp.scheduler.page.class", RlSchedulerPage.class.getName());
    conf.set("yarn.webapp.custom.webservice.class", RlWebServices.class.getName());
    try (MockCluster c = new MockCluster(conf, 2, 4096, 4)) {
      awaitHandshake(c);
      MockAM am = c.startApp("default", "alice");
      String base = "http://127.0.0.1:" + port;
      String page = get(base + "/cluster/scheduler", 200);
      String rest = get(base + "/ws/v1/cluster/scheduler", 200);
      String state = get(base + "/ws/v1/cluster/scheduler/yarnrl", 200);
      if (scheduler.equals(FIFO)) {
        assertTrue(page.contains("yarn-rl engine") && page.contains("breakerState") && page.contains("CLOSED")
            && page.contains(am.getApplicationAttemptId().getApplicationId().toString()), page);
        assertTrue(rest.contains("fifoScheduler") && rest.contains("\"numNodes\":2"), rest);
      } else {
        assertTrue(page.contains("Capacity Scheduler") || page.contains("root"), page);
        assertTrue(rest.contains("capacityScheduler"), rest);
      }
      assertTrue(state.contains("\"scheduler\":\"" + scheduler + "\"") && state.contains("\"breakerState\":\"CLOSED\"")
          && state.contains("\"enginePolicy\":\"fifo\"") && state.contains("\"waitHeartbeats\":0"), state);
    }
  }

  private static String get(String url, int status) throws Exception {
    java.net.HttpURLConnection conn = (java.net.HttpURLConnection) new java.net.URL(url).openConnection();
    conn.setRequestProperty("Accept", "application/json, text/html");
    conn.setConnectTimeout(10_000);
    conn.setReadTimeout(30_000);
    int code = conn.getResponseCode();
    java.io.InputStream in = code >= 400 ? conn.getErrorStream() : conn.getInputStream();
    String body = in == null ? "" : new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    assertEquals(status, code, url + ": " + body.substring(0, Math.min(2000, body.length())));
    return body;
  }

  // ---------------------------------------------------------------------------------------- scripted engines

  private static ScheduleResponse nothing(ScheduleRequest req) {
    return ScheduleResponse.newBuilder().setRequestId(req.getRequestId()).setDecisionId("d" + req.getRequestId())
        .build();
  }

  /** Every ask in full, in order, as far as the node's memory goes (the test nodes have vcores to spare). */
  private static ScheduleResponse everything(ScheduleRequest req) {
    ScheduleResponse.Builder b = ScheduleResponse.newBuilder().setRequestId(req.getRequestId())
        .setDecisionId("d" + req.getRequestId());
    long free = req.getNode().getUnallocated().getMemoryMb();
    for (ResourceAsk a : req.getAsksList()) {
      int n = (int) Math.min(a.getNumContainers(), free / a.getResource().getMemoryMb());
      if (n > 0) {
        b.addAssignments(Assignment.newBuilder().setAskId(a.getAskId()).setCount(n));
        free -= n * a.getResource().getMemoryMb();
      }
    }
    return b.build();
  }

  /** {@code answer}, but while the gate is closed a call waits for the release (at most a minute) first. */
  private static Function<ScheduleRequest, ScheduleResponse> gated(AtomicBoolean gate, CountDownLatch release,
      Function<ScheduleRequest, ScheduleResponse> answer) {
    return req -> {
      if (gate.get()) {
        try {
          release.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return answer.apply(req);
    };
  }

  @SuppressWarnings("unused")
  private static List<ResourceRequest> none() {
    return new ArrayList<>();
  }

  @SuppressWarnings("unused")
  private static List<ContainerId> noRelease() {
    return new ArrayList<>();
  }
}
