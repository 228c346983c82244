package org.yarnrl.federation;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.metrics2.util.MBeans;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.exceptions.YarnException;
import org.apache.hadoop.yarn.server.federation.policies.FederationPolicyInitializationContext;
import org.apache.hadoop.yarn.server.federation.policies.amrmproxy.AbstractAMRMProxyPolicy;
import org.apache.hadoop.yarn.server.federation.policies.exceptions.FederationPolicyInitializationException;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterId;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterInfo;
import org.apache.hadoop.yarn.server.federation.utils.FederationStateStoreFacade;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.yarnrl.v1.ManagerView;
import org.yarnrl.v1.RouteRequest;
import org.yarnrl.v1.RouteResponse;
import org.yarnrl.yarn.RouteEngine;

/**
 * DSRAP's resource sharing across YARN Federation sub-clusters, in a NodeManager's AMRMProxy
 * ({@code FederationInterceptor}): the home sub-cluster is a DSRAP cluster manager, the other active sub-clusters
 * are its neighbours, and each container an ApplicationMaster asks for (at {@code ANY}) is a task. When an ask is
 * new or grows, the policy sends the manager's view to the engine's {@code Route} (a {@link ManagerView}: the home
 * sub-cluster as one node with its headroom, vcores in the CPU columns and memory in GB in the network columns, as
 * DSRAP has CPU and network) and splits the ask as the engine decided: a task allocated on the node or kept stays
 * home, a task forwarded goes to that neighbour. An unchanged ask reuses its last split; a shrinking one is trimmed
 * without a call, first where the sub-clusters' allocations (seen in {@link #notifyOfResponse}) explain it, so each
 * RM is sent what it still has outstanding, then largest share first. Node- and rack-level requests always stay
 * home. Counters: {@link AMRMProxyPolicyMXBean}.
 *
 * <p>Never worse than the home sub-cluster alone: with the engine off ({@code yarnrl.federation.amrmproxy.enabled},
 * default false), or on a timeout, error, open breaker or invalid answer, the whole ask goes home (Hadoop's
 * {@code HomeAMRMProxyPolicy}), counted per reason and logged once. Headroom comes from {@link #notifyOfResponse},
 * else from the state store's load.
 */
public class RlAMRMProxyPolicy extends AbstractAMRMProxyPolicy {
  private static final Logger LOG = LoggerFactory.getLogger(RlAMRMProxyPolicy.class);
  static final String ENABLED = RouterSettings.PREFIX + "amrmproxy.enabled";
  /** At most this many containers of one call become tasks of the view; the rest of a larger ask stays home. */
  static final String MAX_TASKS = RouterSettings.PREFIX + "amrmproxy.max-tasks";
  /** A neighbour that has not answered an allocate call this long after getting a share gives it back home. */
  static final String NEIGHBOUR_TIMEOUT_MS = RouterSettings.PREFIX + "amrmproxy.neighbour-timeout-ms";

  /** Why an ask went home whole instead of as the engine split it. */
  enum Fallback { DISABLED, TIMEOUT, UNAVAILABLE, ERROR, BREAKER_OPEN, VERSION_MISMATCH, INVALID_ANSWER,
    NEIGHBOUR_SILENT }

  /**
   * Counters of one JVM's AMRMProxy policies, on the NodeManager's JMX as
   * {@code Hadoop:service=NodeManager,name=RlAMRMProxyPolicy} (its web UI's {@code /jmx}); tests read them too.
   */
  static final class Counters implements AMRMProxyPolicyMXBean {
    final AtomicLong splits = new AtomicLong();
    final AtomicLong engineCalls = new AtomicLong();
    final AtomicLong reusedSplits = new AtomicLong();
    final AtomicLong containersHome = new AtomicLong();
    final AtomicLong containersForwarded = new AtomicLong();
    final AtomicLong allocatedHome = new AtomicLong();
    final AtomicLong allocatedNeighbours = new AtomicLong();
    final Map<Fallback, AtomicLong> fallbacks = new ConcurrentHashMap<>();
    final Set<Fallback> logged = ConcurrentHashMap.newKeySet();
    volatile String lastSplit = "";

