package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.resourcemanager.MockRMAppSubmissionData;
import org.apache.hadoop.yarn.server.resourcemanager.MockRMAppSubmitter;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.AbstractLeafQueue;
import org.junit.jupiter.api.Test;
import org.yarnrl.v1.Assignment;
import org.yarnrl.v1.ResourceAsk;
import org.yarnrl.v1.ScheduleRequest;
import org.yarnrl.v1.ScheduleResponse;

/**
 * An engine that reorders jobs on RlCapacityScheduler: DeepRM's shape (one node of 20 units, 256 MB and 1 vcore each,
 * DominantResourceCalculator; each job one application whose only container is its AM) with a scripted engine that
 * starts the newest job that fits, as SJF or DeepRM-PG do when the newest job is the best.
 *
 * <p>CapacityScheduler activates an application only while the AMs of the activated ones (allocated or not) stay
 * within the queue's AM limit (maximum-am-resource-percent), and it never allocates to one it has not activated.
 * Three jobs of 10, 10 and 5 units on 20: with the limit at 100 % of the queue the third is not activated. Before the
 * fix the engine was asked about it, chose it, and nothing was placed (the benchmark's two-resource run: jobs waited
 * 5 minutes, to the wait cap, on an idle node); now the engine sees only the activated jobs, and with the limit
 * raised (DeepRM's deployment: every job is its own AM) it sees and starts the newest.
 */
class CapacityActivationTest {
  private static final int UNIT_MB = 256;
  private static final int UNITS = 20;

