package org.yarnrl.federation;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.ObjectName;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.metrics2.util.MBeans;
import org.apache.hadoop.yarn.api.protocolrecords.ReservationSubmissionRequest;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.exceptions.YarnException;
import org.apache.hadoop.yarn.server.federation.policies.FederationPolicyInitializationContext;
import org.apache.hadoop.yarn.server.federation.policies.exceptions.FederationPolicyException;
import org.apache.hadoop.yarn.server.federation.policies.exceptions.FederationPolicyInitializationException;
import org.apache.hadoop.yarn.server.federation.policies.router.FederationRouterPolicy;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterId;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterInfo;
import org.apache.hadoop.yarn.server.federation.utils.FederationStateStoreFacade;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.yarnrl.v1.ClusterState;
import org.yarnrl.v1.RouteJob;
import org.yarnrl.v1.RouteRequest;
import org.yarnrl.v1.RouteResponse;
import org.yarnrl.yarn.RouteEngine;

/**
 * A YARN Federation Router policy that asks the policy engine's {@code Route} for each submission's home
 * sub-cluster (RL-FC, RL-LSFC and their baselines serve it).
 *
 * <p>The request holds one job (the Router sees one submission at a time: a one-job buffer), its metadata from the
 * application tags ({@link RouteTags}), and every candidate sub-cluster — active in the state store and not in the
 * submission's blacklist of failed tries — with its load from the state store (the RM's metrics JSON) and an
 * occupation history sampled every {@code yarnrl.federation.history.interval-ms}. The engine call has the
 * scheduler plugin's deadline, circuit breaker and protocol handshake ({@link RouteEngine}). An answer naming a
 * sub-cluster that is not a candidate (unknown, blacklisted, padding), a timeout, an error, an open breaker or
 * malformed tags route by the built-in rule instead — the candidate with the most available memory — counted by
 * reason ({@link RouterPolicyMetrics}) and logged once per reason.
 *
 * <p>Deploy it through {@link RlPolicyManager} ({@code yarn.federation.policy-manager}); settings in
 * {@link RouterSettings}.
 */
public class RlRouterPolicy implements FederationRouterPolicy {
  private static final Logger LOG = LoggerFactory.getLogger(RlRouterPolicy.class);
  private static final Pattern TRAILING_NUMBER = Pattern.compile("(\\d+)$");

  /** What every instance of the policy in this Router shares: one engine connection, counters, load history. */
  static final class Shared implements AutoCloseable {
    final RouterSettings settings;
    final RouteEngine engine;
    final RouterPolicyMetrics metrics;
    final Map<String, ArrayDeque<Float>> history = new HashMap<>();
    final AtomicLong sequence = new AtomicLong();
    final long startMillis = System.currentTimeMillis();
    final Set<RouterPolicyMetrics.Fallback> logged = Collections.synchronizedSet(new HashSet<>());
    private volatile FederationStateStoreFacade facade;
    private final ScheduledExecutorService sampler;
    /** The active sub-clusters as last read in the background (load.max-age-ms &gt; 0), and when. */
    private volatile LoadSnapshot snapshot;

