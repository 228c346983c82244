package org.yarnrl.yarn;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.apache.hadoop.conf.Configuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.yarnrl.v1.Event;
import org.yarnrl.v1.GetInfoResponse;
import org.yarnrl.v1.ScheduleRequest;
import org.yarnrl.v1.ScheduleResponse;

/**
 * One or several engines ({@code yarnrl.engine.address=host1:port,host2:port}), each an {@link EngineClient} with
 * its own channel and circuit breaker, and the one the scheduler asks: the <em>active</em> engine.
 *
 * <p>Rules (documented in yarn_plugin/README.md):
 * <ul>
 *   <li>A monitor thread health-checks every engine (grpc.health.v1) every {@value #HEALTH_INTERVAL_MS}, off the
 *       scheduler lock. An engine is SERVING, NOT_SERVING (it said so, e.g. while shutting down), or UNREACHABLE
 *       (refused, timed out, TLS/token refused: {@value #UNREACHABLE_CHECKS} checks in a row, also at start).</li>
 *   <li>The active engine starts as the first in the list. It is left for the first engine in list order that is
 *       SERVING with its breaker not open, as soon as its breaker opens (on the heartbeat that opens it) or a check
 *       finds it NOT_SERVING or UNREACHABLE. With none to go to it stays active and heartbeats fall back to native
 *       scheduling as with one engine.</li>
 *   <li>Failback: an engine earlier in the list that has been SERVING for {@value #FAILBACK_MS} (30 s by default)
 *       becomes active again; a negative value never fails back (stay on the engine that works). The wait keeps a
 *       flapping engine from taking heartbeats back on every good check.</li>
 *   <li>An engine seen SERVING again after an outage gets its breaker ended at once (probe on the next heartbeat)
 *       rather than at the end of {@code yarnrl.engine.breaker.open-ms}.</li>
 *   <li>Each engine keeps its own online-learned state: Report events go to the engine active when they happen,
 *       and nothing is copied between engines (see README "Engine failover").</li>
 * </ul>
 *
 * <p>The active engine's GetInfo is read on every check; a changed model version (live reload) is logged once.
 *
 * <p>Calls from the scheduler (allowCall, schedule, recordSuccess/recordFailure, report) come from one thread at a
 * time (the scheduler's lock); the monitor only switches the active engine between them, under this object's lock,
 * which no network call ever holds.
 */