  static YarnConfiguration conf(String engineAddress, float maxAmResourcePercent) {
    YarnConfiguration conf = new YarnConfiguration();
    conf.set(YarnConfiguration.RM_SCHEDULER, RlCapacityScheduler.class.getName());
    conf.set("yarn.scheduler.capacity.resource-calculator",
        "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator");
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, UNIT_MB);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, UNITS * UNIT_MB);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES, UNITS);
    conf.set("yarn.scheduler.capacity.root.queues", "default");
    conf.set("yarn.scheduler.capacity.root.default.capacity", "100");
    conf.set("yarn.scheduler.capacity.root.default.maximum-capacity", "100");
    conf.setFloat("yarn.scheduler.capacity.maximum-am-resource-percent", maxAmResourcePercent);
    conf.set("yarn.scheduler.capacity.root.default." + RlCapacityScheduler.QUEUE_ENGINE_ENABLED, "true");
    conf.set(RlScheduler.ENGINE_ADDRESS, engineAddress);
    conf.setLong(RlScheduler.DEADLINE_MS, 5000); // the test machine is loaded; timing is not tested
    // a hold is bounded by time only, far beyond the test (as benchmarks/deeprm_real.py deploys DeepRM): a job
    // placed here is the engine's choice, not the wait cap's fallback
    conf.setInt(WaitCap.MAX_HEARTBEATS, WaitCap.MAX_HEARTBEATS_LIMIT);
    conf.setLong(WaitCap.MAX_MS, 600_000);
    return conf;
  }

  /** The newest job (highest application id) among those that fit the node, one container. */
  static ScheduleResponse newestThatFits(ScheduleRequest req) {
    ScheduleResponse.Builder b = ScheduleResponse.newBuilder().setRequestId(req.getRequestId())
        .setDecisionId("d" + req.getRequestId());
    ResourceAsk best = null;
    for (ResourceAsk a : req.getAsksList()) {
      boolean fits = a.getResource().getMemoryMb() <= req.getNode().getUnallocated().getMemoryMb()
          && a.getResource().getVcores() <= req.getNode().getUnallocated().getVcores();
      if (fits && a.getNumContainers() > 0
          && (best == null || a.getApplicationId().compareTo(best.getApplicationId()) > 0)) {
        best = a;
      }
    }
    if (best != null) {
      b.addAssignments(Assignment.newBuilder().setAskId(best.getAskId()).setCount(1));
    }
    return b.build();
  }

  private static RMApp submit(MockCluster c, int memoryUnits, String name) throws Exception {
    return submit(c, memoryUnits, 1, name);
  }

  private static RMApp submit(MockCluster c, int memoryUnits, int vcores, String name) throws Exception {
    return MockRMAppSubmitter.submit(c.rm, MockRMAppSubmissionData.Builder
        .createWithResource(Resource.newInstance((long) memoryUnits * UNIT_MB, vcores), c.rm)
        .withQueue("default").withUser("alice").withAppName(name).build());
  }

  /** Heartbeats until one of the apps has its (AM) container or {@code heartbeats} have passed; the app or null. */
  private static RMApp firstPlaced(MockCluster c, List<RMApp> apps, int heartbeats) throws Exception {
    for (int i = 0; i < heartbeats; i++) {
      c.heartbeatAll();
      Thread.sleep(100);
      for (RMApp app : apps) {
        if (app.getCurrentAppAttempt() != null && app.getCurrentAppAttempt().getMasterContainer() != null) {
          return app;
        }
      }
    }
    return null;
  }

  private static Set<String> appsAsked(List<ScheduleRequest> seen) {
    Set<String> ids = new TreeSet<>();
    for (ScheduleRequest r : seen) {
      for (ResourceAsk a : r.getAsksList()) {
        ids.add(a.getApplicationId());
      }
    }
    return ids;
  }

  @Test
  void theEngineIsAskedOnlyAboutJobsCapacitySchedulerHasActivated() throws Exception {
    List<ScheduleRequest> seen = new CopyOnWriteArrayList<>();
    try (FakeEngine fake = new FakeEngine("yarnrl.v1", req -> {
      seen.add(req);
      return newestThatFits(req);
    });
         MockCluster c = new MockCluster(conf(fake.address(), 1.0f), 1, UNITS * UNIT_MB, UNITS)) {
      RlCapacityScheduler cs = assertInstanceOf(RlCapacityScheduler.class, c.rm.getResourceScheduler());
      RMApp a = submit(c, 10, "a");
      RMApp b = submit(c, 10, "b");
      RMApp third = submit(c, 5, "c");
      AbstractLeafQueue queue = (AbstractLeafQueue) cs.getQueue("default");
      // the AM limit (100 % of 20 units) holds a and b: c waits for activation
      assertEquals(2, queue.getNumActiveApplications());
      assertEquals(1, queue.getNumPendingApplications());

      RMApp placed = firstPlaced(c, List.of(a, b, third), 50);
      RlSchedulerMetrics m = cs.getRlMetrics();
      assertNotNull(placed, "no job was placed in 50 heartbeats on an empty node; the engine was asked about "
          + appsAsked(seen) + ", " + m);
      assertEquals(b.getApplicationId(), placed.getApplicationId(), "the engine's choice among a and b");
      assertEquals(Set.of(a.getApplicationId().toString(), b.getApplicationId().toString()), appsAsked(seen),
          "the engine was asked about the activated jobs only");
      // b, then (on a later heartbeat, when the 10 units left fit it) maybe a: every container the engine's
      assertTrue(m.getEngineContainers() >= 1, m.toString());
      assertEquals(0, m.getNativeContainers(), m.toString());
      assertEquals(0, m.getFallbacks(), m.toString());
      assertNull(third.getCurrentAppAttempt().getMasterContainer(), "c is not activated: nobody places it");
    }
  }

  @Test
  void withTheAmLimitRaisedTheEngineChoosesAmongAllWaitingJobs() throws Exception {
    List<ScheduleRequest> seen = new CopyOnWriteArrayList<>();
    try (FakeEngine fake = new FakeEngine("yarnrl.v1", req -> {
      seen.add(req);
      return newestThatFits(req);
    });
         MockCluster c = new MockCluster(conf(fake.address(), 100f), 1, UNITS * UNIT_MB, UNITS)) {
      RlCapacityScheduler cs = assertInstanceOf(RlCapacityScheduler.class, c.rm.getResourceScheduler());
      List<RMApp> apps = new ArrayList<>();
      apps.add(submit(c, 10, "a"));
      apps.add(submit(c, 10, "b"));
      apps.add(submit(c, 5, "c"));
      assertEquals(3, ((AbstractLeafQueue) cs.getQueue("default")).getNumActiveApplications());

      RMApp placed = firstPlaced(c, apps, 50);
      RlSchedulerMetrics m = cs.getRlMetrics();
      assertNotNull(placed, "no job was placed; asked about " + appsAsked(seen) + ", " + m);
      assertEquals(apps.get(2).getApplicationId(), placed.getApplicationId(), "the newest job, the engine's choice");
      assertEquals(3, appsAsked(seen).size(), appsAsked(seen).toString());
      assertEquals(1, m.getEngineContainers(), m.toString());
      assertEquals(0, m.getFallbacks(), m.toString());
    }
  }

  /**
   * A job at the head of the queue that does not fit (10 vcores where 8 are free) does not block the engine's choice
   * behind it. CapacityScheduler checks each ask against the queue's headroom before asking the placement allocator,
   * and one too large for it ends the leaf queue's pass (QUEUE_SKIPPED): before the fix the engine's choice waited
   * until the head job fitted (the benchmark's second cause, after activation; every policy but strict FIFO met it).
   */
  @Test
  void aJobTooLargeForTheQueuesHeadroomDoesNotBlockTheEnginesChoiceBehindIt() throws Exception {
    List<ScheduleRequest> seen = new CopyOnWriteArrayList<>();
    try (FakeEngine fake = new FakeEngine("yarnrl.v1", req -> {
      seen.add(req);
      return newestThatFits(req);
    });
         MockCluster c = new MockCluster(conf(fake.address(), 100f), 1, UNITS * UNIT_MB, UNITS)) {
      RlCapacityScheduler cs = assertInstanceOf(RlCapacityScheduler.class, c.rm.getResourceScheduler());
      RMApp running = submit(c, 1, 12, "running");
      assertEquals(running, firstPlaced(c, List.of(running), 50), "the first job starts on the empty node");
      RMApp head = submit(c, 1, 10, "head");    // 10 vcores, 8 free: does not fit
      RMApp behind = submit(c, 6, 1, "behind"); // fits; the engine's choice
      RMApp placed = firstPlaced(c, List.of(head, behind), 50);
      RlSchedulerMetrics m = cs.getRlMetrics();
      assertNotNull(placed, "the engine's choice behind a job too large for the queue's headroom was not placed in "
          + "50 heartbeats; " + m);
      assertEquals(behind.getApplicationId(), placed.getApplicationId());
      assertNull(head.getCurrentAppAttempt().getMasterContainer(), "the head job does not fit");
      assertEquals(2, m.getEngineContainers(), m.toString());
      assertEquals(0, m.getNativeContainers(), m.toString());
      assertEquals(0, m.getFallbacks(), m.toString());
    }
  }
}
