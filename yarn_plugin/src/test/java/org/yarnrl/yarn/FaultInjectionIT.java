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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.LongSupplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobCounter;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerNode;
import org.apache.hadoop.yarn.util.resource.Resources;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Faults between a real ResourceManager (RlScheduler) and a real `policy-engine serve`, during HiBench-shaped jobs on
 * one shared mini cluster: the engine killed, stopped (SIGSTOP), slowed past the deadline, answering invalidly
 * (over-allocating), answering only "wait", the network path cut and restored; then engine failover (two engines, the active one killed
 * mid-job) and failback.
 *
 * <p>The plugin reaches engine A through a {@link TcpProxy} (latency, cut, or another upstream: a grpc-java fake whose
 * answers over-allocate); engine B is the failover list's second entry and stays down until the failover case, so in
 * the fault cases there is nothing to fail over to and the plugin falls back to native scheduling.
 *
 * <p>Each fault case: the fault starts; a WordCount (HiBench tiny) is submitted, so its AM's ask arrives during the
 * fault; the fault lasts until the expected fallback reason was counted (and at least {@link #HOLD_MS}); then it ends,
 * and the AM's map and reduce asks come after that. Asserted: every job succeeds with all its tasks; no node is ever
 * allocated beyond its resources (sampled every 100 ms); the fallback reason of the fault is counted; no heartbeat is
 * scheduled natively later than 15 s after the recovery and the engine decides again. WordCount times under each
 * fault against the fault-free run go to target/it-fault/results.json. Waits poll
 * with generous limits: nothing here asserts a duration except the 15 s return to the engine.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class FaultInjectionIT {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(FaultInjectionIT.class);
  static final long HOLD_MS = 6000;
  static final long RETURN_LIMIT_MS = 15_000;
  static final long FAILBACK_MS = 5000;

  static {
    try {
      MiniHadoop.writeHostsFile();
    } catch (IOException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final Path work = Path.of("target", "it-fault").toAbsolutePath();
  private final Map<String, Object> results = new LinkedHashMap<>();
  private EngineProcess engineA;
  private EngineProcess engineB;
  private TcpProxy proxy;
  private TestEngines.Fake invalidEngine;
  private TestEngines.Fake waitingEngine;
  private MiniHadoop cluster;
  private RlScheduler scheduler;
  private RlSchedulerMetrics metrics;
  private final org.apache.hadoop.fs.Path text = new org.apache.hadoop.fs.Path("/hibench/wordcount/input");
  private final List<String> overAllocations = new CopyOnWriteArrayList<>();
  private volatile long samples;
  private volatile boolean sampling = true;
  private Thread sampler;

  @BeforeAll
  void start() throws Exception {
    Files.createDirectories(work);
    engineA = new EngineProcess("fifo", work.resolve("engine-a.log"));
    engineB = new EngineProcess("fifo", work.resolve("engine-b.log"));
    proxy = new TcpProxy(engineA.port);
    invalidEngine = new TestEngines.Fake("invalid", null, null);
    invalidEngine.invalid.set(true);
    waitingEngine = new TestEngines.Fake("only-waits", null, null);
    waitingEngine.onlyWaits.set(true);
    Configuration settings = new Configuration(false);
    settings.set(YarnConfiguration.RM_SCHEDULER, RlScheduler.class.getName());
    settings.set(RlScheduler.ENGINE_ADDRESS, proxy.address() + "," + engineB.address());
    // 250 ms: a loaded CI machine misses 50 ms now and then, which would read as a fallback after a recovery; the
    // slow case adds 500 ms each way, far past it
    settings.setLong(RlScheduler.DEADLINE_MS, Long.getLong("yarnrl.it.fault-deadline-ms", 250));
    settings.setLong(RlScheduler.BREAKER_OPEN_MS, 2000);
    settings.setLong(EngineFailover.HEALTH_INTERVAL_MS, 500);
    settings.setLong(EngineFailover.FAILBACK_MS, FAILBACK_MS);
    long t0 = System.nanoTime();
    cluster = new MiniHadoop(work.resolve("cluster"), settings);
    results.put("cluster_start_s", (System.nanoTime() - t0) / 1e9);
    engineA.start();
    scheduler = assertInstanceOf(RlScheduler.class, cluster.scheduler());
    metrics = scheduler.getRlMetrics();
    sampler = new Thread(this::sampleNodes, "over-allocation-sampler");
    sampler.setDaemon(true);
    sampler.start();
    Workloads.writeRandomText(cluster.fs(), text, 17); // WordCount's HiBench-tiny input, without a generator job
    await("engine A in use", 120_000, () -> metrics.getEngineHealth().startsWith(proxy.address() + "=SERVING"));
  }

  @AfterAll
  void stop() throws Exception {
    sampling = false;
    try {
      if (metrics != null) {
        results.put("plugin_metrics", metrics.toString());
      }
      results.put("node_samples", samples);
      results.put("over_allocations", overAllocations);
      Files.writeString(work.resolve("results.json"), Json.write(results), StandardCharsets.UTF_8);
      LOG.info("yarn-rl fault injection results: {}", Json.write(results));
    } finally {
      for (AutoCloseable c : new AutoCloseable[] {cluster, engineA, engineB, proxy, invalidEngine, waitingEngine}) {
        if (c != null) {
          try {
            c.close();
          } catch (Exception e) {
            LOG.warn("closing {}: {}", c, e.toString());
          }
        }
      }
    }
  }

  /** Every 100 ms: no node has more allocated than it has, none has a negative unallocated resource. */
  private void sampleNodes() {
    while (sampling) {
      for (SchedulerNode n : scheduler.getNodeTracker().getAllNodes()) {
        if (!Resources.fitsIn(n.getAllocatedResource(), n.getTotalResource())
            || n.getUnallocatedResource().getMemorySize() < 0 || n.getUnallocatedResource().getVirtualCores() < 0) {
          overAllocations.add(n.getNodeName() + " allocated " + n.getAllocatedResource() + " of "
              + n.getTotalResource());
        }
      }
      samples++;
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  private interface Condition {
    boolean holds() throws Exception;
  }

  private static long await(String what, long limitMs, Condition c) throws Exception {
    long start = System.currentTimeMillis();
    while (!c.holds()) {
      if (System.currentTimeMillis() - start > limitMs) {
        throw new AssertionError("not within " + limitMs / 1000 + " s: " + what);
      }
      Thread.sleep(50);
    }
    return System.currentTimeMillis() - start;
  }

  /** A submitted job and a thread that waits for it, so that concurrent jobs each get their own wall time. */
  private static final class Running {
    final String name;
    final Job job;
    final long start = System.nanoTime();
    volatile boolean ok;
    volatile long end;
    final Thread waiter;

    Running(String name, Job job) {
      this.name = name;
      this.job = job;
      waiter = new Thread(() -> {
        try {
          ok = job.waitForCompletion(false);
        } catch (Exception e) {
          LOG.warn("{}: {}", name, e.toString());
        } finally {
          end = System.nanoTime();
        }
      }, "wait-" + name);
      waiter.setDaemon(true);
      waiter.start();
    }

    Workloads.Result await() throws Exception {
      waiter.join(600_000);
      return Workloads.result(name, job, ok, (end - start) / 1e9);
    }
  }

  private long fallbackTotal() {
    return metrics.getFallbacks();
  }

  /**
   * One fault case. The fault starts, then a WordCount is submitted, so its AM's ask arrives during the fault; the
   * fault lasts until {@code reason} (the fallback counter this fault must raise; null: the fault-free run) has
   * risen and at least {@link #HOLD_MS}. The AM's map and reduce asks come after the recovery (an AM takes longer
   * than that to start), so the engine must take them back.
   */
  private Map<String, Object> faultCase(String name, LongSupplier reason, Runnable inject, Runnable recover)
      throws Exception {
    Map<String, Object> r = new LinkedHashMap<>();
    int violationsBefore = overAllocations.size();
    long reasonBefore = reason == null ? 0 : reason.getAsLong();
    long timeoutB = metrics.getFallbacksTimeout();
    long unavailableB = metrics.getFallbacksUnavailable();
    long errorB = metrics.getFallbacksError();
    long invalidB = metrics.getFallbacksInvalidAnswer();
    long breakerB = metrics.getFallbacksBreakerOpen();
    long waitB = metrics.getFallbacksWaitHeartbeats() + metrics.getFallbacksWaitTime();
    long nativeB = metrics.getNativeContainers();
    long engineContainersB = metrics.getEngineContainers();

    long faultStart = System.currentTimeMillis();
    inject.run();
    long recoverAt;
    Running wc;
    try {
      wc = new Running(name + "-wordcount", Workloads.submitWordCount(cluster.jobConf(), text,
          new org.apache.hadoop.fs.Path("/fault/" + name + "/wordcount"), null));
      if (reason != null) {
        await(name + ": fallback counted for this fault", 180_000, () -> reason.getAsLong() > reasonBefore);
      }
      long left = HOLD_MS - (System.currentTimeMillis() - faultStart);
      if (left > 0) {
        Thread.sleep(left);
      }
    } finally {
      recover.run();
      recoverAt = System.currentTimeMillis();
    }
    r.put("fault_s", (recoverAt - faultStart) / 1e3);
    // back to the engine: the first engine decision after the recovery, and the last native heartbeat before it
    long decisionsAtRecovery = metrics.getEngineDecisions();
    long lastFallbackAt = recoverAt;
    long fallbacks = fallbackTotal();
    long limit = recoverAt + 180_000;
    while (metrics.getEngineDecisions() == decisionsAtRecovery && System.currentTimeMillis() < limit) {
      long f = fallbackTotal();
      if (f != fallbacks) {
        fallbacks = f;
        lastFallbackAt = System.currentTimeMillis();
      }
      Thread.sleep(20);
    }
    boolean back = metrics.getEngineDecisions() > decisionsAtRecovery;
    r.put("seconds_to_engine_after_recovery", (System.currentTimeMillis() - recoverAt) / 1e3);
    r.put("last_native_heartbeat_after_recovery_s", (lastFallbackAt - recoverAt) / 1e3);

    Workloads.Result wcR = wc.await();
    r.put("wordcount", resultMap(wcR));
    Map<String, Long> reasons = new LinkedHashMap<>();
    reasons.put("timeout", metrics.getFallbacksTimeout() - timeoutB);
    reasons.put("unavailable", metrics.getFallbacksUnavailable() - unavailableB);
    reasons.put("error", metrics.getFallbacksError() - errorB);
    reasons.put("invalid_answer", metrics.getFallbacksInvalidAnswer() - invalidB);
    reasons.put("breaker_open", metrics.getFallbacksBreakerOpen() - breakerB);
    reasons.put("wait_cap", metrics.getFallbacksWaitHeartbeats() + metrics.getFallbacksWaitTime() - waitB);
    r.put("fallbacks", reasons);
    r.put("native_containers", metrics.getNativeContainers() - nativeB);
    r.put("engine_containers", metrics.getEngineContainers() - engineContainersB);
    results.put(name, r);
    LOG.info("fault case {}: {}", name, Json.write(r));

    assertTrue(wcR.succeeded, wcR.toString());
    assertEquals(Workloads.MAPS, wcR.counter(JobCounter.TOTAL_LAUNCHED_MAPS), wcR.toString());
    assertEquals(List.of(), overAllocations.subList(violationsBefore, overAllocations.size()));
    assertTrue(back, name + ": the engine decided nothing within 180 s of the recovery; " + metrics);
    assertTrue(lastFallbackAt - recoverAt <= RETURN_LIMIT_MS, name + ": a heartbeat was scheduled natively "
        + (lastFallbackAt - recoverAt) + " ms after the recovery; " + metrics);
    return r;
  }

  private static void unchecked(ThrowingRunnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private interface ThrowingRunnable {
    void run() throws Exception;
  }

  @Test
  @Order(1)
  void faultFree() throws Exception {
    long fallbacks = metrics.getFallbacks();
    Map<String, Object> r = faultCase("fault_free", null, () -> { }, () -> { });
    // the reference run: the engine took every heartbeat with asks (a rare deadline miss on a loaded machine aside)
    results.put("fault_free_fallbacks", metrics.getFallbacks() - fallbacks);
    assertTrue(((Number) ((Map<?, ?>) r.get("wordcount")).get("seconds")).doubleValue() > 0);
  }

  @Test
  @Order(2)
  void engineKilled() throws Exception {
    faultCase("engine_killed", () -> metrics.getFallbacksUnavailable() + metrics.getFallbacksBreakerOpen(),
        () -> unchecked(engineA::kill), () -> unchecked(engineA::start));
  }

  @Test
  @Order(3)
  void engineStopped() throws Exception {
    faultCase("engine_sigstop", metrics::getFallbacksTimeout,
        () -> unchecked(engineA::pause), () -> unchecked(engineA::resume));
  }

  @Test
  @Order(4)
  void engineSlowerThanTheDeadline() throws Exception {
    faultCase("engine_slow_500ms", metrics::getFallbacksTimeout, () -> proxy.delay(500), () -> proxy.delay(0));
  }

  /**
   * An engine that only waits (every answer valid and empty: a bad model, a policy with an unbounded delay): each
   * ask is scheduled natively once it has waited its cap (WaitCap), so the job finishes; counted by reason.
   */
  @Test
  @Order(5)
  void engineThatOnlyWaits() throws Exception {
    faultCase("only_waits", () -> metrics.getFallbacksWaitHeartbeats() + metrics.getFallbacksWaitTime(),
        () -> proxy.upstream(waitingEngine.server.getPort()), () -> proxy.upstream(engineA.port));
    assertTrue(waitingEngine.schedules.get() > 0);
    assertTrue(metrics.getAsksPastWaitCap() > 0, metrics.toString());
  }

  @Test
  @Order(5)
  void invalidAnswers() throws Exception {
    faultCase("invalid_answers", metrics::getFallbacksInvalidAnswer,
        () -> proxy.upstream(invalidEngine.server.getPort()), () -> proxy.upstream(engineA.port));
    assertTrue(invalidEngine.schedules.get() > 0);
  }

  @Test
  @Order(6)
  void networkCutAndRestored() throws Exception {
    faultCase("network_cut", () -> metrics.getFallbacksUnavailable() + metrics.getFallbacksBreakerOpen(),
        proxy::cut, proxy::restore);
  }

  @Test
  @Order(7)
  void activeEngineKilledMidJobFailsOverAndBack() throws Exception {
    Map<String, Object> r = new LinkedHashMap<>();
    engineB.start();
    await("engine B SERVING", 120_000, () -> metrics.getEngineHealth().endsWith(engineB.address() + "=SERVING"));
    assertEquals(proxy.address(), metrics.getEngineAddress());
    long failovers = metrics.getFailovers();
    long fallbacks = metrics.getFallbacks();
    long containersBefore = metrics.getEngineContainers();
    int violationsBefore = overAllocations.size();

    Running wc = new Running("failover-wordcount", Workloads.submitWordCount(cluster.jobConf(), text,
        new org.apache.hadoop.fs.Path("/fault/failover/wordcount"), null));
    // 20 maps of 1536 MB, at most 8 at a time (two per node): waves that outlast the kill on a fast machine too,
    // so engine B always has maps left to place
    Running sleep = new Running("failover-sleep", Workloads.submitSleep(cluster.jobConf(), 20, 3000, 1536));
    await("engine A placed containers", 180_000, () -> metrics.getEngineContainers() >= containersBefore + 2);
    long killAt = System.currentTimeMillis();
    engineA.kill();
    r.put("seconds_to_failover", await("failover to B", 120_000,
        () -> metrics.getEngineAddress().equals(engineB.address())) / 1e3);
    r.put("failover_fallbacks", metrics.getFallbacks() - fallbacks);
    // B decides the remaining waves (its own Schedule counter, engine side)
    await("B decides", 180_000, () -> engineB.metric("yarnrl_decisions_total", "rpc=\"schedule\"") > 0);
    r.put("seconds_from_kill_to_first_b_decision", (System.currentTimeMillis() - killAt) / 1e3);
    Workloads.Result wcR = wc.await();
    Workloads.Result sleepR = sleep.await();
    r.put("wordcount", resultMap(wcR));
    r.put("sleep", resultMap(sleepR));
    assertTrue(wcR.succeeded, wcR.toString());
    assertTrue(sleepR.succeeded, sleepR.toString());
    assertEquals(20, sleepR.counter(JobCounter.TOTAL_LAUNCHED_MAPS), sleepR.toString());
    assertTrue(metrics.getFailovers() > failovers, metrics.toString());

    // A back: after FAILBACK_MS of SERVING it is the active engine again and decides
    engineA.start();
    long restartAt = System.currentTimeMillis();
    r.put("seconds_to_failback", await("failback to A", 120_000,
        () -> metrics.getEngineAddress().equals(proxy.address())) / 1e3);
    assertTrue(System.currentTimeMillis() - restartAt >= FAILBACK_MS - 1000, "failback before " + FAILBACK_MS + " ms");
    Running after = new Running("failback-probe", Workloads.submitSleep(cluster.jobConf(), 2, 100, 512));
    await("A decides after failback", 180_000,
        () -> engineA.metric("yarnrl_decisions_total", "rpc=\"schedule\"") > 0);
    Workloads.Result afterR = after.await();
    assertTrue(afterR.succeeded, afterR.toString());
    r.put("failback_probe", resultMap(afterR));
    r.put("failovers", metrics.getFailovers() - failovers);
    assertEquals(List.of(), overAllocations.subList(violationsBefore, overAllocations.size()));
    results.put("failover", r);
    LOG.info("failover case: {}", Json.write(r));
  }

  private static Map<String, Object> resultMap(Workloads.Result r) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("succeeded", r.succeeded);
    m.put("seconds", r.seconds);
    m.putAll(r.counters);
    return m;
  }
}
