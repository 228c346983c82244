package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.YarnApplicationState;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;
import org.junit.jupiter.api.Test;

/**
 * DeepRM's learned job ordering (deeprm-pg, the shipped model) served to RlScheduler on a real YARN (a
 * MiniYARNCluster with one NodeManager of DeepRM's 20 units: 20 x 256 MB, 20 vcores), against the emulator's
 * choices for the same scripted jobs (`python -m algorithms.deeprm.script`).
 *
 * <p>Each job is an application whose one container (the AM's) runs {@code sleep LENGTH}, tagged
 * {@code yarnrl.expected-runtime-ms=LENGTH}: a blocker that fills the node, then six jobs submitted behind it. When
 * the blocker ends, DeepRM fills the node exactly with jobs 3-6 (2 + 7 + 5 + 6 units, the long job 6 among them) and
 * keeps the first-submitted job 1 (8 units) and job 2 (10) for later; FIFO and Packer would start 1, 2, 3 and SJF
 * 1, 3, 4. The test checks that every container came from the engine (no fallback of any reason, the default wait
 * cap included), that the jobs started in the emulator's order (start waves), and that this order is not FIFO's.
 *
 * <p>The script is chosen so that the order does not hang on timing the emulator does not model: a real blocker
 * ends 1-2 s (up to a DeepRM step) after its tagged length (container launch, the exit reaching the RM), so the
 * engine decides at a later step, with more steps since the last arrival, than the emulator; the emulator gives
 * these same waves for blocker lengths 3-8 and arrivals a step earlier or later (tests/test_deeprm_view.py), and no
 * job is held back while it fits (a deliberate hold would meet the plugin's wait cap, which DeepRM's deployment sets
 * by time: yarn_plugin/README.md, "DeepRM"). The script it replaces failed in two ways: DeepRM chose between two
 * 5-unit jobs by the steps since the last arrival, at the boundary the real start overhead moves (the run
 * diagnosed started job 3 where the emulator started job 2), and it held fitting jobs back for many steps (in the
 * emulator one for 11 steps, 22 s), past the plugin's derived wait cap (node-locality-delay 40 + 1 node = 41
 * heartbeats, 8.2 s at 200 ms): its one native container was that cap's fallback (FallbacksWaitHeartbeats: a job
 * left pending for 41 heartbeats / 8 s while it fitted).
 */
class DeepRmIT {
  private static final long STEP_MS = 2000;
  /**
   * [arrival step, length in steps, memory units, vcore units]: the jobs of tests/test_deeprm_view.py's script. One
   * vcore each: RlScheduler keeps FifoScheduler's DefaultResourceCalculator, which makes every container 1 vcore,
   * so memory is the resource that binds here (benchmarks/deeprm_real.py runs both on RlCapacityScheduler + DRF).
   */
  private static final int[][] JOBS = {
      {0, 4, 20, 1}, {1, 2, 8, 1}, {2, 3, 10, 1}, {2, 1, 2, 1}, {2, 2, 7, 1}, {2, 2, 5, 1}, {2, 10, 6, 1}};
  private static final int UNIT_MB = 256;