    long fallbacks(Fallback f) {
      AtomicLong v = fallbacks.get(f);
      return v == null ? 0 : v.get();
    }

    @Override
    public String getEngineAddress() {
      synchronized (RlAMRMProxyPolicy.class) {
        return sharedEngine == null ? "" : sharedEngine.address();
      }
    }

    @Override
    public String getHandshakeState() {
      return handshakeState();
    }

    @Override
    public String getBreakerState() {
      synchronized (RlAMRMProxyPolicy.class) {
        return sharedEngine == null ? "NONE" : sharedEngine.breakerState();
      }
    }

    @Override
    public String getLastSplit() {
      return lastSplit;
    }

    @Override
    public long getSplits() {
      return splits.get();
    }

    @Override
    public long getEngineCalls() {
      return engineCalls.get();
    }

    @Override
    public long getReusedSplits() {
      return reusedSplits.get();
    }

    @Override
    public long getContainersHome() {
      return containersHome.get();
    }

    @Override
    public long getContainersForwarded() {
      return containersForwarded.get();
    }

    @Override
    public long getContainersAllocatedHome() {
      return allocatedHome.get();
    }

    @Override
    public long getContainersAllocatedNeighbours() {
      return allocatedNeighbours.get();
    }

    @Override
    public long getFallbacksDisabled() {
      return fallbacks(Fallback.DISABLED);
    }

    @Override
    public long getFallbacksTimeout() {
      return fallbacks(Fallback.TIMEOUT);
    }

    @Override
    public long getFallbacksUnavailable() {
      return fallbacks(Fallback.UNAVAILABLE);
    }

    @Override
    public long getFallbacksError() {
      return fallbacks(Fallback.ERROR);
    }

    @Override
    public long getFallbacksBreakerOpen() {
      return fallbacks(Fallback.BREAKER_OPEN);
    }

    @Override
    public long getFallbacksVersionMismatch() {
      return fallbacks(Fallback.VERSION_MISMATCH);
    }

    @Override
    public long getFallbacksInvalidAnswer() {
      return fallbacks(Fallback.INVALID_ANSWER);
    }

    @Override
    public long getFallbacksNeighbourSilent() {
      return fallbacks(Fallback.NEIGHBOUR_SILENT);
    }

    @Override
    public long getFallbacksTotal() {
      long n = 0;
      for (AtomicLong v : fallbacks.values()) {
        n += v.get();
      }
      return n;
    }
  }

  static final Counters COUNTERS = new Counters();
  private static Object bean;

  private static RouteEngine sharedEngine;
  private static String sharedKey;

  /** One engine connection per NodeManager: a policy is made per ApplicationMaster. */
  private static synchronized RouteEngine engine(RouterSettings s, Configuration conf) {
    String key = s.engineAddress + "/" + s.deadlineMillis + "/" + s.breakerFailures + "/" + s.breakerOpenMillis;
    if (sharedEngine == null || !key.equals(sharedKey)) {
      if (sharedEngine != null) {
        sharedEngine.close();
      }
      sharedEngine = new RouteEngine(s.engineAddress, conf, s.deadlineMillis, s.breakerFailures,
          s.breakerOpenMillis);
      sharedKey = key;
      LOG.info("yarn-rl AMRMProxy policy: DSRAP splits from the engine at {} (deadline {} ms)", s.engineAddress,
          s.deadlineMillis);
    }
    if (bean == null) {
      try {
        bean = MBeans.register("NodeManager", "RlAMRMProxyPolicy", COUNTERS);
      } catch (Exception e) { // a second registration in one JVM (tests): the counters are the same object
        LOG.debug("RlAMRMProxyPolicy MBean not registered", e);
      }
    }
    return sharedEngine;
  }

