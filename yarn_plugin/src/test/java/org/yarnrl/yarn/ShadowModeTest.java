package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.resourcemanager.MockAM;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Shadow mode of RlScheduler (yarnrl.engine.mode=shadow) in a MockRM with a real `policy-engine serve`: the engine
 * is asked on the heartbeats, YARN places every container, the engine counts its would-be placements beside YARN's;
 * a refresh switches to active; a bad mode stops the RM with the key named.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ShadowModeTest {
  @RegisterExtension static final EngineProcess engine = EngineProcess.perTestClass("delay", "shadow-mode-test");

  private static YarnConfiguration shadowConf(String address) {
    YarnConfiguration conf = RlSchedulerTest.conf(address);
    conf.set(ShadowMode.MODE, "shadow");
    return conf;
  }

  private double metric(String name, String... labels) {
    try {
      return engine.metric(name, labels);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void inShadowModeYarnPlacesEveryContainerAndTheEngineRecordsItsChoiceBeside() throws Exception {
    double decisionsBefore = engine.metric("yarnrl_shadow_decisions_total");
    double yarnBefore = engine.metric("yarnrl_shadow_containers_total", "placed_by=\"yarn\"");
    try (MockCluster c = new MockCluster(shadowConf(engine.address()), 4, 8192, 8)) {
      RlScheduler s = assertInstanceOf(RlScheduler.class, c.rm.getResourceScheduler());
      RlSchedulerMetrics m = s.getRlMetrics();
      MockCluster.waitFor(() -> "OK".equals(m.getHandshakeState()), "handshake, have " + m);
      MockAM am = c.startApp("default", "alice");
      MockCluster.ask(am, 8, 1024);
      List<List<Container>> got = c.run(List.of(am), 8);
      assertEquals(8, got.get(0).size(), m.toString());
      assertEquals(0, m.getEngineContainers(), m.toString()); // nothing the engine said was applied
      assertEquals(9, m.getNativeContainers(), m.toString()); // 8 + the AM, all YARN's
      ShadowMode shadow = s.getShadow();
      assertTrue(shadow.asked.sum() >= 1, shadow.toString());
      MockCluster.waitFor(() -> shadow.reported.sum() == 9, "every native container reported, have " + shadow);
      MockCluster.waitFor(() -> shadow.answered.sum() + shadow.failed.sum() == shadow.asked.sum(),
          "every shadow ask answered, have " + shadow);
      assertEquals(0, shadow.failed.sum(), shadow.toString());
      // the engine saw every shadow ask as such, and YARN's 9 containers as shadow placements
      MockCluster.waitFor(() -> metric("yarnrl_shadow_decisions_total") - decisionsBefore
          == shadow.answered.sum(), "the engine counted every shadow decision");
      MockCluster.waitFor(() -> metric("yarnrl_shadow_containers_total", "placed_by=\"yarn\"") - yarnBefore
          == 9, "the engine counted YARN's 9 containers");
      assertTrue(engine.metric("yarnrl_shadow_containers_total", "placed_by=\"engine\"") > 0);
    }
  }

  @Test
  void aRefreshSwitchesShadowToActiveWithoutARestart() throws Exception {
    YarnConfiguration conf = shadowConf(engine.address());
    try (MockCluster c = new MockCluster(conf, 4, 8192, 8)) {
      RlScheduler s = assertInstanceOf(RlScheduler.class, c.rm.getResourceScheduler());
      RlSchedulerMetrics m = s.getRlMetrics();
      MockCluster.waitFor(() -> "OK".equals(m.getHandshakeState()), "handshake, have " + m);
      YarnConfiguration active = new YarnConfiguration(conf);
      active.set(ShadowMode.MODE, "active");
      s.reinitialize(active, c.rm.getRMContext());
      MockAM am = c.startApp("default", "alice");
      MockCluster.ask(am, 6, 1024);
      assertEquals(6, c.run(List.of(am), 6).get(0).size(), m.toString());
      assertTrue(m.getEngineContainers() >= 1, m.toString()); // the engine places again
      YarnConfiguration bad = new YarnConfiguration(conf);
      bad.set(ShadowMode.MODE, "canary");
      Exception e = assertThrows(Exception.class, () -> s.reinitialize(bad, c.rm.getRMContext()));
      assertTrue(e.getMessage().contains("yarnrl.engine.mode must be 'active' or 'shadow', got 'canary'"),
          e.getMessage());
      assertEquals("active", m.getEngineMode(), "a refused refresh keeps the mode in force");

      // a real RM refreshes with the configuration it read at start: the mode comes from yarn-site.xml as edited
      // since, read through the RM's configuration provider (here: a yarn-site.xml on the conf's class loader)
      Path site = Files.createTempDirectory(Path.of("target"), "yarn-site");
      Files.writeString(site.resolve("yarn-site.xml"), "<configuration><property><name>" + ShadowMode.MODE
          + "</name><value>shadow</value></property></configuration>");
      YarnConfiguration atStart = new YarnConfiguration(active); // says active
      atStart.setClassLoader(new java.net.URLClassLoader(new java.net.URL[] {site.toUri().toURL()},
          getClass().getClassLoader()));
      s.reinitialize(atStart, c.rm.getRMContext());
      assertEquals("shadow", m.getEngineMode(), m.toString());
    }
  }

  @Test
  void anUnknownModeStopsTheRmWithTheKeyNamed() {
    YarnConfiguration conf = RlSchedulerTest.conf(engine.address());
    conf.set(ShadowMode.MODE, "shaddow");
    Throwable e = assertThrows(Throwable.class, () -> new MockCluster(conf, 1, 8192, 8).close());
    while (e.getCause() != null && !String.valueOf(e.getMessage()).contains(ShadowMode.MODE)) {
      e = e.getCause();
    }
    assertTrue(String.valueOf(e.getMessage()).contains("yarnrl.engine.mode must be 'active' or 'shadow', got "
        + "'shaddow'"), String.valueOf(e.getMessage()));
  }
}
