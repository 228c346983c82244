package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobCounter;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.junit.jupiter.api.Test;

/**
 * Shadow mode on real Hadoop, kept short: the shaded jar in a mini cluster's ResourceManager (4 hosts),
 * RlCapacityScheduler with root.analytics an engine queue in shadow mode
 * ({@code yarn.scheduler.capacity.root.analytics.yarnrl.engine.mode=shadow}), a real `policy-engine serve` writing a
 * decision log, one small MapReduce job in that queue. Every container is CapacityScheduler's, the engine answered
 * every heartbeat on which the queue had an ask pending, and the log holds the counterfactual comparison that
 * `emulator replay` reads, with the same numbers as the plugin's and the engine's counters.
 */
class ShadowModeIT {
  static {
    try {
      MiniHadoop.writeHostsFile();
    } catch (IOException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private static long sum(JsonNode counts) {
    long n = 0;
    for (JsonNode v : counts) {
      n += v.asLong();
    }
    return n;
  }

  @Test
  void aJobInAShadowQueueIsPlacedByYarnWhileTheEngineDecidesEveryHeartbeatBeside() throws Exception {
    Path work = Path.of("target", "it-shadow").toAbsolutePath();
    Files.createDirectories(work);
    Path decisionLog = work.resolve("decision-log");
    if (Files.exists(decisionLog)) {
      try (var files = Files.walk(decisionLog)) {
        files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
    RlSchedulerMetrics m;
    try (EngineProcess engine = new EngineProcess("delay", work.resolve("engine.log"))) {
      engine.start("--decision-log", decisionLog.toString());
      Configuration settings = new Configuration(false);
      settings.set(YarnConfiguration.RM_SCHEDULER, RlCapacityScheduler.class.getName());
      settings.set(RlScheduler.ENGINE_ADDRESS, engine.address());
      settings.setLong(RlScheduler.DEADLINE_MS, 2000); // loaded CI machine: a shadow ask is never waited for
      settings.set("yarn.scheduler.capacity.root.queues", "analytics,default");
      settings.set("yarn.scheduler.capacity.root.analytics.capacity", "50");
      settings.set("yarn.scheduler.capacity.root.default.capacity", "50");
      settings.set("yarn.scheduler.capacity.root.analytics.maximum-capacity", "100");
      settings.set("yarn.scheduler.capacity.root.analytics.user-limit-factor", "2");
      settings.set("yarn.scheduler.capacity.root.analytics.maximum-am-resource-percent", "0.5");
      settings.set("yarn.scheduler.capacity.root.analytics." + RlCapacityScheduler.QUEUE_ENGINE_ENABLED, "true");
      settings.set("yarn.scheduler.capacity.root.analytics." + RlCapacityScheduler.QUEUE_ENGINE_MODE, "shadow");
      try (MiniHadoop cluster = new MiniHadoop(work.resolve("cluster"), settings)) {
        RlCapacityScheduler cs = assertInstanceOf(RlCapacityScheduler.class, cluster.scheduler());
        m = cs.getRlMetrics();
        long until = System.currentTimeMillis() + 120_000;
        while (!"OK".equals(m.getHandshakeState()) && System.currentTimeMillis() < until) {
          Thread.sleep(100);
        }
        assertEquals("OK", m.getHandshakeState(), m.toString());
        assertEquals("root.analytics", m.getShadowQueues(), m.toString());

        Configuration jobConf = new Configuration(cluster.jobConf());
        jobConf.set(MRJobConfig.QUEUE_NAME, "analytics");
        Job job = Workloads.submitSleep(jobConf, 3, 100, 512);
        Workloads.Result r = Workloads.finish("sleep-shadow", job, System.nanoTime());
        assertTrue(r.succeeded, r.toString());
        assertEquals(3, r.counter(JobCounter.TOTAL_LAUNCHED_MAPS), r.toString());

        // every container YARN's: the AM, 3 maps, the reduce (more on a retried task), none from an engine answer
        assertEquals(0, m.getEngineContainers(), m.toString());
        assertEquals(0, m.getEngineDecisions(), m.toString());
        assertEquals(0, m.getFallbacks(), m.toString());
        assertTrue(m.getNativeContainers() >= 5, m.toString());
        // the engine was asked on every heartbeat on which the queue had an ask pending, and answered each
        assertTrue(m.getShadowAsks() >= 1, m.toString());
        assertEquals(0, m.getShadowAsksSkipped(), m.toString());
        MockCluster.waitFor(() -> m.getShadowAnswers() + m.getShadowFailures() == m.getShadowAsks(),
            "every shadow ask answered, have " + m);
        assertEquals(0, m.getShadowFailures(), m.toString());
        // each of the job's containers went to the engine with its heartbeat's shadow decision id
        MockCluster.waitFor(() -> m.getShadowNativeContainers() == m.getNativeContainers(),
            "every container reported, have " + m);
        assertEquals(m.getShadowNativeContainers(), m.getShadowAgreements() + m.getShadowDisagreements());
        MockCluster.waitFor(() -> {
          try {
            return engine.metric("yarnrl_shadow_decisions_total") == m.getShadowAnswers()
                && engine.metric("yarnrl_shadow_containers_total", "placed_by=\"yarn\"")
                    == m.getShadowNativeContainers();
          } catch (Exception e) {
            return false;
          }
        }, "the engine counted every shadow decision and YARN's containers, plugin " + m);
        assertEquals(m.getShadowEngineContainers(),
            engine.metric("yarnrl_shadow_containers_total", "placed_by=\"engine\""), m.toString());
        Thread.sleep(1500); // the plugin's report queue (200 ms) and the log's writer flush before the engine stops
      }
      engine.stop(); // SIGTERM: the decision log's files are closed
    }

    // the decision log: emulator replay reads the shadow comparison, the same numbers as the counters
    Process replay = new ProcessBuilder(EngineProcess.python(), "-m", "emulator.cli", "replay", "--log",
        decisionLog.toString(), "--policies", "fifo", "--json", "--no-progress")
        .redirectError(work.resolve("replay.err").toFile()).start();
    String out = new String(replay.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(replay.waitFor(120, TimeUnit.SECONDS), "emulator replay did not finish");
    assertEquals(0, replay.exitValue(), out + Files.readString(work.resolve("replay.err")));
    List<String> lines = out.lines().toList();
    JsonNode shadow = new ObjectMapper().readTree(lines.get(lines.size() - 1)).path("shadow");
    assertTrue(shadow.isObject(), "no shadow comparison in the log: " + out);
    assertEquals(m.getShadowAnswers(), shadow.path("decisions").asLong(), shadow + " vs " + m);
    assertEquals(m.getShadowEngineContainers(), sum(shadow.path("engine")), shadow + " vs " + m);
    assertEquals(m.getShadowNativeContainers(), sum(shadow.path("yarn")), shadow + " vs " + m);
    assertEquals(m.getShadowAgreements(), shadow.path("placements").path("agree").asLong(), shadow + " vs " + m);
    assertEquals(m.getShadowDisagreements(), shadow.path("placements").path("differ").asLong(), shadow + " vs " + m);
  }
}