  /** The shared connection's protocol handshake (tests): "OK" once the engine may be asked. */
  static synchronized String handshakeState() {
    return sharedEngine == null ? "NONE" : sharedEngine.handshakeState();
  }

  /** Drops the shared connection (tests; a NodeManager closes it with its JVM). */
  public static synchronized void resetShared() {
    if (sharedEngine != null) {
      sharedEngine.close();
      sharedEngine = null;
      sharedKey = null;
    }
  }

  /** An ANY ask's identity across allocate calls. */
  private static final class AskKey {
    final int priority;
    final long allocationRequestId;
    final long memoryMb;
    final int vcores;
    final String executionType;

    AskKey(ResourceRequest r) {
      priority = r.getPriority() == null ? 0 : r.getPriority().getPriority();
      allocationRequestId = r.getAllocationRequestId();
      Resource c = r.getCapability();
      memoryMb = c == null ? 0 : c.getMemorySize();
      vcores = c == null ? 0 : c.getVirtualCores();
      executionType = r.getExecutionTypeRequest() == null ? "" : String.valueOf(
          r.getExecutionTypeRequest().getExecutionType());
    }

    @Override
    public boolean equals(Object o) {
      if (!(o instanceof AskKey)) {
        return false;
      }
      AskKey k = (AskKey) o;
      return priority == k.priority && allocationRequestId == k.allocationRequestId && memoryMb == k.memoryMb
          && vcores == k.vcores && executionType.equals(k.executionType);
    }

    @Override
    public int hashCode() {
      return Objects.hash(priority, allocationRequestId, memoryMb, vcores, executionType);
    }
  }

  /** An allocated container's ask, as far as a {@link Container} names it. */
  private static final class AllocKey {
    final int priority;
    final long allocationRequestId;

    AllocKey(int priority, long allocationRequestId) {
      this.priority = priority;
      this.allocationRequestId = allocationRequestId;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof AllocKey && ((AllocKey) o).priority == priority
          && ((AllocKey) o).allocationRequestId == allocationRequestId;
    }

    @Override
    public int hashCode() {
      return Objects.hash(priority, allocationRequestId);
    }
  }

  private FederationStateStoreFacade facade;
  private SubClusterId home;
  private RouterSettings settings;
  private boolean enabled;
  private int maxTasks;
  private long neighbourTimeoutNanos;
  /** When each sub-cluster last answered an allocate call, and since when a neighbour holds a share. */
  private final Map<SubClusterId, Long> lastAnswerNanos = new ConcurrentHashMap<>();
  private final Map<SubClusterId, Long> sharedSinceNanos = new HashMap<>();
  private Configuration conf;
  private final Map<SubClusterId, Resource> headroom = new ConcurrentHashMap<>();
  /** Per ANY ask: the count it was last split for and the split (sub-clusters that ever got a share stay in it). */
  private final Map<AskKey, Integer> lastCount = new HashMap<>();
  private final Map<AskKey, Map<SubClusterId, Integer>> lastSplit = new HashMap<>();
  /** Containers each sub-cluster allocated per (priority, allocation request id), not yet matched to a shrink. */
  private final Map<AllocKey, Map<SubClusterId, Integer>> allocated = new HashMap<>();
  private final AtomicLong requests = new AtomicLong();

