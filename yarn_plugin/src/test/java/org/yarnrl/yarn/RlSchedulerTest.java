package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.resourcemanager.MockAM;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.yarnrl.v1.Assignment;
import org.yarnrl.v1.ScheduleResponse;

/**
 * RlScheduler (FIFO) in a real ResourceManager (MockRM, 4 simulated 8 GB nodes), TestFifoScheduler style: the
 * engine path with a real `policy-engine serve`, and validation, fallback and the version handshake with a
 * scripted engine. Seconds, beside the minute-long mini-cluster ITs.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RlSchedulerTest {
  private EngineProcess engine;

  @BeforeAll
  void startEngine() throws Exception {
    Path work = Path.of("target", "rlscheduler-test").toAbsolutePath();
    Files.createDirectories(work);
    engine = new EngineProcess("fifo", work.resolve("engine.log"));
    engine.start();
  }

  @AfterAll
  void stopEngine() throws Exception {
    if (engine != null) {
      engine.close();
    }
  }

  static YarnConfiguration conf(String engineAddress) {
    YarnConfiguration conf = new YarnConfiguration();
    conf.set(YarnConfiguration.RM_SCHEDULER, RlScheduler.class.getName());
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 1024);
    if (engineAddress != null) {
      conf.set(RlScheduler.ENGINE_ADDRESS, engineAddress);
      conf.setLong(RlScheduler.DEADLINE_MS, 5000); // generous: the test machine is loaded; timing is not tested
      conf.setLong(RlScheduler.BREAKER_OPEN_MS, 500);
    }
    return conf;
  }

  private static RlSchedulerMetrics metrics(MockCluster c) {
    return assertInstanceOf(RlScheduler.class, c.rm.getResourceScheduler()).getRlMetrics();
  }

  @Test
  void theEnginePlacesEveryContainerWithoutAHeartbeatWaitingForIt() throws Exception {
    try (MockCluster c = new MockCluster(conf(engine.address()), 4, 8192, 8)) {
      RlSchedulerMetrics m = metrics(c);
      MockCluster.waitFor(() -> "OK".equals(m.getHandshakeState()), "handshake, have " + m);
      MockAM am = c.startApp("default", "alice");
      MockCluster.ask(am, 12, 1024);
      List<List<Container>> got = c.run(List.of(am), 12);
      assertEquals(12, got.get(0).size(), m.toString());
      // 12 + the AM; a real engine on a loaded machine may miss the (5 s) deadline now and then: that container is
      // placed natively and counted as a fallback, never lost
      assertEquals(13, m.getEngineContainers() + m.getNativeContainers(), m.toString());
      assertTrue(m.getEngineContainers() >= 1, m.toString());
      if (m.getFallbacks() == 0) {
        assertEquals(13, m.getEngineContainers(), m.toString());
      }
      MockCluster.waitFor(() -> m.getAsksInFlight() == 0, "no ask in flight, have " + m);
      assertTrue(engine.metric("yarnrl_decisions_total", "rpc=\"schedule\"") >= m.getEngineDecisions());
    }
  }

  @Test
  void theEngineDecidesWhere() throws Exception {
    try (FakeEngine fake = new FakeEngine("yarnrl.v1", req -> FakeEngine.onlyOn("h2", req));
         MockCluster c = new MockCluster(conf(fake.address()), 4, 8192, 8)) {
      RlSchedulerMetrics m = metrics(c);
      MockCluster.waitFor(() -> "OK".equals(m.getHandshakeState()), "handshake, have " + m);
      MockAM am = c.startApp("default", "alice");
      MockCluster.ask(am, 5, 1024);
      List<List<Container>> got = c.run(List.of(am), 5);
      assertEquals(5, got.get(0).size(), m.toString());
      assertEquals(List.of("h2", "h2", "h2", "h2", "h2"), RlCapacitySchedulerTest.hosts(got.get(0)));
      assertEquals(0, m.getFallbacks(), m.toString());
    }
  }

  @Test
  void anAnswerForMoreThanIsPendingIsRefusedAndScheduledNatively() throws Exception {
    try (FakeEngine fake = new FakeEngine("yarnrl.v1", req -> {
      ScheduleResponse.Builder b = ScheduleResponse.newBuilder().setRequestId(req.getRequestId());
      req.getAsksList().forEach(a -> b.addAssignments(
          Assignment.newBuilder().setAskId(a.getAskId()).setCount(a.getNumContainers() + 1)));
      return b.build();
    });
         MockCluster c = new MockCluster(conf(fake.address()), 2, 8192, 8)) {
      RlSchedulerMetrics m = metrics(c);
      MockCluster.waitFor(() -> "OK".equals(m.getHandshakeState()), "handshake, have " + m);
      MockAM am = c.startApp("default", "alice");
      MockCluster.ask(am, 3, 1024);
      List<List<Container>> got = c.run(List.of(am), 3);
      assertEquals(3, got.get(0).size(), m.toString());
      assertTrue(m.getFallbacksInvalidAnswer() > 0, m.toString());
      assertEquals(0, m.getEngineContainers(), m.toString());
      assertEquals(4, m.getNativeContainers(), m.toString());
    }
  }

  @Test
  void anEngineSpeakingAnotherProtocolIsRefusedAndNeverAsked() throws Exception {
    try (FakeEngine fake = new FakeEngine("yarnrl.v0", req -> FakeEngine.onlyOn("h2", req));
         MockCluster c = new MockCluster(conf(fake.address()), 2, 8192, 8)) {
      RlSchedulerMetrics m = metrics(c);
      MockCluster.waitFor(() -> "REFUSED".equals(m.getHandshakeState()), "refusal, have " + m);
      MockAM am = c.startApp("default", "alice");
      MockCluster.ask(am, 3, 1024);
      List<List<Container>> got = c.run(List.of(am), 3);
      assertEquals(3, got.get(0).size(), m.toString());
      assertEquals(0, fake.scheduleCalls.get());
      assertTrue(m.getFallbacksVersionMismatch() > 0, m.toString());
      assertEquals(4, m.getNativeContainers(), m.toString());
    }
  }

  @Test
  void anUnreachableEngineMeansFifo() throws Exception {
    try (MockCluster c = new MockCluster(conf("127.0.0.1:" + EngineProcess.freePort()), 2, 8192, 8)) {
      RlSchedulerMetrics m = metrics(c);
      MockAM am = c.startApp("default", "alice");
      MockCluster.ask(am, 3, 1024);
      List<List<Container>> got = c.run(List.of(am), 3);
      assertEquals(3, got.get(0).size(), m.toString());
      assertEquals(4, m.getNativeContainers(), m.toString());
      assertTrue(m.getFallbacksUnavailable() > 0, m.toString());
    }
  }
}
