package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.yarnrl.v1.ScheduleRequest;

/**
 * Failover among grpc-java engines on loopback: the first healthy engine is used, the active one is left on breaker
 * open or health NOT_SERVING/unreachable, failback waits for the configured SERVING time (or never), and a model
 * version change is counted once. Waits poll with generous limits (the health monitor runs every 100 ms here).
 */
class EngineFailoverTest {
  private final RlSchedulerMetrics metrics = new RlSchedulerMetrics();
  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void close() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  private TestEngines.Fake fake(String name) throws Exception {
    TestEngines.Fake f = new TestEngines.Fake(name, null, null);
    open.add(f);
    return f;
  }

  private EngineFailover failover(long failbackMs, String... addresses) {
    EngineFailover f = new EngineFailover(List.of(addresses), EngineChannels.plaintext(), 5000, 3, 60_000, 20, 64,
        metrics, System::currentTimeMillis, 100, 3000, failbackMs);
    open.add(f);
    return f;
  }

  private static void await(String what, BooleanSupplier condition) throws InterruptedException {
    long until = System.currentTimeMillis() + 30_000;
    while (!condition.getAsBoolean()) {
      if (System.currentTimeMillis() > until) {
        throw new AssertionError("not within 30 s: " + what);
      }
      Thread.sleep(50);
    }
  }

  private static String decide(EngineFailover f) throws Exception {
    assertTrue(f.allowCall());
    String d = f.schedule(ScheduleRequest.getDefaultInstance()).getDecisionId();
    f.recordSuccess();
    return d;
  }

  @Test
  void theFirstHealthyEngineIsUsed() throws Exception {
    TestEngines.Fake b = fake("b");
    String down = "127.0.0.1:" + EngineProcess.freePort();
    EngineFailover f = failover(30_000, down, b.address());
    await("switch to b", () -> f.address().equals(b.address()));
    assertEquals("b", decide(f));
    assertEquals(b.address(), metrics.getEngineAddress());
    assertTrue(metrics.getEngineHealth().contains(down + "=UNREACHABLE"), metrics.getEngineHealth());
    assertEquals(1, metrics.getFailovers());
  }

  @Test
  void breakerOpenFailsOverOnThatHeartbeatAndFailbackWaitsForTheSetTime() throws Exception {
    TestEngines.Fake a = fake("a");
    TestEngines.Fake b = fake("b");
    EngineFailover f = failover(1500, a.address(), b.address());
    await("both SERVING, a active", () -> metrics.getEngineHealth().equals(a.address() + "=SERVING," + b.address()
        + "=SERVING") && f.address().equals(a.address()));
    assertEquals("a", decide(f));
    a.scheduleError.set(Status.INTERNAL.withDescription("broken policy"));
    for (int i = 0; i < 3; i++) {
      assertTrue(f.allowCall());
      assertThrows(EngineClient.CallFailed.class, () -> f.schedule(ScheduleRequest.getDefaultInstance()));
      f.recordFailure("broken policy");
    }
    // a's breaker opened on the third failure: the same heartbeat's bookkeeping moved to b
    assertEquals(b.address(), f.address());
    assertEquals("CLOSED", metrics.getBreakerState()); // b's breaker
    assertEquals("b", decide(f));
    // a is healthy (its health service never stopped) but its breaker is open: no failback until a recovers
    Thread.sleep(2000);
    assertEquals(b.address(), f.address());
    // a goes NOT_SERVING and comes back: after 1.5 s SERVING it is preferred again
    a.scheduleError.set(null);
    a.health.set(ServingStatus.NOT_SERVING);
    await("a NOT_SERVING", () -> metrics.getEngineHealth().contains(a.address() + "=NOT_SERVING"));
    a.health.set(ServingStatus.SERVING);
    long back = System.currentTimeMillis();
    await("failback to a", () -> f.address().equals(a.address()));
    assertTrue(System.currentTimeMillis() - back >= 1400, "failback before the failback time");
    assertEquals("a", decide(f));
    assertEquals(2, metrics.getFailovers());
  }

  @Test
  void notServingFailsOverAndNegativeFailbackStays() throws Exception {
    TestEngines.Fake a = fake("a");
    TestEngines.Fake b = fake("b");
    EngineFailover f = failover(-1, a.address(), b.address());
    await("both SERVING", () -> metrics.getEngineHealth().endsWith(b.address() + "=SERVING"));
    assertEquals("a", decide(f));
    a.health.set(ServingStatus.NOT_SERVING);
    await("switch to b", () -> f.address().equals(b.address()));
    assertEquals("b", decide(f));
    a.health.set(ServingStatus.SERVING);
    await("a SERVING", () -> metrics.getEngineHealth().startsWith(a.address() + "=SERVING"));
    Thread.sleep(1000);
    assertEquals(b.address(), f.address()); // never fails back
  }

  @Test
  void aKilledEngineFailsOverAndWithNoneLeftHeartbeatsGoNative() throws Exception {
    TestEngines.Fake a = fake("a");
    TestEngines.Fake b = fake("b");
    EngineFailover f = failover(-1, a.address(), b.address());
    await("both SERVING", () -> metrics.getEngineHealth().endsWith(b.address() + "=SERVING"));
    a.close();
    await("switch to b", () -> f.address().equals(b.address()));
    assertEquals("b", decide(f));
    b.close();
    // b's calls fail; with no healthy engine left the breaker opens and heartbeats are refused (native)
    for (int i = 0; i < 3; i++) {
      if (!f.allowCall()) {
        break;
      }
      assertThrows(EngineClient.CallFailed.class, () -> f.schedule(ScheduleRequest.getDefaultInstance()));
      f.recordFailure("down");
    }
    assertFalse(f.allowCall());
    assertEquals("OPEN", metrics.getBreakerState());
  }

  @Test
  void aModelVersionChangeIsCountedOnce() throws Exception {
    TestEngines.Fake a = fake("a");
    EngineFailover f = failover(30_000, a.address());
    await("v1 seen", () -> metrics.getEngineModelVersion().equals("v1"));
    a.modelVersion.set("v2");
    await("v2 seen", () -> metrics.getEngineModelVersion().equals("v2"));
    Thread.sleep(500); // several more checks
    assertEquals(1, metrics.getModelChanges());
    assertEquals("a", decide(f));
  }

  @Test
  void addressListsAreChecked() {
    assertEquals(List.of("a:1", "b:2"), EngineFailover.parseAddresses(" a:1 , b:2"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> EngineFailover.parseAddresses("a:1,,b:2"))
        .getMessage().contains("empty entry"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> EngineFailover.parseAddresses("a:1,a:1"))
        .getMessage().contains("twice"));
  }
}