  @Override
  public void reinitialize(FederationPolicyInitializationContext context)
      throws FederationPolicyInitializationException {
    if (context == null || context.getFederationStateStoreFacade() == null || context.getHomeSubcluster() == null) {
      throw new FederationPolicyInitializationException(
          "the yarn-rl AMRMProxy policy needs the state store facade and the home sub-cluster");
    }
    facade = context.getFederationStateStoreFacade();
    home = context.getHomeSubcluster();
    conf = facade.getConf() == null ? new Configuration() : facade.getConf();
    String on = conf.getTrimmed(ENABLED, "false");
    if (!on.equalsIgnoreCase("true") && !on.equalsIgnoreCase("false")) {
      throw new FederationPolicyInitializationException(ENABLED + " must be true or false, got '" + on + "'");
    }
    enabled = Boolean.parseBoolean(on);
    String mt = conf.getTrimmed(MAX_TASKS, "64");
    try {
      maxTasks = Integer.parseInt(mt);
    } catch (NumberFormatException e) {
      maxTasks = -1;
    }
    if (maxTasks < 1 || maxTasks > 100_000) {
      throw new FederationPolicyInitializationException(MAX_TASKS + " must be an integer in [1, 100000], got '"
          + mt + "'");
    }
    String nt = conf.getTrimmed(NEIGHBOUR_TIMEOUT_MS, "30000");
    long timeoutMs;
    try {
      timeoutMs = Long.parseLong(nt);
    } catch (NumberFormatException e) {
      timeoutMs = -1;
    }
    if (timeoutMs < 1000 || timeoutMs > 600_000) {
      throw new FederationPolicyInitializationException(NEIGHBOUR_TIMEOUT_MS
          + " must be an integer in [1000, 600000], got '" + nt + "'");
    }
    neighbourTimeoutNanos = timeoutMs * 1_000_000L;
    try {
      settings = RouterSettings.of(enabled ? conf : withoutEngine(conf));
    } catch (IllegalArgumentException e) {
      throw new FederationPolicyInitializationException("yarn-rl AMRMProxy policy: " + e.getMessage());
    }
    if (enabled) {
      engine(settings, conf); // connects and starts the version handshake before the first ask
    }
    setPolicyContext(context);
  }

  private static Configuration withoutEngine(Configuration conf) {
    Configuration c = new Configuration(conf);
    c.set(RouterSettings.ENABLED, "false");
    return c;
  }

  @Override
  public void notifyOfResponse(SubClusterId subClusterId, AllocateResponse response) throws YarnException {
    if (subClusterId == null || response == null) {
      return;
    }
    lastAnswerNanos.put(subClusterId, System.nanoTime());
    if (response.getAvailableResources() != null) {
      headroom.put(subClusterId, response.getAvailableResources());
    }
    List<Container> got = response.getAllocatedContainers();
    if (got == null || got.isEmpty()) {
      return;
    }
    (subClusterId.equals(home) ? COUNTERS.allocatedHome : COUNTERS.allocatedNeighbours).addAndGet(got.size());
    synchronized (allocated) {
      for (Container c : got) {
        allocated.computeIfAbsent(new AllocKey(c.getPriority() == null ? 0 : c.getPriority().getPriority(),
            c.getAllocationRequestId()), x -> new HashMap<>()).merge(subClusterId, 1, Integer::sum);
      }
    }
  }

  /**
   * Of a shrink by {@code remove}, the part the sub-clusters' own allocations explain: each allocation seen since
   * the split lowers its sub-cluster's share, so the counts sent again are what each RM still has outstanding and
   * DSRAP's split holds. Returns how many were taken this way.
   */
  private int takeAllocated(AskKey k, Map<SubClusterId, Integer> split, int remove) {
    int taken = 0;
    synchronized (allocated) {
      Map<SubClusterId, Integer> seen = allocated.get(new AllocKey(k.priority, k.allocationRequestId));
      if (seen == null) {
        return 0;
      }
      for (Map.Entry<SubClusterId, Integer> e : seen.entrySet()) {
        int share = split.getOrDefault(e.getKey(), 0);
        int d = Math.min(Math.min(e.getValue(), share), remove - taken);
        if (d > 0) {
          split.put(e.getKey(), share - d);
          e.setValue(e.getValue() - d);
          taken += d;
        }
      }
      seen.values().removeIf(v -> v <= 0);
    }
    return taken;
  }