final class EngineFailover implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EngineFailover.class);

  static final String HEALTH_INTERVAL_MS = "yarnrl.engine.health.interval-ms";
  static final long DEFAULT_HEALTH_INTERVAL_MS = 1000;
  static final String HEALTH_TIMEOUT_MS = "yarnrl.engine.health.timeout-ms";
  static final long DEFAULT_HEALTH_TIMEOUT_MS = 1000;
  static final String FAILBACK_MS = "yarnrl.engine.failback-ms";
  static final long DEFAULT_FAILBACK_MS = 30_000;
  /** Failed checks in a row before an engine that was SERVING counts as UNREACHABLE (one lost check is noise). */
  static final int UNREACHABLE_CHECKS = 2;

  /** What the monitor knows about one engine. */
  private static final class Endpoint {
    final EngineClient client;
    /** null until the first check. */
    volatile EngineClient.Health health;
    String detail = "";
    int failedChecks;
    long servingSince;
    String modelVersion;
    String modelChecksum;

    Endpoint(EngineClient client) {
      this.client = client;
    }
  }

  private final List<Endpoint> endpoints = new ArrayList<>();
  private final RlSchedulerMetrics metrics;
  private final LongSupplier clock;
  private final long healthTimeoutMillis;
  private final long failbackMillis;
  private final ScheduledExecutorService monitor;
  private volatile int active;
  /** The engine the last schedule() went to: its breaker gets that call's outcome. */
  private EngineClient lastUsed;
  private volatile java.util.function.Predicate<EngineClient> ready = c -> true;

  EngineFailover(List<String> addresses, EngineChannels channels, long deadlineMillis, int failureThreshold,
      long openMillis, long reportIntervalMillis, int reportQueueCapacity, RlSchedulerMetrics metrics,
      LongSupplier clock, long healthIntervalMillis, long healthTimeoutMillis, long failbackMillis) {
    if (addresses.isEmpty()) {
      throw new IllegalArgumentException("no engine address");
    }
    this.metrics = metrics;
    this.clock = clock;
    this.healthTimeoutMillis = healthTimeoutMillis;
    this.failbackMillis = failbackMillis;
    for (String a : addresses) {
      EngineClient c = new EngineClient(a, channels, deadlineMillis, failureThreshold, openMillis,
          reportIntervalMillis, reportQueueCapacity, metrics, clock);
      c.setActive(endpoints.isEmpty());
      endpoints.add(new Endpoint(c));
    }
    metrics.engineAddress = addresses.get(0);
    publishHealth();
    monitor = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "yarnrl-engine-monitor");
      t.setDaemon(true);
      return t;
    });
    monitor.scheduleWithFixedDelay(this::checkAll, 0, Math.max(10, healthIntervalMillis), TimeUnit.MILLISECONDS);
  }

  /** The engines of a {@code yarn-site.xml}: addresses, channel security, deadline, breaker, health and failback. */
  static EngineFailover fromConf(Configuration conf, String addressList, long deadlineMillis, int failureThreshold,
      long openMillis, long reportIntervalMillis, RlSchedulerMetrics metrics) {
    List<String> addresses = parseAddresses(addressList);
    long interval = conf.getLong(HEALTH_INTERVAL_MS, DEFAULT_HEALTH_INTERVAL_MS);
    long timeout = conf.getLong(HEALTH_TIMEOUT_MS, DEFAULT_HEALTH_TIMEOUT_MS);
    if (interval <= 0 || timeout <= 0) {
      throw new IllegalArgumentException(HEALTH_INTERVAL_MS + " and " + HEALTH_TIMEOUT_MS + " must be positive, got "
          + interval + " and " + timeout);
    }
    EngineChannels channels = EngineChannels.fromConf(conf);
    EngineFailover f = new EngineFailover(addresses, channels, deadlineMillis, failureThreshold, openMillis,
        reportIntervalMillis, 65536, metrics, System::currentTimeMillis, interval, timeout,
        conf.getLong(FAILBACK_MS, DEFAULT_FAILBACK_MS));
    LOG.info("yarn-rl engines {} ({}); health every {} ms, failback after {}", addresses, channels, interval,
        f.failbackMillis < 0 ? "never" : f.failbackMillis + " ms SERVING");
    return f;
  }

  /** {@code a:1, b:2} -> [a:1, b:2]; empty entries and duplicates are configuration errors. */
  static List<String> parseAddresses(String csv) {
    Set<String> out = new LinkedHashSet<>();
    for (String part : csv.split(",", -1)) {
      String a = part.trim();
      if (a.isEmpty()) {
        throw new IllegalArgumentException(RlScheduler.ENGINE_ADDRESS + "='" + csv + "' has an empty entry");
      }
      if (!out.add(a)) {
        throw new IllegalArgumentException(RlScheduler.ENGINE_ADDRESS + "='" + csv + "' lists " + a + " twice");
      }
    }
    return new ArrayList<>(out);
  }

  // ------------------------------------------------------------------ the scheduler's side (under its lock)

  /** Whether the next heartbeat may ask an engine: the active one, or another one the active's open breaker leaves. */
  synchronized boolean allowCall() {
    EngineClient a = endpoints.get(active).client;
    if (a.allowCall()) {
      return true;
    }
    int next = firstUsable(active);
    if (next < 0) {
      return false;
    }
    switchTo(next, a.address() + " circuit breaker open");
    return endpoints.get(next).client.allowCall();
  }

  ScheduleResponse schedule(ScheduleRequest request) throws EngineClient.CallFailed {
    EngineClient c = endpoints.get(active).client;
    lastUsed = c;
    return c.schedule(request);
  }

  synchronized void recordSuccess() {
    recordSuccess(lastUsed);
  }

  synchronized void recordFailure(String why) {
    recordFailure(lastUsed, why);
  }

  /** The answer of {@code used} (null: the active engine) was applied. */
  synchronized void recordSuccess(EngineClient used) {
    (used != null ? used : endpoints.get(active).client).recordSuccess();
  }

  /** The call to {@code used} (null: the active engine) failed; its breaker opening moves to another engine. */
  synchronized void recordFailure(EngineClient used, String why) {
    if (used == null) {
      used = endpoints.get(active).client;
    }
    used.recordFailure(why);
    if (used == endpoints.get(active).client && used.breakerState() == EngineClient.Breaker.OPEN) {
      int next = firstUsable(active);
      if (next >= 0) {
        switchTo(next, used.address() + " circuit breaker opened (" + why + ")");
      }
    }
  }

  /** The active engine: the one the next ask goes to. */
  EngineClient current() {
    return endpoints.get(active).client;
  }

  /** Every engine, in list order. */
  List<EngineClient> clients() {
    List<EngineClient> out = new ArrayList<>();
    for (Endpoint e : endpoints) {
      out.add(e.client);
    }
    return out;
  }

  /**
   * A further condition for an engine to be failed over to (the caller's protocol handshake with it succeeded);
   * set once, before the first heartbeat.
   */
  void setReady(java.util.function.Predicate<EngineClient> ready) {
    this.ready = ready;
  }

  /** Leave the active engine for the first usable other one, if there is one (e.g. its handshake is not done). */
  synchronized boolean switchAway(String why) {
    int next = firstUsable(active);
    if (next < 0) {
      return false;
    }
    switchTo(next, why);
    return true;
  }

  /** Feedback goes to the engine active now (its learner is the one whose decisions these are). */
  void report(Event event) {
    endpoints.get(active).client.report(event);
  }

  EngineClient.Breaker breakerState() {
    return endpoints.get(active).client.breakerState();
  }

  String address() {
    return endpoints.get(active).client.address();
  }

  GetInfoResponse info(long timeoutMillis) {
    return endpoints.get(active).client.info(timeoutMillis);
  }

  int size() {
    return endpoints.size();
  }

  /** The last health each engine was found in ({@code address=STATE}, list order). */
  String health() {
    StringBuilder b = new StringBuilder();
    for (Endpoint e : endpoints) {
      if (b.length() > 0) {
        b.append(',');
      }
      b.append(e.client.address()).append('=').append(e.health == null ? "UNKNOWN" : e.health.name());
    }
    return b.toString();
  }

  // ------------------------------------------------------------------ monitor

  /** The first engine in list order, other than {@code exclude}, that is SERVING with its breaker not open. */
  private int firstUsable(int exclude) {
    for (int i = 0; i < endpoints.size(); i++) {
      Endpoint e = endpoints.get(i);
      if (i != exclude && e.health == EngineClient.Health.SERVING
          && e.client.breakerState() != EngineClient.Breaker.OPEN && ready.test(e.client)) {
        return i;
      }
    }
    return -1;
  }

  private void switchTo(int next, String why) {
    if (next == active) {
      return;
    }
    Endpoint from = endpoints.get(active);
    Endpoint to = endpoints.get(next);
    from.client.setActive(false);
    active = next;
    to.client.setActive(true);
    metrics.engineAddress = to.client.address();
    metrics.failovers.increment();
    LOG.warn("yarn-rl engine failover: {} -> {} ({}); engines: {}", from.client.address(), to.client.address(), why,
        health());
  }

  private void checkAll() {
    try {
      long now = clock.getAsLong();
      for (int i = 0; i < endpoints.size(); i++) {
        check(i, endpoints.get(i), now);
      }
      synchronized (this) {
        decide(clock.getAsLong());
      }
      publishHealth();
      readModelVersion();
    } catch (RuntimeException e) {
      LOG.warn("yarn-rl engine monitor: {}", e.toString(), e); // never let the scheduled task die
    }
  }

  private void check(int index, Endpoint e, long now) {
    EngineClient.HealthCheck h = e.client.checkHealth(healthTimeoutMillis);
    EngineClient.Health before = e.health;
    EngineClient.Health after;
    if (h.health == EngineClient.Health.UNREACHABLE) {
      e.failedChecks++;
      // one lost check (a loaded machine, a GC pause) moves no traffic, also not at start (before == null)
      after = (before == null || before == EngineClient.Health.SERVING) && e.failedChecks < UNREACHABLE_CHECKS
          ? before : EngineClient.Health.UNREACHABLE;
    } else {
      e.failedChecks = 0;
      after = h.health;
    }
    if (after == EngineClient.Health.SERVING && before != EngineClient.Health.SERVING) {
      e.servingSince = now;
    }
    if (after != before && after != null) { // state changes only: a down engine's detail varies per check
      String msg = "yarn-rl engine " + e.client.address() + ": health " + (before == null ? "UNKNOWN" : before)
          + " -> " + h;
      if (after == EngineClient.Health.SERVING) {
        LOG.info(msg);
      } else {
        LOG.warn(msg);
      }
    }
    e.detail = h.detail;
    e.health = after;
    if (before != null && before != EngineClient.Health.SERVING && after == EngineClient.Health.SERVING) {
      // recovery: the active engine is probed on the next heartbeat; a standby may be failed over to again
      if (index == active) {
        e.client.probeNow("health SERVING again");
      } else {
        e.client.resetBreaker("health SERVING again");
      }
    }
  }

  private void decide(long now) {
    Endpoint a = endpoints.get(active);
    if (a.health != null && a.health != EngineClient.Health.SERVING) {
      int next = firstUsable(active);
      if (next >= 0) {
        switchTo(next, a.client.address() + " health " + a.health
            + (a.detail.isEmpty() ? "" : " (" + a.detail + ")"));
      }
      return;
    }
    if (failbackMillis < 0) {
      return;
    }
    for (int i = 0; i < active; i++) {
      Endpoint e = endpoints.get(i);
      if (e.health == EngineClient.Health.SERVING && now - e.servingSince >= failbackMillis
          && e.client.breakerState() != EngineClient.Breaker.OPEN && ready.test(e.client)) {
        switchTo(i, "failback: " + e.client.address() + " SERVING for " + (now - e.servingSince) + " ms");
        return;
      }
    }
  }

  private void publishHealth() {
    metrics.engineHealth = health();
  }

  /** GetInfo of the active engine; a model version or checksum different from the last one seen is logged once. */
  private void readModelVersion() {
    Endpoint e = endpoints.get(active);
    if (e.health != EngineClient.Health.SERVING) {
      return;
    }
    GetInfoResponse info;
    try {
      info = e.client.info(healthTimeoutMillis);
    } catch (RuntimeException ex) {
      LOG.debug("yarn-rl engine {}: GetInfo failed: {}", e.client.address(), ex.toString());
      return;
    }
    String version = info.getModelVersion();
    String checksum = info.getModelChecksum();
    if (e.modelVersion == null) {
      LOG.info("yarn-rl engine {}: policy {}, model {}{}", e.client.address(), info.getPolicy(),
          version.isEmpty() ? "-" : version, checksum.isEmpty() ? "" : " (sha256 " + checksum + ")");
    } else if (!Objects.equals(version, e.modelVersion) || !Objects.equals(checksum, e.modelChecksum)) {
      LOG.info("yarn-rl engine {}: model version changed {} -> {} (policy {}{})", e.client.address(),
          e.modelVersion.isEmpty() ? "-" : e.modelVersion, version.isEmpty() ? "-" : version, info.getPolicy(),
          checksum.isEmpty() ? "" : ", sha256 " + checksum);
      metrics.modelChanges.increment();
    }
    e.modelVersion = version;
    e.modelChecksum = checksum;
    metrics.engineModelVersion = version;
  }

  @Override
  public void close() {
    monitor.shutdownNow();
    try {
      monitor.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (Endpoint e : endpoints) {
      e.client.close();
    }
  }
}
