package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * FIFO, Delay, ACL and CLQLMRS served to RlScheduler on one real mini cluster (one boot; only the engine is
 * restarted with another policy on the same address), over the same repeated HiBench-tiny WordCount with half of
 * its input files cached (the half MapReduce's task order schedules first, every replica): the locality-aware policies must beat FIFO where the issue says they do, every job must
 * succeed, and the plugin must not have fallen back to native scheduling for invalid answers (which is what an
 * answer against relaxLocality or the counts would be). CLQLMRS serves the Q-table trained on the emulator shaped
 * like this cluster (models/clqlmrs-mini.safetensors) and keeps learning online.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@SuppressWarnings("unchecked")
class PlacementPoliciesIT {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(PlacementPoliciesIT.class);
  private static final String[] POLICIES = {"fifo", "delay", "acl", "clqlmrs"};
  private static final int ROUNDS = Integer.getInteger("yarnrl.it.placement.rounds", 2);
  private static final int JOBS_PER_ROUND = 2;
  private static final int MAPS = 8;

  private final Path work = Path.of("target", "it-placement").toAbsolutePath();
  private final ObjectMapper json = new ObjectMapper();
  private final Map<String, Map<String, Long>> totals = new LinkedHashMap<>();
  private final Map<String, Object> results = new LinkedHashMap<>();
  private final Map<String, List<String>> strict = new LinkedHashMap<>();
  private EngineProcess engine;
  private LocalityLab lab;

  @BeforeAll
  void start() throws Exception {
    Files.createDirectories(work);
    engine = new EngineProcess("fifo", work.resolve("engine.log"));
    lab = new LocalityLab(work.resolve("cluster").toString(), engine.address(), 50);
    String input = "/hibench/wordcount/input";
    Map<?, ?> gen = json.readValue(lab.randomText(input, Workloads.WORDCOUNT_TINY_BYTES, MAPS, 1 << 20), Map.class);
    assertEquals(Boolean.TRUE, gen.get("succeeded"), gen.toString());
    List<String> files = lab.dataFiles(input);
    assertEquals(MAPS, files.size(), files.toString());
    // the half of the files MapReduce schedules first (dataFiles is in task order): its ApplicationMaster does not
    // prefer cached blocks, so a container on a node that caches a later map's block would run an earlier one.
    // Every replica of them is cached (cache replication 2 = the HDFS replication): with one cached replica (seed
    // 001's setting, which benchmarks/real_locality.py keeps) the policies' cache-local counts differ by about one
    // map in 32 on this 4-node cluster, too little to assert; with both, a map of a cached file is cache-local
    // exactly when it is node-local, and placement decides it.
    List<String> cached = new ArrayList<>(files.subList(0, MAPS / 2));
    lab.cache(cached, 2);
    String model = Path.of(System.getProperty("yarnrl.models", "../models"), "clqlmrs-mini.safetensors")
        .toAbsolutePath().toString();
    for (int round = 0; round < ROUNDS; round++) {
      for (int k = 0; k < POLICIES.length; k++) {
        String policy = POLICIES[(k + round) % POLICIES.length]; // rotate the order from round to round
        engine.usePolicy(policy);
        if (policy.equals("clqlmrs")) {
          engine.start("--webhdfs", lab.webHdfsUrl(), "--model", model,
              "--set", "save_to=" + work.resolve("clqlmrs-online.safetensors"));
        } else {
          engine.start("--webhdfs", lab.webHdfsUrl());
        }
        try {
          List<Integer> handles = new ArrayList<>();
          for (int j = 0; j < JOBS_PER_ROUND; j++) {
            String out = "/hibench/wordcount/out-" + policy + "-" + round + "-" + j;
            lab.delete(out);
            handles.add(lab.submit("wordcount", input, out, "yarnrl.input=" + input));
            Thread.sleep(2000);
          }
          for (int h : handles) {
            Map<String, Object> r = json.readValue(lab.awaitJob(h), Map.class);
            assertEquals(Boolean.TRUE, r.get("succeeded"), policy + ": " + r);
            Map<String, Long> t = totals.computeIfAbsent(policy, p -> new LinkedHashMap<>());
            for (Map.Entry<String, Object> e : r.entrySet()) {
              if (e.getValue() instanceof Number && !e.getKey().endsWith("_ms")) {
                t.merge(e.getKey(), ((Number) e.getValue()).longValue(), Long::sum);
              }
            }
            t.merge("JOB_MILLIS", Math.round(((Number) r.get("seconds")).doubleValue() * 1000), Long::sum);
          }
        } finally {
          engine.stop();
        }
      }
    }
    // containers that must run on h1 (relaxLocality=false on its rack and on ANY), under two policies: h2 shares
    // h1's rack and h3, h4 do not; neither may get one, whichever node heartbeats first
    for (String policy : new String[] {"fifo", "delay"}) {
      engine.usePolicy(policy);
      engine.start("--webhdfs", lab.webHdfsUrl());
      try {
        Map<?, ?> r = json.readValue(lab.strictRequests("h1", 3, 512, 60_000), Map.class);
        strict.put(policy, (List<String>) r.get("hosts"));
      } finally {
        engine.stop();
      }
    }
    results.put("strict_hosts", strict);
    results.put("totals", totals);
    results.put("plugin", lab.pluginMetrics());
    LOG.info("placement results: {}", Json.write(results));
  }

  @AfterAll
  void stop() throws Exception {
    try {
      Files.writeString(work.resolve("results.json"), Json.write(results), StandardCharsets.UTF_8);
    } finally {
      if (lab != null) {
        lab.close();
      }
      if (engine != null) {
        engine.close();
      }
    }
  }

  private long count(String policy, String counter) {
    return totals.get(policy).getOrDefault(counter, 0L);
  }

  @Test
  void everyMapRanAndWasProbed() {
    for (String p : POLICIES) {
      long maps = count(p, "TOTAL_LAUNCHED_MAPS");
      assertEquals((long) ROUNDS * JOBS_PER_ROUND * MAPS, maps, p + " " + totals.get(p));
      long probed = 0;
      for (String s : LocalityProbe.STATES) {
        probed += count(p, "READ_" + s);
      }
      assertEquals(maps, probed, p + " " + totals.get(p));
      // the probe and MapReduce agree on what was local (a cached replica on the node implies a disk one)
      assertEquals(count(p, "DATA_LOCAL_MAPS"), count(p, "READ_CL") + count(p, "READ_DL"), p + " " + totals.get(p));
    }
  }

  @Test
  void delayGetsMoreNodeAndCacheLocalMapsThanFifo() {
    assertTrue(count("delay", "DATA_LOCAL_MAPS") > count("fifo", "DATA_LOCAL_MAPS"), totals.toString());
  }

  @Test
  void aclAndClqlmrsGetMoreCacheLocalMapsThanFifo() {
    assertTrue(count("acl", "READ_CL") > count("fifo", "READ_CL"), totals.toString());
    assertTrue(count("clqlmrs", "READ_CL") > count("fifo", "READ_CL"), totals.toString());
  }

  @Test
  void nothingIsPlacedAgainstRelaxLocalityFalse() {
    assertEquals(List.of("fifo", "delay"), new ArrayList<>(strict.keySet()));
    for (Map.Entry<String, List<String>> e : strict.entrySet()) {
      assertEquals(List.of("h1", "h1", "h1"), e.getValue(), e.getKey() + ": " + strict);
    }
  }

  @Test
  void noAnswerWasRefusedAndNothingFellBackForLackOfAnEngine() throws IOException {
    Map<?, ?> plugin = json.readValue(lab.pluginMetrics(), Map.class);
    assertEquals(0, ((Number) plugin.get("fallbacks_invalid_answer")).intValue(), plugin.toString());
    assertTrue(((Number) plugin.get("engine_containers")).longValue() > 0, plugin.toString());
  }
}