  @Override
  public synchronized Map<SubClusterId, List<ResourceRequest>> splitResourceRequests(
      List<ResourceRequest> resourceRequests, Set<SubClusterId> timedOutSubClusters) throws YarnException {
    Map<SubClusterId, List<ResourceRequest>> out = new LinkedHashMap<>();
    if (resourceRequests == null || resourceRequests.isEmpty()) {
      return out;
    }
    COUNTERS.splits.incrementAndGet();
    Set<SubClusterId> timedOut = timedOutSubClusters == null ? Collections.emptySet() : timedOutSubClusters;
    List<ResourceRequest> asks = new ArrayList<>();
    for (ResourceRequest r : resourceRequests) {
      if (ResourceRequest.isAnyLocation(r.getResourceName())) {
        asks.add(r);
      } else {
        add(out, home, r);   // node and rack requests name the home sub-cluster's machines
      }
    }
    List<ResourceRequest> toDecide = new ArrayList<>();
    for (ResourceRequest r : asks) {
      AskKey k = new AskKey(r);
      Integer before = lastCount.get(k);
      int n = Math.max(0, r.getNumContainers());
      if (before != null && n <= before) {
        Map<SubClusterId, Integer> split = lastSplit.get(k);
        int shrink = before - n;
        trim(split, shrink - takeAllocated(k, split, shrink));
        for (Map.Entry<SubClusterId, Integer> e : split.entrySet()) {
          if (e.getValue() > 0 && silent(e.getKey())) { // e.g. its unmanaged AM never registered
            split.merge(home, e.getValue(), Integer::sum);
            fallback(Fallback.NEIGHBOUR_SILENT, e.getValue() + " containers of " + e.getKey()
                + ", which has not answered for " + neighbourTimeoutNanos / 1_000_000 + " ms");
            e.setValue(0);
          }
        }
        lastCount.put(k, n);
        COUNTERS.reusedSplits.incrementAndGet();
        emit(out, r, split);
      } else {
        toDecide.add(r);
      }
    }
    if (!toDecide.isEmpty()) {
      decide(toDecide, timedOut, out);
    }
    return out;
  }

  /** New or grown asks: one engine call for all of them, or all home when there is nothing to ask or no answer. */
  private void decide(List<ResourceRequest> asks, Set<SubClusterId> timedOut,
      Map<SubClusterId, List<ResourceRequest>> out) {
    Map<SubClusterId, SubClusterLoad> loads = new HashMap<>();
    try {
      for (Map.Entry<SubClusterId, SubClusterInfo> e : facade.getSubClusters(true).entrySet()) {
        loads.put(e.getKey(), SubClusterLoad.parse(e.getValue().getCapability()));
      }
    } catch (YarnException | RuntimeException e) {
      LOG.debug("AMRMProxy policy: state store not readable now", e);
    }
    List<SubClusterId> neighbours = new ArrayList<>();
    for (SubClusterId id : loads.keySet()) {
      if (!id.equals(home) && !timedOut.contains(id) && !silent(id)) {
        neighbours.add(id);
      }
    }
    neighbours.sort((a, b) -> a.getId().compareTo(b.getId()));
    List<Map<SubClusterId, Integer>> splits = null;
    if (!enabled) {
      fallback(Fallback.DISABLED, "the engine is off (" + ENABLED + "=false)");
    } else if (!neighbours.isEmpty()) { // with no neighbour there is nothing to share: home, no call
      splits = askEngine(asks, neighbours, loads);
    }
    for (int i = 0; i < asks.size(); i++) {
      ResourceRequest r = asks.get(i);
      AskKey k = new AskKey(r);
      Map<SubClusterId, Integer> split = lastSplit.computeIfAbsent(k, x -> new LinkedHashMap<>());
      for (SubClusterId s : split.keySet()) {
        split.put(s, 0);
      }
      int n = Math.max(0, r.getNumContainers());
      if (splits == null) {
        split.put(home, n);
      } else {
        split.putAll(splits.get(i));
      }
      synchronized (allocated) { // the AM's new count already accounts for what was allocated before
        allocated.remove(new AllocKey(k.priority, k.allocationRequestId));
      }
      lastCount.put(k, n);
      emit(out, r, split);
      StringBuilder shown = new StringBuilder();
      for (Map.Entry<SubClusterId, Integer> e : split.entrySet()) {
        shown.append(shown.length() == 0 ? "" : " ").append(e.getKey().getId()).append('=').append(e.getValue());
      }
      COUNTERS.lastSplit = shown.toString();
      for (Map.Entry<SubClusterId, Integer> e : split.entrySet()) {
        (e.getKey().equals(home) ? COUNTERS.containersHome : COUNTERS.containersForwarded).addAndGet(e.getValue());
      }
    }
  }

