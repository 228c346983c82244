package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.yarnrl.v1.ClusterSummary;
import org.yarnrl.v1.LocalityRequest;
import org.yarnrl.v1.NodeSnapshot;
import org.yarnrl.v1.Resource;
import org.yarnrl.v1.ResourceAsk;
import org.yarnrl.v1.ScheduleRequest;

/**
 * benchmarks/plugin_overhead: the same HiBench-tiny workload on the same mini cluster under the native FifoScheduler
 * and under RlScheduler with the engine's FIFO policy (node-update handling time and job run times), and the Java
 * client's Schedule decisions/s against a real engine. Runs only with -Dyarnrl.benchmark=true; writes
 * target/bench-plugin-overhead/result.json (benchmarks/plugin_overhead/run.py prints it).
 */
@EnabledIfSystemProperty(named = "yarnrl.benchmark", matches = "true")
class PluginOverheadBenchmarkIT {
  static {
    try {
      MiniHadoop.writeHostsFile();
    } catch (IOException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final Path work = Path.of("target", "bench-plugin-overhead").toAbsolutePath();

  @Test
  void pluginOverhead() throws Exception {
    Files.createDirectories(work);
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("benchmark", "plugin_overhead");
    try (EngineProcess engine = new EngineProcess("fifo", work.resolve("engine.log"))) {
      engine.start();
      result.put("client", clientDecisionRate(engine, Integer.getInteger("yarnrl.bench.client-seconds", 10)));

      Configuration nativeFifo = new Configuration(false);
      nativeFifo.set(YarnConfiguration.RM_SCHEDULER, NodeUpdateTimer.TimedFifoScheduler.class.getName());
      result.put("native_fifo", workload("native", nativeFifo));

      Configuration plugin = new Configuration(false);
      plugin.set(YarnConfiguration.RM_SCHEDULER, NodeUpdateTimer.TimedRlScheduler.class.getName());
      plugin.set(RlScheduler.ENGINE_ADDRESS, engine.address());
      result.put("plugin_fifo", workload("plugin", plugin));
    }
    @SuppressWarnings("unchecked")
    Map<String, Object> nat = (Map<String, Object>) result.get("native_fifo");
    @SuppressWarnings("unchecked")
    Map<String, Object> plug = (Map<String, Object>) result.get("plugin_fifo");
    result.put("job_time_ratio", (double) plug.get("total_job_seconds") / (double) nat.get("total_job_seconds"));
    Map<?, ?> plugUpdates = (Map<?, ?>) plug.get("node_update");
    Map<?, ?> natUpdates = (Map<?, ?>) nat.get("node_update");
    result.put("node_update_mean_ratio", (double) plugUpdates.get("mean_us") / (double) natUpdates.get("mean_us"));
    result.put("allocating_node_update_mean_ratio",
        (double) ((Map<?, ?>) plugUpdates.get("allocating")).get("mean_us")
            / (double) ((Map<?, ?>) natUpdates.get("allocating")).get("mean_us"));
    Files.writeString(work.resolve("result.json"), Json.write(result), StandardCharsets.UTF_8);
    System.out.println(Json.write(result));
  }

  private Map<String, Object> workload(String name, Configuration scheduler) throws Exception {
    Map<String, Object> out = new LinkedHashMap<>();
    try (MiniHadoop cluster = new MiniHadoop(work.resolve("cluster-" + name), scheduler)) {
      NodeUpdateTimer.reset();
      org.apache.hadoop.fs.Path text = new org.apache.hadoop.fs.Path("/hibench/wordcount/input");
      Workloads.Result[] jobs = {
          Workloads.randomTextWriter(cluster.jobConf(), text),
          Workloads.wordCount(cluster.jobConf(), text, new org.apache.hadoop.fs.Path("/hibench/wordcount/out"), null),
          Workloads.teraGen(cluster.jobConf(), new org.apache.hadoop.fs.Path("/hibench/terasort/input")),
          Workloads.teraSort(cluster.jobConf(), new org.apache.hadoop.fs.Path("/hibench/terasort/input"),
              new org.apache.hadoop.fs.Path("/hibench/terasort/output")),
      };
      double total = 0;
      for (Workloads.Result r : jobs) {
        assertTrue(r.succeeded, r.toString());
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("seconds", r.seconds);
        m.putAll(r.counters);
        out.put(r.name, m);
        total += r.seconds;
      }
      out.put("total_job_seconds", total);
      out.put("node_update", NodeUpdateTimer.summary());
      if (cluster.scheduler() instanceof RlScheduler) {
        RlSchedulerMetrics m = ((RlScheduler) cluster.scheduler()).getRlMetrics();
        out.put("engine_decisions", m.getEngineDecisions());
        out.put("engine_containers", m.getEngineContainers());
        out.put("fallbacks", m.getFallbacks());
        out.put("fallbacks_timeout", m.getFallbacksTimeout());
        out.put("mean_engine_allocation_us", m.getMeanEngineNodeUpdateMicros());
      }
    }
    return out;
  }

  /** Back-to-back Schedule calls from one thread through the plugin's own client, 4 hosts' worth of asks. */
  private static Map<String, Object> clientDecisionRate(EngineProcess engine, int seconds) throws Exception {
    ScheduleRequest.Builder req = ScheduleRequest.newBuilder()
        .setNode(NodeSnapshot.newBuilder().setNodeId("h1:45454").setHost("h1").setRack("/rack1")
            .setTotal(Resource.newBuilder().setMemoryMb(4096).setVcores(8))
            .setUnallocated(Resource.newBuilder().setMemoryMb(4096).setVcores(8)))
        .setCluster(ClusterSummary.newBuilder().setNumNodes(4).setNumRacks(2));
    for (int app = 1; app <= 4; app++) {
      req.addAsks(ResourceAsk.newBuilder().setAskId("appattempt_1_000" + app + "_000001/20/0")
          .setApplicationId("application_1_000" + app).setPriority(20)
          .setResource(Resource.newBuilder().setMemoryMb(512).setVcores(1)).setNumContainers(4)
          .addLocality(LocalityRequest.newBuilder().setResourceName("h" + app).setNumContainers(2))
          .addLocality(LocalityRequest.newBuilder().setResourceName(app <= 2 ? "/rack1" : "/rack2")
              .setNumContainers(4))
          .setSubmitTimeMs(1000 + app).setRelaxLocality(true));
    }
    RlSchedulerMetrics metrics = new RlSchedulerMetrics();
    long[] latencies = new long[1 << 20];
    int n = 0;
    try (EngineClient client = new EngineClient(engine.address(), 1000, 3, 1000, 200, 1024, metrics,
        System::currentTimeMillis)) {
      long warmupEnd = System.nanoTime() + 2_000_000_000L;
      long i = 0;
      while (System.nanoTime() < warmupEnd) {
        client.schedule(req.setRequestId(Long.toString(i++)).build());
      }
      long start = System.nanoTime();
      long end = start + seconds * 1_000_000_000L;
      while (System.nanoTime() < end && n < latencies.length) {
        long t = System.nanoTime();
        client.schedule(req.setRequestId(Long.toString(i++)).build());
        latencies[n++] = System.nanoTime() - t;
      }
      double elapsed = (System.nanoTime() - start) / 1e9;
      long[] s = Arrays.copyOf(latencies, n);
      Arrays.sort(s);
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("decisions", n);
      m.put("decisions_per_s", n / elapsed);
      m.put("p50_ms", s[n / 2] / 1e6);
      m.put("p99_ms", s[(int) Math.ceil(n * 0.99) - 1] / 1e6);
      return m;
    }
  }
}
