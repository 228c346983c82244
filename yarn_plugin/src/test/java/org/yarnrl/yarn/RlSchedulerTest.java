package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.resourcemanager.MockAM;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.yarnrl.v1.Assignment;
import org.yarnrl.v1.ScheduleRequest;
import org.yarnrl.v1.ScheduleResponse;

/**
 * RlScheduler (FIFO) in a real ResourceManager (MockRM, 4 simulated 8 GB nodes), TestFifoScheduler style: the
 * engine path with a real `policy-engine serve`, and validation, fallback and the version handshake with a
 * scripted engine. Seconds, beside the minute-long mini-cluster ITs.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RlSchedulerTest {
  @RegisterExtension static final EngineProcess engine = EngineProcess.perTestClass("fifo", "rlscheduler-test");

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
  void anEngineErrorIsAFallbackCountedAsAnErrorThatNamesItsStatus() throws Exception {
    try (FakeEngine fake = new FakeEngine("yarnrl.v1", req -> {
      throw io.grpc.Status.INTERNAL.withDescription("schedule failed in the engine: KeyError: 'x'")
          .asRuntimeException();
    });
         MockCluster c = new MockCluster(conf(fake.address()), 2, 8192, 8)) {
      RlSchedulerMetrics m = metrics(c);
      MockCluster.waitFor(() -> "OK".equals(m.getHandshakeState()), "handshake, have " + m);
      assertEquals("", m.getLastCallError());
      MockAM am = c.startApp("default", "alice");
      MockCluster.ask(am, 3, 1024);
      List<List<Container>> got = c.run(List.of(am), 3);
      assertEquals(3, got.get(0).size(), m.toString());
      assertTrue(m.getFallbacksError() > 0, m.toString());
      assertEquals("INTERNAL: schedule failed in the engine: KeyError: 'x'", m.getLastCallError());
      assertEquals(0, m.getEngineContainers(), m.toString());
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

  /** Heartbeats every node until the condition holds (generous limit: the test machine is loaded). */
  private static void heartbeatUntil(MockCluster c, java.util.function.BooleanSupplier condition, String what)
      throws InterruptedException {
    MockCluster.waitFor(() -> {
      try {
        c.heartbeatAll();
      } catch (Exception e) {
        throw new AssertionError(e);
      }
      return condition.getAsBoolean();
    }, what);
  }

  private static ScheduleResponse nothing(ScheduleRequest req) {
    return ScheduleResponse.newBuilder().setRequestId(req.getRequestId()).build();
  }

  /** Each snapshot's asks carry only the node's own host and rack entries, and an unchanged ask is not rebuilt. */
  @Test
  void snapshotsCarryOnlyTheNodesEntriesAndReuseUnchangedAsks() throws Exception {
    AtomicBoolean place = new AtomicBoolean(true);
    List<ScheduleRequest> seen = new CopyOnWriteArrayList<>();
    try (FakeEngine fake = new FakeEngine("yarnrl.v1", req -> {
      seen.add(req);
      return place.get() ? FakeEngine.onlyOn("h2", req) : nothing(req);
    });
         MockCluster c = new MockCluster(conf(fake.address()), 4, 8192, 8)) {
      RlSchedulerMetrics m = metrics(c);
      MockCluster.waitFor(() -> "OK".equals(m.getHandshakeState()), "handshake, have " + m);
      MockAM am = c.startApp("default", "alice");
      place.set(false); // from now on the engine places nothing: the asks stay as they are
      // 3 containers on h1 or h3: YARN holds entries h1, h3, /default-rack and "*"
      MockCluster.ask(am, 3, 1024, "h1", "h3");
      heartbeatUntil(c, () -> seen.stream().anyMatch(r -> r.getAsksCount() == 1
          && r.getAsks(0).getLocalityNames() == 3), "a snapshot with the new ask, have " + m);
      long built = m.getSnapshotAsksBuilt();
      long snapshots = m.getSnapshots();
      seen.clear();
      heartbeatUntil(c, () -> m.getSnapshots() >= snapshots + 12 && seen.size() >= 12,
          "12 more snapshots, have " + m);
      assertEquals(built, m.getSnapshotAsksBuilt(), "an unchanged ask was rebuilt: " + m);
      assertEquals(0, m.getSnapshotAsksLeftOut(), m.toString());
      java.util.Set<String> hosts = new java.util.TreeSet<>();
      for (ScheduleRequest r : seen) {
        assertEquals(1, r.getAsksCount(), r.toString());
        org.yarnrl.v1.ResourceAsk a = r.getAsks(0);
        assertEquals(3, a.getNumContainers(), a.toString());
        assertEquals(3, a.getLocalityNames(), a.toString());
        String host = r.getNode().getHost();
        hosts.add(host);
        java.util.Map<String, Integer> entries = new java.util.TreeMap<>();
        a.getLocalityList().forEach(lr -> entries.put(lr.getResourceName(), lr.getNumContainers()));
        java.util.Map<String, Integer> expected = new java.util.TreeMap<>();
        expected.put("/default-rack", 3);
        if (host.equals("h1") || host.equals("h3")) {
          expected.put(host, 3);
        }
        assertEquals(expected, entries, "entries sent for " + host);
      }
      assertTrue(hosts.size() >= 2, "snapshots of one node only: " + hosts);
      // the AM asks for 4 instead: the ask changed, so it is built once more, then reused again
      MockCluster.ask(am, 4, 1024, "h1", "h3");
      heartbeatUntil(c, () -> seen.stream().anyMatch(r -> r.getAsks(0).getNumContainers() == 4),
          "a snapshot with the changed ask, have " + m);
      long changed = m.getSnapshots();
      heartbeatUntil(c, () -> m.getSnapshots() >= changed + 8, "8 more snapshots, have " + m);
      assertEquals(built + 1, m.getSnapshotAsksBuilt(), m.toString());
      place.set(true);
      List<List<Container>> got = c.run(List.of(am), 4);
      assertEquals(4, got.get(0).size(), m.toString());
      assertEquals(0, m.getFallbacks(), m.toString());
    }
  }

  /** yarnrl.engine.snapshot.max-asks bounds a snapshot; the asks left out are served once the first ones are. */
  @Test
  void aSnapshotCarriesAtMostMaxAsks() throws Exception {
    List<ScheduleRequest> seen = new CopyOnWriteArrayList<>();
    YarnConfiguration conf;
    try (FakeEngine fake = new FakeEngine("yarnrl.v1", req -> {
      seen.add(req);
      return FakeEngine.onlyOn("h2", req);
    })) {
      conf = conf(fake.address());
      conf.setInt(RlScheduler.SNAPSHOT_MAX_ASKS, 1);
      try (MockCluster c = new MockCluster(conf, 2, 8192, 8)) {
        RlSchedulerMetrics m = metrics(c);
        MockCluster.waitFor(() -> "OK".equals(m.getHandshakeState()), "handshake, have " + m);
        MockAM am = c.startApp("default", "alice");
        List<org.apache.hadoop.yarn.api.records.ResourceRequest> reqs = new java.util.ArrayList<>();
        reqs.addAll(am.createReq(new String[] {"*"}, 1024, 1, 2, null, -1));
        reqs.addAll(am.createReq(new String[] {"*"}, 1024, 2, 3, null, -1));
        am.allocate(reqs, new java.util.ArrayList<>());
        List<List<Container>> got = c.run(List.of(am), 5);
        assertEquals(5, got.get(0).size(), m.toString());
        assertEquals(List.of("h2", "h2", "h2", "h2", "h2"), RlCapacitySchedulerTest.hosts(got.get(0)));
        assertTrue(m.getSnapshotAsksLeftOut() > 0, m.toString());
        for (ScheduleRequest r : seen) {
          assertTrue(r.getAsksCount() <= 1, r.toString());
        }
        assertEquals(0, m.getFallbacks(), m.toString());
      }
    }
    conf.setInt(RlScheduler.SNAPSHOT_MAX_ASKS, 0);
    Exception e = assertThrows(Exception.class, () -> new MockCluster(conf, 1, 8192, 8).close());
    StringBuilder messages = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      messages.append(t.getMessage()).append('\n');
    }
    assertTrue(messages.toString().contains(RlScheduler.SNAPSHOT_MAX_ASKS + " must be in [1, 10000]"),
        messages.toString());
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
