package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobCounter;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler;
import org.junit.jupiter.api.Test;

/**
 * RlCapacityScheduler end to end, kept short: the shaded jar inside a real ResourceManager (mini cluster, 4 hosts),
 * queues root.analytics (engine) and root.default at 50/50, a real `policy-engine serve`, one small MapReduce job
 * in the engine queue.
 */
class RlCapacitySchedulerIT {
  static {
    try {
      MiniHadoop.writeHostsFile();
    } catch (IOException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  @Test
  void aMapReduceJobInTheEngineQueueRunsThroughTheEngine() throws Exception {
    Path work = Path.of("target", "it-rlcapacity").toAbsolutePath();
    Files.createDirectories(work);
    try (EngineProcess engine = new EngineProcess("fifo", work.resolve("engine.log"))) {
      engine.start();
      Configuration settings = new Configuration(false);
      settings.set(YarnConfiguration.RM_SCHEDULER, RlCapacityScheduler.class.getName());
      settings.set(RlScheduler.ENGINE_ADDRESS, engine.address());
      settings.setLong(RlScheduler.DEADLINE_MS, 200); // loaded CI machine; timing is not what this tests
      settings.set("yarn.scheduler.capacity.root.queues", "analytics,default");
      settings.set("yarn.scheduler.capacity.root.analytics.capacity", "50");
      settings.set("yarn.scheduler.capacity.root.default.capacity", "50");
      settings.set("yarn.scheduler.capacity.root.analytics.maximum-capacity", "100");
      settings.set("yarn.scheduler.capacity.root.analytics.user-limit-factor", "2");
      settings.set("yarn.scheduler.capacity.root.analytics.maximum-am-resource-percent", "0.5");
      settings.set("yarn.scheduler.capacity.root.analytics." + RlCapacityScheduler.QUEUE_ENGINE_ENABLED, "true");
      try (MiniHadoop cluster = new MiniHadoop(work.resolve("cluster"), settings)) {
        RlCapacityScheduler cs = assertInstanceOf(RlCapacityScheduler.class, cluster.scheduler());
        RlSchedulerMetrics m = cs.getRlMetrics();
        long until = System.currentTimeMillis() + 120_000;
        while (!"OK".equals(m.getHandshakeState()) && System.currentTimeMillis() < until) {
          Thread.sleep(100);
        }
        assertEquals("OK", m.getHandshakeState(), m.toString());
        assertTrue(!cs.getConfiguration().getScheduleAynschronously(), "asynchronous scheduling left on");

        Configuration jobConf = new Configuration(cluster.jobConf());
        jobConf.set(MRJobConfig.QUEUE_NAME, "analytics");
        Job job = Workloads.submitSleep(jobConf, 2, 100, 512); // small: the cluster's boot is most of the time
        Workloads.Result r = Workloads.finish("sleep-analytics", job, System.nanoTime());
        assertTrue(r.succeeded, r.toString());
        assertEquals(2, r.counter(JobCounter.TOTAL_LAUNCHED_MAPS), r.toString());
        // the AM, the maps and the reduce of an engine queue: placed by the engine unless a call failed
        assertTrue(m.getEngineDecisions() > 0, m.toString());
        assertTrue(m.getEngineContainers() > 0, m.toString());
        assertTrue(m.getEngineContainers() + m.getNativeContainers() >= 4, m.toString()); // AM, 2 maps, reduce
        assertTrue(engine.metric("yarnrl_decisions_total", "rpc=\"schedule\"") >= m.getEngineDecisions());
        assertEquals("root.analytics",
            ((CapacityScheduler) cs).getQueue("analytics").getQueuePath());
      }
    }
  }
}