  /** The engine's split of each ask (per sub-cluster counts summing to the ask), or null: all home, counted. */
  private List<Map<SubClusterId, Integer>> askEngine(List<ResourceRequest> asks, List<SubClusterId> neighbours,
      Map<SubClusterId, SubClusterLoad> loads) {
    int homeNumber = RlRouterPolicy.clusterNumber(home.getId(), -1);
    Map<Integer, SubClusterId> byNumber = new HashMap<>();
    Set<Integer> numbers = new HashSet<>();
    boolean unique = homeNumber >= 0 && numbers.add(homeNumber);
    for (SubClusterId id : neighbours) {
      int k = RlRouterPolicy.clusterNumber(id.getId(), -1);
      unique &= k >= 0 && numbers.add(k);
      byNumber.put(k, id);
    }
    if (!unique) { // ids without distinct trailing numbers: home is 0, neighbours 1.. in id order
      homeNumber = 0;
      byNumber.clear();
      for (int i = 0; i < neighbours.size(); i++) {
        byNumber.put(i + 1, neighbours.get(i));
      }
    }
    ManagerView.Builder v = ManagerView.newBuilder().setClusterId(homeNumber);
    SubClusterLoad hl = loads.get(home);
    Resource hr = headroom.get(home);
    double freeVcores = hr != null ? hr.getVirtualCores() : hl != null ? hl.availableVcores : 0;
    double freeGb = (hr != null ? hr.getMemorySize() : hl != null ? hl.availableMb : 0) / 1024.0;
    double totalVcores = Math.max(freeVcores, hl != null ? hl.totalVcores : 0);
    double totalGb = Math.max(freeGb, hl != null ? hl.totalMb / 1024.0 : 0);
    v.addCpuFree(Math.max(0, freeVcores)).addNetworkFree(Math.max(0, freeGb))
        .addCpuCapacity(Math.max(0, totalVcores)).addNetworkCapacity(Math.max(0, totalGb));
    for (Map.Entry<Integer, SubClusterId> e : byNumber.entrySet()) {
      v.addNeighbors(e.getKey()).addTransferDelays(1);
    }
    int[] taskAsk = new int[maxTasks];
    int tasks = 0;
    for (int i = 0; i < asks.size() && tasks < maxTasks; i++) {
      Resource c = asks.get(i).getCapability();
      for (int j = 0; j < asks.get(i).getNumContainers() && tasks < maxTasks; j++) {
        v.addTaskIds(requests.incrementAndGet()).addTaskTypes(0)
            .addTaskCpu(c == null ? 1 : Math.max(0, c.getVirtualCores()))
            .addTaskNetwork(c == null ? 0 : Math.max(0, c.getMemorySize()) / 1024.0)
            .addTaskUtilityRate(1.0).addTaskWait(1).addTaskHops(0);
        taskAsk[tasks++] = i;
      }
    }
    if (tasks == 0) {
      return null; // only cancelled asks (0 containers): nothing to decide, home
    }
    v.setTransferLimit(tasks);
    RouteRequest req = RouteRequest.newBuilder().setRequestId(home.getId() + "-amrm-" + requests.get())
        .setStreamId("amrmproxy-" + home.getId()).setManager(v).build();
    RouteEngine engine = engine(settings, conf);
    // the connection is opened when the ApplicationMaster registers and its first ask follows within a heartbeat:
    // wait for the protocol handshake at most one deadline rather than send that first ask home unasked
    long until = System.nanoTime() + settings.deadlineMillis * 1_000_000L;
    while ("UNKNOWN".equals(engine.handshakeState()) && System.nanoTime() < until) {
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    COUNTERS.engineCalls.incrementAndGet();
    RouteEngine.Answer a = engine.route(req);
    if (a.outcome != RouteEngine.Outcome.ANSWERED) {
      fallback(Fallback.valueOf(a.outcome.name()), a.detail);
      return null;
    }
    RouteResponse r = a.response;
    if (r.getTaskNodeCount() != tasks || r.getTaskNextClusterCount() != tasks) {
      engine.rejected("answered for " + r.getTaskNodeCount() + "/" + r.getTaskNextClusterCount() + " of " + tasks
          + " tasks");
      fallback(Fallback.INVALID_ANSWER, "answered for " + r.getTaskNodeCount() + " of " + tasks + " tasks");
      return null;
    }
    List<Map<SubClusterId, Integer>> out = new ArrayList<>();
    for (ResourceRequest ask : asks) {
      Map<SubClusterId, Integer> m = new LinkedHashMap<>();
      m.put(home, Math.max(0, ask.getNumContainers()));
      out.add(m);
    }
    for (int t = 0; t < tasks; t++) {
      int next = r.getTaskNextCluster(t);
      if (next < 0 || r.getTaskNode(t) >= 0) {
        continue; // allocated on the home node, or kept: the ask stays home
      }
      SubClusterId to = byNumber.get(next);
      if (to == null) {
        engine.rejected("forwarded a task to cluster " + next + ", not a neighbour");
        fallback(Fallback.INVALID_ANSWER, "forwarded a task to cluster " + next + ", not a neighbour of "
            + home.getId());
        return null;
      }
      Map<SubClusterId, Integer> m = out.get(taskAsk[t]);
      m.put(home, m.get(home) - 1);
      m.merge(to, 1, Integer::sum);
    }
    engine.accepted();
    return out;
  }

  /** A neighbour holding a share that has not answered an allocate call within the neighbour timeout. */
  private boolean silent(SubClusterId id) {
    Long since = sharedSinceNanos.get(id);
    if (id.equals(home) || since == null) {
      return false;
    }
    Long answered = lastAnswerNanos.get(id);
    long last = answered == null ? since : Math.max(since, answered);
    return System.nanoTime() - last > neighbourTimeoutNanos;
  }

  private static void trim(Map<SubClusterId, Integer> split, int remove) {
    while (remove > 0) {
      SubClusterId largest = null;
      for (Map.Entry<SubClusterId, Integer> e : split.entrySet()) {
        if (e.getValue() > 0 && (largest == null || e.getValue() > split.get(largest))) {
          largest = e.getKey();
        }
      }
      if (largest == null) {
        return;
      }
      split.put(largest, split.get(largest) - 1);
      remove--;
    }
  }

  /** The ask to every sub-cluster of its split, zero counts included: they cancel an earlier share there. */
  private void emit(Map<SubClusterId, List<ResourceRequest>> out, ResourceRequest r, Map<SubClusterId, Integer> split) {
    for (Map.Entry<SubClusterId, Integer> e : split.entrySet()) {
      if (e.getValue() > 0 && !e.getKey().equals(home)) {
        sharedSinceNanos.putIfAbsent(e.getKey(), System.nanoTime());
      }
      ResourceRequest copy = ResourceRequest.clone(r);
      copy.setNumContainers(e.getValue());
      add(out, e.getKey(), copy);
    }
  }

  private static void add(Map<SubClusterId, List<ResourceRequest>> out, SubClusterId id, ResourceRequest r) {
    out.computeIfAbsent(id, k -> new ArrayList<>()).add(r);
  }

  private void fallback(Fallback why, String detail) {
    COUNTERS.fallbacks.computeIfAbsent(why, k -> new AtomicLong()).incrementAndGet();
    if (COUNTERS.logged.add(why)) {
      LOG.warn("yarn-rl AMRMProxy policy ({}): asks go to the home sub-cluster {} ({}: {}); logged once per reason",
          home, home, why, detail);
    }
  }
}
