package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import com.fasterxml.jackson.databind.JsonNode;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobCounter;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The plugin end to end: RlScheduler inside a real ResourceManager, a real `policy-engine serve` child process,
 * real HDFS (4 DataNodes, 2 racks, centralized cache) and real MapReduce jobs at HiBench's tiny size.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RlSchedulerIT {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(RlSchedulerIT.class);

  static {
    try {
      MiniHadoop.writeHostsFile();
    } catch (IOException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final Path work = Path.of("target", "it-rlscheduler").toAbsolutePath();
  // the engine's decision log (`serve --decision-log`), replayed by `emulator replay` once the jobs have run
  private final Path decisionLog = work.resolve("decision-log");
  private final Map<String, Object> results = new LinkedHashMap<>();
  private EngineProcess engine;
  private MiniHadoop cluster;
  private RlSchedulerMetrics metrics;

  @BeforeAll
  void start() throws Exception {
    Files.createDirectories(work);
    deleteRecursively(decisionLog); // a log left by an earlier run would be replayed too
    engine = new EngineProcess("fifo", work.resolve("engine.log"));
    Configuration settings = new Configuration(false);
    settings.set(YarnConfiguration.RM_SCHEDULER, RlScheduler.class.getName());
    settings.set(RlScheduler.ENGINE_ADDRESS, engine.address());
    settings.setLong(RlScheduler.DEADLINE_MS, Long.getLong("yarnrl.it.deadline-ms", 50));
    settings.setLong(RlScheduler.BREAKER_OPEN_MS, 2000);
    long t0 = System.nanoTime();
    cluster = new MiniHadoop(work.resolve("cluster"), settings);
    results.put("cluster_start_s", (System.nanoTime() - t0) / 1e9);
    engine.start("--webhdfs", cluster.webHdfsUrl(), "--decision-log", decisionLog.toString());
    RlScheduler scheduler = assertInstanceOf(RlScheduler.class, cluster.scheduler());
    metrics = scheduler.getRlMetrics();
    results.put("node_racks", cluster.nodeRacks());
  }

  @AfterAll
  void stop() throws Exception {
    try {
      if (metrics != null) {
        results.put("plugin_metrics", metrics.toString());
      }
      Files.writeString(work.resolve("results.json"), Json.write(results), StandardCharsets.UTF_8);
      LOG.info("yarn-rl integration results: {}", Json.write(results));
    } finally {
      if (cluster != null) {
        cluster.close();
      }
      if (engine != null) {
        engine.close();
      }
    }
  }

  @Test
  @Order(1)
  void nodeManagersAndDataNodesShareHostNamesAndRacks() {
    assertEquals(Map.of("h1", "/rack1", "h2", "/rack1", "h3", "/rack2", "h4", "/rack2"), cluster.nodeRacks());
  }

  @Test
  @Order(2)
  void wordCountOnRandomTextWithCachedInputRunsThroughTheEngine() throws Exception {
    org.apache.hadoop.fs.Path text = new org.apache.hadoop.fs.Path("/hibench/wordcount/input");
    Workloads.Result gen = Workloads.randomTextWriter(cluster.jobConf(), text);
    assertTrue(gen.succeeded, gen.toString());

    // centralized cache on part of the input; WebHDFS must report the cached replica
    org.apache.hadoop.fs.Path cached = new org.apache.hadoop.fs.Path(text, "part-m-00000");
    cluster.cache(cached);
    String locations = cluster.webHdfsBlockLocations(cached.toString());
    assertTrue(locations.matches("(?s).*\"cachedHosts\"\\s*:\\s*\\[\\s*\"h[1-4]\".*"),
        "WebHDFS GETFILEBLOCKLOCATIONS gave no cachedHosts: " + locations);
    results.put("webhdfs_block_locations", locations);

    long decisionsBefore = metrics.getEngineDecisions();
    Workloads.Result wc = Workloads.wordCount(cluster.jobConf(), text,
        new org.apache.hadoop.fs.Path("/hibench/wordcount/output"),
        "yarnrl.category=time-critical,yarnrl.deadline-ms=600000,yarnrl.input=" + cached);
    assertTrue(wc.succeeded, wc.toString());
    results.put("randomtextwriter", resultMap(gen));
    results.put("wordcount", resultMap(wc));

    long maps = wc.counter(JobCounter.TOTAL_LAUNCHED_MAPS);
    assertEquals(Workloads.MAPS, maps, wc.toString());
    assertEquals(maps, wc.counter(JobCounter.DATA_LOCAL_MAPS) + wc.counter(JobCounter.RACK_LOCAL_MAPS)
        + wc.counter(JobCounter.OTHER_LOCAL_MAPS), wc.toString());
    // every block has a replica in each rack (replication 2, rack-aware placement): with the host mapping right,
    // no map can be off-switch
    assertEquals(0, wc.counter(JobCounter.OTHER_LOCAL_MAPS), wc.toString());

    assertTrue(metrics.getEngineDecisions() > decisionsBefore, metrics.toString());
    assertTrue(metrics.getEngineContainers() > 0, metrics.toString());
    // the engine looked the tagged input up in WebHDFS and saw its cached replica
    assertTrue(engine.metric("yarnrl_webhdfs_lookups_total", "outcome=\"ok\"") >= 1, "no WebHDFS lookup");
  }

  @Test
  @Order(3)
  void teraGenAndTeraSortRunThroughTheEngine() throws Exception {
    org.apache.hadoop.fs.Path gen = new org.apache.hadoop.fs.Path("/hibench/terasort/input");
    Workloads.Result tg = Workloads.teraGen(cluster.jobConf(), gen);
    assertTrue(tg.succeeded, tg.toString());
    Workloads.Result ts = Workloads.teraSort(cluster.jobConf(), gen,
        new org.apache.hadoop.fs.Path("/hibench/terasort/output"));
    assertTrue(ts.succeeded, ts.toString());
    results.put("teragen", resultMap(tg));
    results.put("terasort", resultMap(ts));
  }

  @Test
  @Order(4)
  void decisionsAndFeedbackAreCountedOnBothSides() throws Exception {
    long javaDecisions = metrics.getEngineDecisions();
    long javaContainers = metrics.getEngineContainers();
    double engineDecisions = engine.metric("yarnrl_decisions_total", "rpc=\"schedule\"");
    // every decision the plugin applied was made by the engine; the engine may also have answered calls the plugin
    // had already given up on (deadline), so it counts at least as many
    assertTrue(javaDecisions > 0, metrics.toString());
    // the same counters over JMX, as an operator sees them
    javax.management.ObjectName bean =
        new javax.management.ObjectName("Hadoop:service=ResourceManager,name=RlScheduler");
    javax.management.MBeanServer jmx = java.lang.management.ManagementFactory.getPlatformMBeanServer();
    assertEquals(javaDecisions, (long) jmx.getAttribute(bean, "EngineDecisions"));
    assertEquals("CLOSED", jmx.getAttribute(bean, "BreakerState"));
    assertTrue(engineDecisions >= javaDecisions, engineDecisions + " engine-side vs " + javaDecisions);
    // each container, placed by the engine or natively, comes back to it as a ContainerStarted event (sent
    // asynchronously)
    long allContainers = javaContainers + metrics.getNativeContainers();
    double started = 0;
    for (int i = 0; i < 50 && started < allContainers; i++) {
      started = engine.metric("yarnrl_report_events_total", "kind=\"container_started\"");
      Thread.sleep(100);
    }
    // a Report batch the engine could not take even after retries is dropped and counted; only those may be missing
    long dropped = metrics.getReportEventsDropped();
    assertTrue(started <= allContainers, metrics.toString());
    assertTrue(allContainers - (long) started <= dropped,
        "container_started events " + started + " of " + allContainers + ", " + metrics);
    double finished = engine.metric("yarnrl_report_events_total", "kind=\"container_finished\"");
    // an application is removed from the scheduler (JobFinished) a few seconds after its client saw it finish
    double jobsFinished = 0;
    for (int i = 0; i < 300 && jobsFinished < 4; i++) {
      jobsFinished = engine.metric("yarnrl_report_events_total", "kind=\"job_finished\"");
      Thread.sleep(100);
    }
    results.put("engine_side_report_events", Map.of("container_started", started, "container_finished", finished,
        "job_finished", jobsFinished));
    assertTrue(finished > 0, "container_finished events: " + finished);
    // randomtextwriter, wordcount, teragen, terasort (and TeraSort's sampling runs locally, not on YARN)
    assertTrue(jobsFinished >= 4, "job_finished events: " + jobsFinished + ", " + metrics);
    results.put("engine_side_schedule_decisions", engineDecisions);
    results.put("plugin_engine_decisions", javaDecisions);
    results.put("plugin_engine_containers", javaContainers);
    results.put("plugin_fallbacks_before_kill", metrics.getFallbacks());
    // containers the engine judged cache-local (a cached replica of the tagged WordCount input on the node)
    results.put("engine_assigned_containers_by_locality", Map.of(
        "cache_local", engine.metric("yarnrl_assigned_containers_total", "locality=\"cache_local\""),
        "node_local", engine.metric("yarnrl_assigned_containers_total", "locality=\"node_local\""),
        "rack_local", engine.metric("yarnrl_assigned_containers_total", "locality=\"rack_local\""),
        "off_switch", engine.metric("yarnrl_assigned_containers_total", "locality=\"off_switch\"")));
  }

  @Test
  @Order(5)
  void decisionLogRecordedBehindThePluginReplaysToTheSameDecisions() throws Exception {
    // what the engine counted before it stops: each of these decisions is in the log or counted as dropped
    double decided = engine.metric("yarnrl_decisions_total", "rpc=\"schedule\"");
    double dropped = engine.metric("yarnrl_decision_log_dropped_total");
    engine.stop(); // SIGTERM: the log's files are closed (renamed from .inprogress)
    List<String> cmd = List.of(EngineProcess.python(), "-m", "emulator.cli", "replay", "--log", decisionLog.toString(),
        "--policies", "fifo", "--json", "--no-progress");
    Path replayOut = work.resolve("replay.out");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(replayOut.toFile()).start();
    if (!p.waitFor(300, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("replay did not finish in 300 s: " + Files.readString(replayOut));
    }
    String out = Files.readString(replayOut, StandardCharsets.UTF_8);
    assertEquals(0, p.exitValue(), String.join(" ", cmd) + ":\n" + out);
    String[] lines = out.strip().split("\n");
    JsonNode replay = Json.read(lines[lines.length - 1]);
    long logged = replay.get("decisions").asLong();
    results.put("decision_log_replay", Map.of("decisions_logged", logged, "engine_decisions", decided,
        "log_dropped", dropped, "agreement_logged_fifo", replay.get("agreement").get("logged~fifo").asDouble(),
        "containers_logged", replay.get("containers").get("logged").asLong()));
    assertTrue(decided > 0 && logged >= decided - dropped, logged + " rows logged of " + decided + " decisions, "
        + dropped + " dropped:\n" + out);
    assertEquals(List.of("fifo"), List.of(replay.get("logged_policies").get(0).asText()), out);
    // FIFO is deterministic: re-deciding every logged heartbeat (HDFS blocks from WebHDFS included) gives exactly
    // the decisions the engine answered the plugin with
    assertEquals(1.0, replay.get("agreement").get("logged~fifo").asDouble(), out);
    assertEquals(replay.get("containers").get("logged").asLong(), replay.get("containers").get("fifo").asLong(), out);
    assertTrue(replay.get("containers").get("logged").asLong() > 0, out);
    engine.start("--webhdfs", cluster.webHdfsUrl(), "--decision-log", decisionLog.toString());
  }

  @Test
  @Order(6)
  void engineKilledMidJobThenRestarted() throws Exception {
    long fallbacksBefore = metrics.getFallbacks();
    long nativeBefore = metrics.getNativeContainers();
    long containersBefore = metrics.getEngineContainers();
    // 1536 MB maps: two per node next to the AM, so the 12 maps come in waves and some are still pending at the kill
    Job job = Workloads.submitSleep(cluster.jobConf(), 12, 3000, 1536);
    // generous: at load average 70 the MapReduce AM alone took 120 s to register
    long until = System.currentTimeMillis() + 360_000;
    while (metrics.getEngineContainers() < containersBefore + 2 && System.currentTimeMillis() < until) {
      Thread.sleep(50); // the AM and at least one map placed by the engine
    }
    assertTrue(metrics.getEngineContainers() >= containersBefore + 2, metrics.toString());
    long killStart = System.nanoTime();
    engine.kill();
    Workloads.Result r = Workloads.finish("sleep-engine-killed", job, killStart);
    assertTrue(r.succeeded, r.toString());
    assertEquals(12, r.counter(JobCounter.TOTAL_LAUNCHED_MAPS), r.toString());
    assertTrue(metrics.getFallbacks() > fallbacksBefore, metrics.toString());
    assertTrue(metrics.getFallbacksUnavailable() + metrics.getFallbacksBreakerOpen() > 0, metrics.toString());
    assertTrue(metrics.getNativeContainers() > nativeBefore, metrics.toString());
    results.put("sleep_engine_killed", resultMap(r));
    results.put("fallbacks_during_outage", metrics.getFallbacks() - fallbacksBefore);
    results.put("native_containers_during_outage", metrics.getNativeContainers() - nativeBefore);

    // the engine comes back at the same address: once the breaker's open period ends the plugin uses it again
    engine.start("--webhdfs", cluster.webHdfsUrl(), "--decision-log", decisionLog.toString());
    long decisionsAtRestart = metrics.getEngineDecisions();
    Job after = Workloads.submitSleep(cluster.jobConf(), 4, 200, 512);
    Workloads.Result r2 = Workloads.finish("sleep-engine-restarted", after, System.nanoTime());
    assertTrue(r2.succeeded, r2.toString());
    assertTrue(metrics.getEngineDecisions() > decisionsAtRestart, metrics.toString());
    assertEquals("CLOSED", metrics.getBreakerState(), metrics.toString());
    assertTrue(engine.metric("yarnrl_decisions_total", "rpc=\"schedule\"") > 0);
    results.put("sleep_engine_restarted", resultMap(r2));
    results.put("engine_decisions_after_restart", metrics.getEngineDecisions() - decisionsAtRestart);
  }

  private static void deleteRecursively(Path dir) throws IOException {
    if (Files.exists(dir)) {
      try (java.util.stream.Stream<Path> paths = Files.walk(dir)) {
        for (Path path : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
          Files.delete(path);
        }
      }
    }
  }

  private static Map<String, Object> resultMap(Workloads.Result r) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("succeeded", r.succeeded);
    m.put("seconds", r.seconds);
    m.putAll(r.counters);
    return m;
  }
}
