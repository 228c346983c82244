package org.yarnrl.yarn;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.resourcemanager.MockAM;
import org.apache.hadoop.yarn.server.resourcemanager.MockNM;
import org.apache.hadoop.yarn.server.resourcemanager.MockRM;
import org.apache.hadoop.yarn.server.resourcemanager.MockRMAppSubmissionData;
import org.apache.hadoop.yarn.server.resourcemanager.MockRMAppSubmitter;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.QueueMetrics;

/**
 * A real ResourceManager with its scheduler and simulated NodeManagers and ApplicationMasters in this JVM (Hadoop's
 * MockRM / MockNM / MockAM, as in TestCapacityScheduler), for the schedulers' unit tests: seconds, not minutes.
 * Heartbeats are driven by hand; the engine's answers arrive asynchronously, so every wait polls with a generous
 * limit (the CI machine is slow).
 */
final class MockCluster implements AutoCloseable {
  static final long WAIT_MS = 60_000;

  final MockRM rm;
  final List<MockNM> nodes = new ArrayList<>();

  MockCluster(YarnConfiguration conf, int nodeCount, int nodeMemoryMb, int nodeVcores) throws Exception {
    QueueMetrics.clearQueueMetrics();
    DefaultMetricsSystem.setMiniClusterMode(true);
    rm = new MockRM(conf);
    // MockRM turns the root logger to DEBUG; at thousands of events that is most of a test's time
    org.apache.log4j.LogManager.getRootLogger().setLevel(org.apache.log4j.Level.INFO);
    rm.start();
    for (int i = 1; i <= nodeCount; i++) {
      // container tokens resolve the node's host name
      org.apache.hadoop.net.NetUtils.addStaticResolution("h" + i, "127.0.0.1");
      nodes.add(rm.registerNode("h" + i + ":1234", nodeMemoryMb, nodeVcores));
    }
  }

  /** Submit an application to a queue and bring its AM up (its container placed like any other). */
  MockAM startApp(String queue, String user) throws Exception {
    RMApp app = MockRMAppSubmitter.submit(rm, MockRMAppSubmissionData.Builder.createWithMemory(1024, rm)
        .withQueue(queue).withUser(user).withAppName("app-" + queue)
        // not waiting for SCHEDULED: an engine answer arriving meanwhile may place the AM before the wait begins
        .withWaitForAppAcceptedState(false).build());
    // heartbeats until the AM container is placed somewhere (the engine may answer a moment later)
    long until = System.currentTimeMillis() + WAIT_MS;
    while (app.getCurrentAppAttempt() == null || app.getCurrentAppAttempt().getMasterContainer() == null) {
      if (System.currentTimeMillis() > until) {
        throw new AssertionError("the AM of " + app.getApplicationId() + " in " + queue + " was never placed");
      }
      heartbeatAll();
      Thread.sleep(20);
    }
    MockNM host = nodeOf(app.getCurrentAppAttempt().getMasterContainer());
    MockAM am = rm.sendAMLaunched(app.getCurrentAppAttempt().getAppAttemptId());
    am.registerAppAttempt();
    host.nodeHeartbeat(true);
    return am;
  }

  MockNM nodeOf(Container c) {
    for (MockNM nm : nodes) {
      if (nm.getNodeId().equals(c.getNodeId())) {
        return nm;
      }
    }
    throw new AssertionError("no node " + c.getNodeId());
  }

  void heartbeatAll() throws Exception {
    for (MockNM nm : nodes) {
      nm.nodeHeartbeat(true);
    }
  }

  /** Ask for containers ("*" only unless resource names are given) and return nothing yet. */
  static void ask(MockAM am, int count, int memoryMb, String... resourceNames) throws Exception {
    List<ResourceRequest> reqs = new ArrayList<>();
    if (resourceNames.length == 0) {
      reqs.addAll(am.createReq(new String[] {"*"}, memoryMb, 1, count, null, -1));
    } else {
      reqs.addAll(am.createReq(resourceNames, memoryMb, 1, count, null, -1));
    }
    am.allocate(reqs, new ArrayList<ContainerId>());
  }

  /**
   * Heartbeat every node and pull the AMs' new containers until they got {@code expected} in all, or nothing more
   * is allocated for 10 s; returns the containers each AM got, in the AMs' order.
   */
  List<List<Container>> run(List<MockAM> ams, int expected) throws Exception {
    List<List<Container>> got = new ArrayList<>();
    for (int i = 0; i < ams.size(); i++) {
      got.add(new ArrayList<>());
    }
    long until = System.currentTimeMillis() + WAIT_MS;
    long lastChange = System.currentTimeMillis();
    int total = 0;
    while (total < expected && System.currentTimeMillis() < until
        && System.currentTimeMillis() - lastChange < 10_000) {
      heartbeatAll();
      Thread.sleep(30);
      for (int i = 0; i < ams.size(); i++) {
        List<Container> fresh = ams.get(i).schedule().getAllocatedContainers();
        if (!fresh.isEmpty()) {
          got.get(i).addAll(fresh);
          total += fresh.size();
          lastChange = System.currentTimeMillis();
        }
      }
    }
    return got;
  }

  static void waitFor(BooleanSupplier condition, String what) throws InterruptedException {
    long until = System.currentTimeMillis() + WAIT_MS;
    while (!condition.getAsBoolean()) {
      if (System.currentTimeMillis() > until) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(20);
    }
  }

  @Override
  public void close() {
    rm.stop();
  }
}