  static {
    try {
      MiniHadoop.writeHostsFile();
    } catch (IOException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final Path work = Path.of("target", "it-deeprm").toAbsolutePath();
  private final Path model = Path.of("..", "models", "deeprm-pg.safetensors").toAbsolutePath().normalize();

  @Test
  void deepRmPgOrdersRealJobsAsInTheEmulator() throws Exception {
    Files.createDirectories(work);
    List<List<Integer>> expected = emulatorWaves("deeprm-pg");
    List<List<Integer>> fifo = emulatorWaves("fifo");
    assertNotEquals(fifo.get(1), expected.get(1), "the script must tell DeepRM's order from FIFO's");

    Map<String, Object> results = new LinkedHashMap<>();
    try (EngineProcess engine = new EngineProcess("deeprm-pg", work.resolve("engine.log"))) {
      engine.start("--model", model.toString(), "--deeprm-step-ms", Long.toString(STEP_MS));
      Configuration conf = new YarnConfiguration();
      conf.set(YarnConfiguration.RM_SCHEDULER, RlScheduler.class.getName());
      conf.set(RlScheduler.ENGINE_ADDRESS, engine.address());
      conf.setLong(RlScheduler.DEADLINE_MS, 2000); // two shared cores: a slow answer must not fall back to FIFO
      conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, UNIT_MB);
      conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, 20 * UNIT_MB);
      conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES, 20);
      conf.setInt(YarnConfiguration.NM_PMEM_MB, 20 * UNIT_MB);
      conf.setInt(YarnConfiguration.NM_VCORES, 20);
      conf.setInt(YarnConfiguration.YARN_MINICLUSTER_NM_PMEM_MB, 20 * UNIT_MB);
      conf.setBoolean(YarnConfiguration.NM_ENABLE_HARDWARE_CAPABILITY_DETECTION, false);
      conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
      conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
      conf.setInt(YarnConfiguration.RM_NM_HEARTBEAT_INTERVAL_MS, 200);
      conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 99.9f);
      try (MiniYARNCluster yarn = new MiniYARNCluster("deeprm", 1, 1, 1)) {
        yarn.init(conf);
        yarn.start();
        waitFor(() -> yarn.getResourceManager().getResourceScheduler().getNumClusterNodes() == 1, 60,
            "the NodeManager to register");
        RlScheduler scheduler = assertInstanceOf(RlScheduler.class,
            yarn.getResourceManager().getResourceScheduler());
        YarnClient client = YarnClient.createYarnClient();
        client.init(yarn.getConfig());
        client.start();
        try {
          List<ApplicationId> ids = submit(client);
          waitFor(() -> finished(client, ids), 180, "the scripted jobs to finish");
          List<Long> launch = new ArrayList<>();
          for (ApplicationId id : ids) {
            ApplicationReport r = client.getApplicationReport(id);
            launch.add(r.getLaunchTime());
          }
          RlSchedulerMetrics m = scheduler.getRlMetrics();
          results.put("launch_ms", launch);
          results.put("expected_waves", expected);
          results.put("engine_containers", m.engineContainers.sum());
          results.put("native_containers", m.nativeContainers.sum());
          Map<String, Long> fallbacks = new LinkedHashMap<>();
          fallbacks.put("timeout", m.fallbacksTimeout.sum());
          fallbacks.put("unavailable", m.fallbacksUnavailable.sum());
          fallbacks.put("error", m.fallbacksError.sum());
          fallbacks.put("invalid_answer", m.fallbacksInvalidAnswer.sum());
          fallbacks.put("breaker_open", m.fallbacksBreakerOpen.sum());
          fallbacks.put("version_mismatch", m.fallbacksVersionMismatch.sum());
          fallbacks.put("wait_heartbeats", m.fallbacksWaitHeartbeats.sum());
          fallbacks.put("wait_time", m.fallbacksWaitTime.sum());
          fallbacks.put("answer_containers_discarded", m.answerContainersDiscarded.sum());
          results.put("fallbacks", fallbacks);
          results.put("estimates", engine.metric("yarnrl_deeprm_runtime_estimates_total"));
          Files.writeString(work.resolve("results.json"), Json.write(results), StandardCharsets.UTF_8);

          assertEquals(JOBS.length, m.engineContainers.sum(),
              "every job's container came from the engine; fallbacks by reason: " + fallbacks);
          assertEquals(0, m.nativeContainers.sum(),
              "no container was scheduled natively; fallbacks by reason: " + fallbacks);
          assertEquals(0.0, engine.metric("yarnrl_deeprm_runtime_estimates_total"), "every job was tagged");
          for (long t : launch) {
            assertTrue(t > 0, "every job launched: " + launch);
          }
          // the real start order respects the emulator's waves: a job of an earlier wave launched before any
          // job of a later one
          for (int i = 0; i < expected.size(); i++) {
            for (int k = i + 1; k < expected.size(); k++) {
              for (int a : expected.get(i)) {
                for (int b : expected.get(k)) {
                  assertTrue(launch.get(a) < launch.get(b), "job " + a + " (wave " + i + ") launched at "
                      + launch.get(a) + ", not before job " + b + " (wave " + k + ") at " + launch.get(b)
                      + "; waves " + expected + ", launches " + launch);
                }
              }
            }
          }
        } finally {
          client.stop();
        }
      }
    }
  }

  private List<ApplicationId> submit(YarnClient client) throws Exception {
    List<ApplicationId> ids = new ArrayList<>();
    // the engine rounds times to whole steps of the wall clock: submitting a quarter step past a step boundary
    // puts every submission (a few ms late at most) in the step the script says
    long now = System.currentTimeMillis();
    long t0 = now - Math.floorMod(now, STEP_MS) + STEP_MS / 4;
    if (t0 < now) {
      t0 += STEP_MS;
    }
    for (int j = 0; j < JOBS.length; j++) {
      long wait = t0 + JOBS[j][0] * STEP_MS - System.currentTimeMillis();
      if (wait > 0) {
        Thread.sleep(wait);
      }
      ApplicationSubmissionContext ctx = client.createApplication().getApplicationSubmissionContext();
      long runtimeMs = JOBS[j][1] * STEP_MS;
      ctx.setApplicationName("deeprm-" + j);
      ctx.setMaxAppAttempts(1);
      ctx.setResource(Resource.newInstance((long) JOBS[j][2] * UNIT_MB, JOBS[j][3]));
      ctx.setApplicationTags(Set.of("yarnrl.expected-runtime-ms=" + runtimeMs));
      // the container sleeps and exits without registering as an AM: YARN ends the application when it exits
      ctx.setAMContainerSpec(ContainerLaunchContext.newInstance(Collections.emptyMap(), Collections.emptyMap(),
          List.of("sleep " + runtimeMs / 1000.0), null, null, null));
      ids.add(client.submitApplication(ctx));
    }
    return ids;
  }

  private static boolean finished(YarnClient client, List<ApplicationId> ids) {
    try {
      for (ApplicationId id : ids) {
        YarnApplicationState s = client.getApplicationReport(id).getYarnApplicationState();
        if (s != YarnApplicationState.FINISHED && s != YarnApplicationState.FAILED
            && s != YarnApplicationState.KILLED) {
          return false;
        }
      }
      return true;
    } catch (Exception e) {
      return false;
    }
  }

  /** The emulator's start waves for the script under a policy (python -m algorithms.deeprm.script). */
  private List<List<Integer>> emulatorWaves(String policy) throws Exception {
    StringBuilder jobs = new StringBuilder("[");
    for (int[] j : JOBS) {
      jobs.append(jobs.length() > 1 ? "," : "").append('[').append(j[0]).append(',').append(j[1]).append(',')
          .append(j[2]).append(',').append(j[3]).append(']');
    }
    jobs.append(']');
    List<String> cmd = new ArrayList<>(List.of(EngineProcess.python(), "-m", "algorithms.deeprm.script", "--policy",
        policy, "--jobs", jobs.toString()));
    if (policy.equals("deeprm-pg")) {
      cmd.addAll(List.of("--model", model.toString()));
    }
    Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "algorithms.deeprm.script timed out");
    assertEquals(0, p.exitValue(), "algorithms.deeprm.script failed: " + out);
    Matcher waves = Pattern.compile("\"waves\":\\s*\\[(.*)\\]\\}").matcher(out.trim());
    assertTrue(waves.find(), "no waves in " + out);
    List<List<Integer>> result = new ArrayList<>();
    Matcher wave = Pattern.compile("\\[([0-9, ]*)\\]").matcher(waves.group(1));
    while (wave.find()) {
      List<Integer> w = new ArrayList<>();
      for (String s : wave.group(1).split(",")) {
        if (!s.isBlank()) {
          w.add(Integer.parseInt(s.trim()));
        }
      }
      result.add(w);
    }
    return result;
  }

  private interface Check {
    boolean ok() throws Exception;
  }

  private static void waitFor(Check check, long seconds, String what) throws Exception {
    long until = System.currentTimeMillis() + seconds * 1000;
    while (System.currentTimeMillis() < until) {
      if (check.ok()) {
        return;
      }
      Thread.sleep(250);
    }
    throw new AssertionError("timed out after " + seconds + " s waiting for " + what);
  }
}
