package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
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
 * and under RlScheduler with the engine's FIFO policy (node-update handling time and job run times, in ABBA
 * rounds: -Dyarnrl.bench.rounds, default 2), and the Java
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
      Configuration plugin = new Configuration(false);
      plugin.set(YarnConfiguration.RM_SCHEDULER, NodeUpdateTimer.TimedRlScheduler.class.getName());
      plugin.set(RlScheduler.ENGINE_ADDRESS, engine.address());
      // rounds in ABBA order (native, plugin, plugin, native, ...): the JVM warms up as the benchmark goes, and
      // alternating keeps that from favouring whichever scheduler runs later
      int rounds = Integer.getInteger("yarnrl.bench.rounds", 2);
      List<Map<String, Object>> nativeRuns = new ArrayList<>();
      List<Map<String, Object>> pluginRuns = new ArrayList<>();
      for (int i = 0; i < 2 * rounds; i++) {
        boolean nativeFirst = (i / 2) % 2 == 0;
        boolean runNative = (i % 2 == 0) == nativeFirst;
        if (runNative) {
          nativeRuns.add(workload("native-" + i, nativeFifo));
        } else {
          pluginRuns.add(workload("plugin-" + i, plugin));
        }
      }
      result.put("rounds", rounds);
      result.put("native_fifo", aggregate(nativeRuns));
      result.put("plugin_fifo", aggregate(pluginRuns));
    }
    Map<?, ?> nat = (Map<?, ?>) result.get("native_fifo");
    Map<?, ?> plug = (Map<?, ?>) result.get("plugin_fifo");
    result.put("job_time_ratio", (double) plug.get("mean_total_job_seconds")
        / (double) nat.get("mean_total_job_seconds"));
    result.put("node_update_mean_ratio", (double) plug.get("node_update_mean_us")
        / (double) nat.get("node_update_mean_us"));
    result.put("allocating_node_update_mean_ratio", (double) plug.get("allocating_node_update_mean_us")
        / (double) nat.get("allocating_node_update_mean_us"));
    Files.writeString(work.resolve("result.json"), Json.write(result), StandardCharsets.UTF_8);
    System.out.println(Json.write(result));
  }

  /** Means over the runs of one scheduler (node-update means weighted by their counts), plus the runs. */
  private static Map<String, Object> aggregate(List<Map<String, Object>> runs) {
    double jobSeconds = 0;
    double allNanos = 0;
    long allCount = 0;
    double busyNanos = 0;
    long busyCount = 0;
    for (Map<String, Object> run : runs) {
      jobSeconds += (double) run.get("total_job_seconds");
      Map<?, ?> nu = (Map<?, ?>) run.get("node_update");
      Map<?, ?> busy = (Map<?, ?>) nu.get("allocating");
      int n = (int) nu.get("count");
      int b = (int) busy.get("count");
      allCount += n;
      busyCount += b;
      allNanos += n == 0 ? 0 : (double) nu.get("mean_us") * n;
      busyNanos += b == 0 ? 0 : (double) busy.get("mean_us") * b;
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("mean_total_job_seconds", jobSeconds / runs.size());
    out.put("node_update_mean_us", allNanos / Math.max(1, allCount));
    out.put("node_updates", allCount);
    out.put("allocating_node_update_mean_us", busyNanos / Math.max(1, busyCount));
    out.put("allocating_node_updates", busyCount);
    out.put("runs", runs);
    return out;
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