    Shared(RouterSettings settings, Configuration conf, RouterPolicyMetrics metrics) {
      this.settings = settings;
      this.metrics = metrics;
      this.engine = settings.engineEnabled ? new RouteEngine(settings.engineAddress, conf, settings.deadlineMillis,
          settings.breakerFailures, settings.breakerOpenMillis) : null;
      metrics.engineAddress = settings.engineEnabled ? settings.engineAddress : "";
      if (engine != null) {
        metrics.breaker = engine::breakerState;
        metrics.handshake = engine::handshakeState;
      }
      sampler = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "yarnrl-router-load-history");
        t.setDaemon(true);
        return t;
      });
      sampler.scheduleWithFixedDelay(this::sample, settings.historyIntervalMillis, settings.historyIntervalMillis,
          TimeUnit.MILLISECONDS);
      if (settings.loadMaxAgeMillis > 0) {
        long every = Math.max(5, settings.loadMaxAgeMillis / 2);
        sampler.scheduleWithFixedDelay(this::refreshLoad, 0, every, TimeUnit.MILLISECONDS);
      }
    }

    void use(FederationStateStoreFacade f) {
      facade = f;
      if (settings.loadMaxAgeMillis > 0) {
        sampler.execute(this::refreshLoad);
      }
    }

    private void refreshLoad() {
      FederationStateStoreFacade f = facade;
      if (f == null) {
        return;
      }
      try {
        snapshot = new LoadSnapshot(System.nanoTime(), f.getSubClusters(true));
      } catch (Exception e) {
        LOG.debug("load copy: state store not readable now", e);
      }
    }

    /** The background copy of the active sub-clusters if it is fresh enough, else null (read the store). */
    Map<SubClusterId, SubClusterInfo> freshLoad() {
      LoadSnapshot s = snapshot;
      if (settings.loadMaxAgeMillis <= 0 || s == null
          || System.nanoTime() - s.nanos > TimeUnit.MILLISECONDS.toNanos(settings.loadMaxAgeMillis)) {
        return null;
      }
      return s.active;
    }

    private void sample() {
      FederationStateStoreFacade f = facade;
      if (f == null) {
        return;
      }
      try {
        for (Map.Entry<SubClusterId, SubClusterInfo> e : f.getSubClusters(true).entrySet()) {
          record(e.getKey().getId(), SubClusterLoad.parse(e.getValue().getCapability()));
        }
      } catch (Exception e) {
        LOG.debug("load history: state store not readable now", e);
      }
    }

    synchronized void record(String id, SubClusterLoad load) {
      ArrayDeque<Float> h = history.computeIfAbsent(id, k -> new ArrayDeque<>());
      h.addLast((float) load.occupation());
      while (h.size() > settings.historyLength) {
        h.removeFirst();
      }
    }

    /** The sub-cluster's occupation history, oldest first, padded at the front to the configured length. */
    synchronized List<Float> history(String id, SubClusterLoad now) {
      ArrayDeque<Float> h = history.get(id);
      List<Float> out = new ArrayList<>(settings.historyLength);
      float first = h == null || h.isEmpty() ? (float) now.occupation() : h.peekFirst();
      int have = h == null ? 0 : h.size();
      for (int i = have; i < settings.historyLength; i++) {
        out.add(first);
      }
      if (h != null) {
        out.addAll(h);
      }
      return out;
    }

    @Override
    public void close() {
      sampler.shutdownNow();
      if (engine != null) {
        engine.close();
      }
    }
  }

  private static final class LoadSnapshot {
    final long nanos;
    final Map<SubClusterId, SubClusterInfo> active;

    LoadSnapshot(long nanos, Map<SubClusterId, SubClusterInfo> active) {
      this.nanos = nanos;
      this.active = active;
    }
  }

  private static Shared shared;
  private static String sharedKey;
  private static ObjectName bean;
  private static final RouterPolicyMetrics METRICS = new RouterPolicyMetrics();

  /** One connection per Router: the policy is instantiated per queue and on every reinitialisation. */
  static synchronized Shared shared(RouterSettings settings, Configuration conf) {
    String key = settings.toString();
    if (shared == null || !key.equals(sharedKey)) {
      if (shared != null) {
        shared.close();
      }
      shared = new Shared(settings, conf, METRICS);
      sharedKey = key;
      LOG.info("yarn-rl Router policy: {}", settings);
    }
    if (bean == null) {
      try {
        bean = MBeans.register("Router", "RlRouterPolicy", METRICS);
      } catch (Exception e) { // a second registration in one JVM (tests): the counters are the same object
        LOG.debug("RlRouterPolicy MBean not registered", e);
      }
    }
    return shared;
  }

  /** Drops the shared connection (tests; a Router closes with its JVM). */
  static synchronized void resetShared() {
    if (shared != null) {
      shared.close();
      shared = null;
      sharedKey = null;
    }
  }

  static RouterPolicyMetrics metrics() {
    return METRICS;
  }

  private FederationStateStoreFacade facade;
  private Shared state;

  @Override
  public void reinitialize(FederationPolicyInitializationContext context)
      throws FederationPolicyInitializationException {
    if (context == null || context.getFederationStateStoreFacade() == null) {
      throw new FederationPolicyInitializationException("the policy needs the federation state store facade");
    }
    facade = context.getFederationStateStoreFacade();
    Configuration conf = facade.getConf();
    try {
      state = shared(RouterSettings.of(conf == null ? new Configuration() : conf),
          conf == null ? new Configuration() : conf);
    } catch (IllegalArgumentException e) {
      throw new FederationPolicyInitializationException("yarn-rl Router policy: " + e.getMessage());
    }
    state.use(facade);
  }

  /** A candidate sub-cluster as the engine sees it. */
  private static final class Candidate {
    final SubClusterId id;
    final SubClusterLoad load;
    int clusterId;

    Candidate(SubClusterId id, SubClusterLoad load) {
      this.id = id;
      this.load = load;
    }
  }

  @Override
  public SubClusterId getHomeSubcluster(ApplicationSubmissionContext app, List<SubClusterId> blackList)
      throws YarnException {
    long t0 = System.nanoTime();
    try {
      return decide(app, blackList);
    } finally {
      METRICS.recordMicros((System.nanoTime() - t0) / 1000);
    }
  }

  private SubClusterId decide(ApplicationSubmissionContext app, List<SubClusterId> blackList) throws YarnException {
    if (state == null) {
      throw new FederationPolicyException("yarn-rl Router policy used before reinitialize");
    }
    Set<SubClusterId> blocked = blackList == null ? Collections.emptySet() : new HashSet<>(blackList);
    long read0 = System.nanoTime();
    Map<SubClusterId, SubClusterInfo> active = state.freshLoad();
    if (active == null) {
      active = facade.getSubClusters(true);
    } else {
      METRICS.loadCopyReads.increment();
    }
    METRICS.recordStateStoreMicros((System.nanoTime() - read0) / 1000);
    List<Candidate> candidates = new ArrayList<>();
    for (Map.Entry<SubClusterId, SubClusterInfo> e : active.entrySet()) {
      if (!blocked.contains(e.getKey())) {
        candidates.add(new Candidate(e.getKey(), SubClusterLoad.parse(e.getValue().getCapability())));
      }
    }
    if (candidates.isEmpty()) {
      throw new FederationPolicyException("no active sub-cluster to route " + appId(app) + " to ("
          + active.size() + " active, blacklisted " + blocked + ")");
    }
    candidates.sort(Comparator.comparing(c -> c.id.getId()));
    numberClusters(candidates);
    METRICS.decisions.increment();

    RouteTags tags = RouteTags.parse(app == null ? null : app.getApplicationTags());
    if (!tags.problems.isEmpty()) {
      LOG.warn("application {}: malformed yarnrl tags {}; routing it by the built-in rule", appId(app),
          tags.problems);
      return fallback(candidates, RouterPolicyMetrics.Fallback.MALFORMED_TAGS, String.join("; ", tags.problems));
    }
    if (state.engine == null) {
      METRICS.builtinDecisions.increment();
      return chosen(builtin(candidates), "built-in");
    }
    RouteRequest request = request(app, tags, candidates);
    long call0 = System.nanoTime();
    RouteEngine.Answer answer = state.engine.route(request);
    METRICS.recordEngineMicros((System.nanoTime() - call0) / 1000);
    if (answer.outcome != RouteEngine.Outcome.ANSWERED) {
      return fallback(candidates, reason(answer.outcome), answer.detail);
    }
    RouteResponse r = answer.response;
    for (Candidate c : candidates) {
      if (c.clusterId == r.getClusterId() && r.getJobIndex() == 0) {
        state.engine.accepted();
        METRICS.engineDecisions.increment();
        return chosen(c.id, "engine " + r.getPolicy());
      }
    }
    String why = "the engine named cluster " + r.getClusterId() + " (job index " + r.getJobIndex() + ")";
    RouterPolicyMetrics.Fallback reason = RouterPolicyMetrics.Fallback.INVALID_ANSWER;
    for (SubClusterId b : blocked) {
      if (clusterNumber(b.getId(), -1) == r.getClusterId()) {
        reason = RouterPolicyMetrics.Fallback.BLACKLISTED;
        why += ", blacklisted for this submission";
      }
    }
    if (reason == RouterPolicyMetrics.Fallback.INVALID_ANSWER && r.getClusterId() >= PADDING_BASE) {
      reason = RouterPolicyMetrics.Fallback.PADDING_CHOSEN;
      why += ", a padding cluster";
    }
    state.engine.rejected(why);
    return fallback(candidates, reason, why + "; candidates " + ids(candidates));
  }

  /** Padding clusters get ids from here on (real ones are the sub-clusters' trailing numbers). */
  static final int PADDING_BASE = 100_000;

  /** cluster_id = the sub-cluster id's trailing number ("SC2" -> 2), else its rank among the candidates. */
  private static void numberClusters(List<Candidate> candidates) {
    Set<Integer> seen = new HashSet<>();
    boolean unique = true;
    for (Candidate c : candidates) {
      c.clusterId = clusterNumber(c.id.getId(), -1);
      unique &= c.clusterId >= 0 && c.clusterId < PADDING_BASE && seen.add(c.clusterId);
    }
    if (!unique) {
      for (int i = 0; i < candidates.size(); i++) {
        candidates.get(i).clusterId = i;
      }
    }
  }

  static int clusterNumber(String id, int otherwise) {
    Matcher m = TRAILING_NUMBER.matcher(id);
    if (!m.find() || m.group(1).length() > 9) {
      return otherwise;
    }
    return Integer.parseInt(m.group(1));
  }

  private RouteRequest request(ApplicationSubmissionContext app, RouteTags tags, List<Candidate> candidates) {
    RouterSettings s = state.settings;
    double stepMs = s.secondsPerStep * 1000.0;
    double runtime = tags.expectedRuntimeMs / stepMs;
    RouteJob.Builder job = RouteJob.newBuilder()
        .setJobId(appId(app))
        .setCategory(tags.category)
        .setExecutorRuntime(runtime)
        .setDuration(runtime)
        .setDeadline(tags.deadlineMs / stepMs)
        .setExecutions(1)
        .setSubmitTime((System.currentTimeMillis() - state.startMillis) / stepMs)
        .setExpectedHeteroFactor(1.0)
        .setHeteroSensitivity(1);
    int executors = (int) Math.max(1, Math.min(Integer.MAX_VALUE / 2, Math.round(tags.executors * s.jobScale)));
    for (int i = 0; i < 10; i++) {
      job.addRequestDistribution(executors);
    }
    long seq = state.sequence.getAndIncrement();
    RouteRequest.Builder req = RouteRequest.newBuilder()
        .setRequestId(s.streamId + ":" + seq)
        .setTime((System.currentTimeMillis() - state.startMillis) / stepMs)
        .addJobs(job)
        .setSequence(seq)
        .setStreamId(s.streamId);
    if (s.shapeCapacity.length > 0) {
      return shaped(req, candidates).build();
    }
    for (Candidate c : candidates) {
      SubClusterLoad l = c.load;
      long capacity = Math.max(0, l.totalMb) / s.executorMb;
      req.addClusters(ClusterState.newBuilder()
          .setClusterId(c.clusterId)
          .setSubCluster(c.id.getId())
          .setCapacity(capacity)
          .setMaxCapacity(capacity)
          .setCurrentCapacity(capacity)
          .setAvailable(Math.max(0, l.availableMb) / s.executorMb)
          .setHeteroFactor(1.0)
          .addAllOccupationHistory(state.history(c.id.getId(), l))
          .setQueuedJobs((int) Math.max(0, Math.min(Integer.MAX_VALUE, l.appsPending)))
          .setAvailableMb(l.availableMb)
          .setTotalMb(l.totalMb)
          .setAvailableVcores(l.availableVcores)
          .setTotalVcores(l.totalVcores)
          .setContainersPending(l.containersPending)
          .setAppsPending(l.appsPending)
          .setActiveNodes(l.activeNodes));
    }
    for (int i = candidates.size(); i < s.padClusters; i++) {
      ClusterState.Builder pad = ClusterState.newBuilder().setClusterId(PADDING_BASE + i).setPadding(true)
          .setSubCluster("").setHeteroFactor(1.0);
      for (int k = 0; k < s.historyLength; k++) {
        pad.addOccupationHistory(1.0f);
      }
      req.addClusters(pad);
    }
    return req.build();
  }

  /** The clusters in a model's shape ({@link RouterSettings#CLUSTER_SHAPE}): slot k is SC(k+1) or full padding. */
  private RouteRequest.Builder shaped(RouteRequest.Builder req, List<Candidate> candidates) {
    RouterSettings s = state.settings;
    Set<Candidate> placed = new HashSet<>();
    for (int k = 0; k < s.shapeCapacity.length; k++) {
      long cap = s.shapeCapacity[k];
      Candidate found = null;
      for (Candidate c : candidates) {
        if (c.clusterId == k + 1) {
          found = c;
        }
      }
      ClusterState.Builder b = ClusterState.newBuilder().setCapacity(cap).setMaxCapacity(cap).setCurrentCapacity(cap)
          .setHeteroFactor(s.shapeHetero[k]);
      if (found == null) {
        b.setClusterId(PADDING_BASE + k).setPadding(true).setAvailable(0);
        for (int i = 0; i < s.historyLength; i++) {
          b.addOccupationHistory(1.0f);
        }
      } else {
        placed.add(found);
        SubClusterLoad l = found.load;
        b.setClusterId(found.clusterId).setSubCluster(found.id.getId())
            .setAvailable(Math.round(cap * (1.0 - l.occupation())))
            .addAllOccupationHistory(state.history(found.id.getId(), l))
            .setQueuedJobs((int) Math.max(0, Math.min(Integer.MAX_VALUE, l.appsPending)))
            .setAvailableMb(l.availableMb).setTotalMb(l.totalMb).setAvailableVcores(l.availableVcores)
            .setTotalVcores(l.totalVcores).setContainersPending(l.containersPending).setAppsPending(l.appsPending)
            .setActiveNodes(l.activeNodes);
      }
      req.addClusters(b);
    }
    for (Candidate c : candidates) { // outside the shape: sent as-is; a model of that shape refuses the request
      if (!placed.contains(c)) {
        req.addClusters(ClusterState.newBuilder().setClusterId(c.clusterId).setSubCluster(c.id.getId())
            .setHeteroFactor(1.0).addAllOccupationHistory(state.history(c.id.getId(), c.load)));
      }
    }
    return req;
  }

  private static RouterPolicyMetrics.Fallback reason(RouteEngine.Outcome o) {
    switch (o) {
      case TIMEOUT:
        return RouterPolicyMetrics.Fallback.TIMEOUT;
      case UNAVAILABLE:
        return RouterPolicyMetrics.Fallback.UNAVAILABLE;
      case BREAKER_OPEN:
        return RouterPolicyMetrics.Fallback.BREAKER_OPEN;
      case VERSION_MISMATCH:
        return RouterPolicyMetrics.Fallback.VERSION_MISMATCH;
      default:
        return RouterPolicyMetrics.Fallback.ERROR;
    }
  }

  private SubClusterId fallback(List<Candidate> candidates, RouterPolicyMetrics.Fallback reason, String detail) {
    METRICS.fallback(reason);
    METRICS.lastFallback = reason.name() + ": " + detail;
    if (state.logged.add(reason)) { // once per reason; the counters have the rest
      LOG.warn("yarn-rl Router policy: routing by the built-in rule (most available memory), reason {}: {} "
          + "(logged once per reason; see the RlRouterPolicy JMX bean)", reason, detail);
    }
    return chosen(builtin(candidates), "built-in after " + reason);
  }

  /** The built-in rule: the candidate with the most available memory (ties and unknown load: the first by id). */
  static SubClusterId builtinChoice(Map<SubClusterId, SubClusterLoad> loads) {
    List<Candidate> c = new ArrayList<>();
    loads.forEach((id, l) -> c.add(new Candidate(id, l)));
    c.sort(Comparator.comparing(x -> x.id.getId()));
    return builtin(c);
  }

  private static SubClusterId builtin(List<Candidate> candidates) {
    Candidate best = candidates.get(0);
    for (Candidate c : candidates) {
      if (c.load.known() && (!best.load.known() || c.load.availableMb > best.load.availableMb)) {
        best = c;
      }
    }
    return best.id;
  }

  private static SubClusterId chosen(SubClusterId id, String how) {
    METRICS.lastDecision = id.getId() + " (" + how + ")";
    return id;
  }

  private static String appId(ApplicationSubmissionContext app) {
    return app == null || app.getApplicationId() == null ? "" : app.getApplicationId().toString();
  }

  private static List<String> ids(List<Candidate> candidates) {
    List<String> out = new ArrayList<>();
    for (Candidate c : candidates) {
      out.add(c.id.getId() + "=" + c.clusterId);
    }
    return out;
  }

  /** Reservations are routed by the built-in rule (the engine decides applications only). */
  @Override
  public SubClusterId getReservationHomeSubcluster(ReservationSubmissionRequest request) throws YarnException {
    Map<SubClusterId, SubClusterLoad> loads = new HashMap<>();
    for (Map.Entry<SubClusterId, SubClusterInfo> e : facade.getSubClusters(true).entrySet()) {
      loads.put(e.getKey(), SubClusterLoad.parse(e.getValue().getCapability()));
    }
    if (loads.isEmpty()) {
      throw new FederationPolicyException("no active sub-cluster for the reservation");
    }
    return builtinChoice(loads);
  }
}
