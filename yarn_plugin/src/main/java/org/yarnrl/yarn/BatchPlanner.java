package org.yarnrl.yarn;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.exceptions.YarnRuntimeException;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.PendingAsk;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.placement.AppPlacementAllocator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.yarnrl.v1.Assignment;
import org.yarnrl.v1.GetInfoResponse;
import org.yarnrl.v1.NodeSnapshot;
import org.yarnrl.v1.ResourceAsk;
import org.yarnrl.v1.ScheduleBatchLocality;
import org.yarnrl.v1.ScheduleBatchNodeResult;
import org.yarnrl.v1.ScheduleBatchRequest;
import org.yarnrl.v1.ScheduleBatchResponse;
import org.yarnrl.v1.ScheduleResponse;

/**
 * The batched engine path (yarn_plugin/README.md, "Batched engine path"): many node heartbeats per engine call.
 *
 * <p>A heartbeat that wants the engine still builds its node's snapshot on the scheduler thread and holds the node
 * ({@link EnginePath#send}), but instead of one {@code Schedule} call per heartbeat the node joins this planner's
 * queue. A plugin thread (never the scheduler's) flushes the queue every cycle ({@value #INTERVAL_MS} after the
 * first node queued, or at once when {@value #MAX_NODES} nodes wait), one batch in flight at a time:
 *
 * <ol>
 *   <li><b>snapshot under the scheduler lock, call without it</b>: the asks of the queued nodes' snapshots are read
 *       again from YARN's live counts (each ask once, its host and rack entries for the batch's hosts and racks as
 *       one {@code ScheduleBatchLocality} table), less the containers promised to nodes by answers not yet applied,
 *       so that a later batch never promises them again; then the lock is released and one {@code ScheduleBatch}
 *       goes out with its own deadline;</li>
 *   <li><b>per-node plans</b>: the answer is checked as a whole (one result per node, in order, and no ask given more
 *       containers over all nodes than it was sent with: one answer never hands the same outstanding container to
 *       two nodes), then each node's result becomes that node's answer, exactly as a single {@code Schedule} answer
 *       (same {@link Snapshots#check}, same application with YARN's fresh-answer and ResourceCalculator checks),
 *       applied as it arrives under the scheduler's lock by the plugin's apply thread (RlScheduler; asynchronous
 *       scheduling: installed as the node's plan), or by a re-dispatched node update (RlCapacityScheduler without
 *       asynchronous scheduling, whose allocation runs only inside node updates);</li>
 *   <li><b>fallbacks per node, counted by reason</b>: a failed, timed-out or refused batch, or one that breaks the
 *       rules above, sends every node of it to native scheduling (the breaker counts one failure per batch); a node
 *       the engine refused alone goes native ({@code FallbacksRefusedNode}); a plan whose node heartbeated more than
 *       {@value #PLAN_MAX_HEARTBEATS} times while it was on its way (or, when set, older than
 *       {@value #PLAN_MAX_AGE_MS}) goes native ({@code FallbacksStalePlan}). Its age is counted in heartbeats of
 *       its node, not in wall-clock time: a re-dispatched update waits in the RM's event queue with the node's next
 *       heartbeat behind it, so a busy queue makes the plan late but not out of date.</li>
 * </ol>
 *
 * <p>Lock order: the scheduler's lock, then this planner's; the planner never takes the scheduler's lock while
 * holding its own (the scheduler thread enqueues under its lock).
 */
final class BatchPlanner implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(BatchPlanner.class);

  static final String ENABLED = "yarnrl.engine.batch.enabled";
  static final String INTERVAL_MS = "yarnrl.engine.batch.interval-ms";
  static final String MAX_NODES = "yarnrl.engine.batch.max-nodes";
  static final String DEADLINE_MS = "yarnrl.engine.batch.deadline-ms";
  static final String PLAN_MAX_AGE_MS = "yarnrl.engine.batch.plan-max-age-ms";
  static final boolean DEFAULT_ENABLED = false;
  static final long DEFAULT_INTERVAL_MS = 10;
  static final int DEFAULT_MAX_NODES = 512;
  static final long DEFAULT_DEADLINE_MS = 250;
  /** 0: no wall-clock bound (the node's heartbeats bound a plan's age). */
  static final long DEFAULT_PLAN_MAX_AGE_MS = 0;
  static final String PLAN_MAX_HEARTBEATS = "yarnrl.engine.batch.plan-max-heartbeats";
  static final int DEFAULT_PLAN_MAX_HEARTBEATS = 1;
  /** GetInfo capability of an engine that speaks ScheduleBatch. */
  static final String CAPABILITY = "schedule-batch";

  /** Where a node's answer goes (EnginePath: stored as the node's answer, its node update re-dispatched). */
  interface Delivery {
    void deliver(NodeId node, EnginePath.Answer answer);
  }

  final long intervalMs;
  final int maxNodes;
  final long deadlineMs;
  final long planMaxAgeMs;
  /** A plan whose node heartbeated more often than this while it was on its way is stale. */
  final int planMaxHeartbeats;
  private final EnginePath path;
  private final RlSchedulerMetrics metrics;
  private final Delivery delivery;
  /** Runs the batch's snapshot under the scheduler's lock (set by the scheduler; tests: as is). */
  private volatile Consumer<Runnable> underLock = Runnable::run;

  private final Object lock = new Object();
  /** Nodes waiting for the next batch, in heartbeat order (guarded by lock). */
  private final LinkedHashMap<NodeId, Snapshots.Snapshot> queue = new LinkedHashMap<>();
  private long firstQueuedNanos;
  private boolean batchInFlight;
  private boolean closed;
  /** Per ask id, containers promised by answers not yet applied (guarded by itself). */
  private final Map<String, Integer> promised = new HashMap<>();
  private final Thread thread;
  private long batchSeq;
  private volatile boolean refusedAsksLogged;

  private BatchPlanner(EnginePath path, RlSchedulerMetrics metrics, Delivery delivery, long intervalMs,
      int maxNodes, long deadlineMs, long planMaxAgeMs, int planMaxHeartbeats) {
    this.path = path;
    this.metrics = metrics;
    this.delivery = delivery;
    this.intervalMs = intervalMs;
    this.maxNodes = maxNodes;
    this.deadlineMs = deadlineMs;
    this.planMaxAgeMs = planMaxAgeMs;
    this.planMaxHeartbeats = planMaxHeartbeats;
    thread = new Thread(this::loop, "yarnrl-engine-batch");
    thread.setDaemon(true);
    thread.start();
  }

  /** The planner {@code conf} asks for, or null ({@value #ENABLED} false); a bad value names its key. */
  static BatchPlanner fromConf(Configuration conf, EnginePath path, RlSchedulerMetrics metrics, Delivery delivery) {
    String enabled = conf.getTrimmed(ENABLED, Boolean.toString(DEFAULT_ENABLED));
    if (!enabled.equalsIgnoreCase("true") && !enabled.equalsIgnoreCase("false")) {
      throw new YarnRuntimeException(ENABLED + "=" + enabled + " is not valid: it must be true or false");
    }
    long interval = range(conf, INTERVAL_MS, DEFAULT_INTERVAL_MS, 1, 10_000);
    long maxNodes = range(conf, MAX_NODES, DEFAULT_MAX_NODES, 1, 10_000);
    long deadline = range(conf, DEADLINE_MS, DEFAULT_DEADLINE_MS, 1, 60_000);
    long maxAge = range(conf, PLAN_MAX_AGE_MS, DEFAULT_PLAN_MAX_AGE_MS, 0, 3_600_000);
    long maxBeats = range(conf, PLAN_MAX_HEARTBEATS, DEFAULT_PLAN_MAX_HEARTBEATS, 0, 1000);
    if (!Boolean.parseBoolean(enabled)) {
      metrics.batchState = "OFF";
      return null;
    }
    metrics.batchState = "WAITING_FOR_ENGINE";
    LOG.info("yarn-rl batched engine path: one ScheduleBatch every {} ms (or at {} nodes), deadline {} ms, plans "
        + "whose node heartbeated more than {} times meanwhile{} scheduled natively; used while the engine offers "
        + "'{}'", interval, maxNodes, deadline, maxBeats, maxAge > 0 ? " or older than " + maxAge + " ms" : "",
        CAPABILITY);
    return new BatchPlanner(path, metrics, delivery, interval, (int) maxNodes, deadline, maxAge, (int) maxBeats);
  }

  private static long range(Configuration conf, String key, long dflt, long min, long max) {
    String raw = conf.getTrimmed(key, Long.toString(dflt));
    long v;
    try {
      v = Long.parseLong(raw);
    } catch (NumberFormatException e) {
      v = Long.MIN_VALUE;
    }
    if (v < min || v > max) {
      throw new YarnRuntimeException(key + "=" + raw + " is not valid: it must be an integer in [" + min + ", "
          + max + "]");
    }
    return v;
  }

  /** Whether this engine speaks ScheduleBatch (else the per-heartbeat path is used, as with an older engine). */
  static boolean supports(GetInfoResponse info) {
    return info != null && info.getCapabilitiesList().contains(CAPABILITY);
  }

  void setUnderLock(Consumer<Runnable> underLock) {
    this.underLock = underLock;
  }

  /** This node joins the next batch (scheduler thread; the node is held until its answer or fallback). */
  void enqueue(NodeId node, Snapshots.Snapshot snapshot) {
    synchronized (lock) {
      if (queue.isEmpty()) {
        firstQueuedNanos = System.nanoTime();
      }
      queue.put(node, snapshot);
      if (queue.size() == 1 || queue.size() >= maxNodes) {
        lock.notifyAll();
      }
    }
  }

  /** The node left: it leaves the queue (true when it was there). */
  boolean dequeue(NodeId node) {
    synchronized (lock) {
      return queue.remove(node) != null;
    }
  }

  /** The containers an answer promised are applied or dropped now: later batches may offer them again. */
  void release(EnginePath.Answer answer) {
    if (answer.promised == null || answer.promised.isEmpty()) {
      return;
    }
    synchronized (promised) {
      for (Map.Entry<String, Integer> e : answer.promised.entrySet()) {
        promised.computeIfPresent(e.getKey(), (k, v) -> v - e.getValue() <= 0 ? null : v - e.getValue());
      }
    }
  }

  /** Containers promised and not yet applied (tests, JMX). */
  int promisedContainers() {
    synchronized (promised) {
      return promised.values().stream().mapToInt(Integer::intValue).sum();
    }
  }

  private void loop() {
    while (true) {
      List<Map.Entry<NodeId, Snapshots.Snapshot>> nodes;
      synchronized (lock) {
        try {
          while (!closed) {
            if (!batchInFlight && !queue.isEmpty()) {
              long waitedMs = (System.nanoTime() - firstQueuedNanos) / 1_000_000;
              if (queue.size() >= effectiveMaxNodes() || waitedMs >= intervalMs) {
                break;
              }
              lock.wait(Math.max(1, intervalMs - waitedMs));
            } else {
              lock.wait(200);
            }
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
        if (closed) {
          return;
        }
        int n = Math.min(queue.size(), effectiveMaxNodes());
        nodes = new ArrayList<>(n);
        var it = queue.entrySet().iterator();
        while (nodes.size() < n) {
          var e = it.next();
          nodes.add(Map.entry(e.getKey(), e.getValue()));
          it.remove();
        }
        firstQueuedNanos = System.nanoTime(); // the rest waits one more cycle at most
        batchInFlight = true;
      }
      try {
        flush(nodes);
      } catch (RuntimeException e) {
        // never lose a held node: everything of this batch goes native, counted as an error
        LOG.warn("yarn-rl batched engine path: building a batch failed; its nodes are scheduled natively", e);
        fail(nodes, null, new EngineClient.CallFailed(EngineClient.Failure.ERROR,
            "building the batch failed: " + e, e), path.engines.current(), System.nanoTime());
      }
    }
  }

  private int effectiveMaxNodes() {
    GetInfoResponse info = path.handshake().info();
    int engineMax = info == null || info.getMaxBatchNodes() <= 0 ? maxNodes : info.getMaxBatchNodes();
    return Math.max(1, Math.min(maxNodes, engineMax));
  }

  private int effectiveMaxAsks() {
    GetInfoResponse info = path.handshake().info();
    int engineMax = info == null || info.getMaxBatchAsks() <= 0 ? EnginePath.MAX_ASKS_ENGINE : info.getMaxBatchAsks();
    return Math.min(EnginePath.MAX_ASKS_ENGINE, engineMax);
  }

  /** What one batch was built from: per node its answer's snapshot, and per ask the count it was sent with. */
  private static final class Built {
    final List<NodeId> nodes = new ArrayList<>();
    final List<Snapshots.Snapshot> snapshots = new ArrayList<>();
    final Map<String, Integer> sent = new HashMap<>();
    ScheduleBatchRequest request;
    long plannedNanos;
  }

  private void flush(List<Map.Entry<NodeId, Snapshots.Snapshot>> nodes) {
    Built built = new Built();
    underLock.accept(() -> build(nodes, built)); // the scheduler's lock for the snapshot, not for the call
    EngineClient client = path.engines.current();
    long sentNanos = System.nanoTime();
    metrics.batches.increment();
    metrics.batchNodes.add(built.nodes.size());
    metrics.batchAsks.add(built.request.getAsksCount());
    client.scheduleBatchAsync(built.request, deadlineMs, (response, failure) -> {
      metrics.batchCallNanos.add(System.nanoTime() - sentNanos);
      try {
        answered(built, response, failure, client);
      } finally {
        synchronized (lock) {
          batchInFlight = false;
          lock.notifyAll();
        }
      }
    });
  }

  /** The batch request for these held nodes, from YARN's live asks (called under the scheduler's lock). */
  private void build(List<Map.Entry<NodeId, Snapshots.Snapshot>> nodes, Built out) {
    long cpu = Snapshots.threadCpuNanos();
    out.plannedNanos = System.nanoTime();
    // every ask of the nodes' snapshots once, in the order first seen (FIFO: each snapshot is in FIFO order)
    LinkedHashMap<String, Snapshots.AskRef> refs = new LinkedHashMap<>();
    Map<String, ResourceAsk> messages = new HashMap<>();
    Set<String> hosts = new LinkedHashSet<>();
    Set<String> racks = new LinkedHashSet<>();
    for (Map.Entry<NodeId, Snapshots.Snapshot> e : nodes) {
      Snapshots.Snapshot s = e.getValue();
      hosts.add(s.request.getNode().getHost());
      racks.add(s.request.getNode().getRack());
      for (ResourceAsk a : s.request.getAsksList()) {
        Snapshots.AskRef ref = s.asks.get(a.getAskId());
        if (ref != null) {
          refs.putIfAbsent(a.getAskId(), ref);
          messages.put(a.getAskId(), a); // the latest snapshot's message
        }
      }
    }
    Map<String, Integer> promisedNow;
    synchronized (promised) {
      promisedNow = new HashMap<>(promised);
    }
    ScheduleBatchRequest.Builder req = ScheduleBatchRequest.newBuilder().setBatchId(Long.toString(++batchSeq));
    ScheduleBatchLocality.Builder table = ScheduleBatchLocality.newBuilder();
    Map<String, Integer> nameIndex = new HashMap<>();
    Map<String, Snapshots.AskRef> sentRefs = new LinkedHashMap<>();
    int maxAsks = effectiveMaxAsks();
    for (Map.Entry<String, Snapshots.AskRef> e : refs.entrySet()) {
      if (req.getAsksCount() >= maxAsks) {
        metrics.snapshotAsksLeftOut.increment();
        continue;
      }
      Snapshots.AskRef ref = e.getValue();
      AppPlacementAllocator<?> placement = ref.app.isStopped() ? null
          : ref.app.getAppSchedulingInfo().getAppPlacementAllocator(ref.key);
      if (placement == null) {
        continue; // the application or the ask is gone
      }
      PendingAsk any = placement.getPendingAsk(ResourceRequest.ANY);
      if (!any.getPerAllocationResource().equals(ref.capability)) {
        continue; // resized since the heartbeat: its next heartbeat sends it again
      }
      int count = any.getCount() - promisedNow.getOrDefault(e.getKey(), 0);
      if (count <= 0) {
        continue; // everything it asks for is placed or promised
      }
      Map<String, ResourceRequest> requests = placement.getResourceRequests();
      ResourceRequest anyRequest = requests == null ? null : requests.get(ResourceRequest.ANY);
      boolean anyRelax = anyRequest == null || anyRequest.getRelaxLocality();
      int index = req.getAsksCount();
      req.addAsks(messages.get(e.getKey()).toBuilder().clearLocality().setNumContainers(count)
          .setRelaxLocality(anyRelax)
          .setLocalityNames(requests == null ? 0 : requests.size() - (anyRequest == null ? 0 : 1)));
      if (requests != null) {
        for (String host : hosts) {
          ResourceRequest rr = requests.get(host);
          if (rr != null && rr.getNumContainers() > 0) {
            entry(table, nameIndex, index, host, rr);
          }
        }
        for (String rack : racks) {
          ResourceRequest rr = requests.get(rack);
          // a rack entry at 0 still says something when it forbids relaxing (no off-switch placement there)
          if (rr != null && (rr.getNumContainers() > 0 || !rr.getRelaxLocality())) {
            entry(table, nameIndex, index, rack, rr);
          }
        }
      }
      out.sent.put(e.getKey(), count);
      sentRefs.put(e.getKey(), new Snapshots.AskRef(ref.app, ref.key, ref.capability, count, anyRelax, false));
    }
    for (Map.Entry<NodeId, Snapshots.Snapshot> e : nodes) {
      Snapshots.Snapshot s = e.getValue();
      NodeSnapshot node = s.request.getNode();
      req.addNodes(node);
      req.addRequestIds(s.request.getRequestId());
      // the node's answer is checked and applied against the counts this batch was sent with; whether an ask could
      // go on the node (the wait cap's test) is the node's own snapshot's
      Map<String, Snapshots.AskRef> nodeRefs = new LinkedHashMap<>();
      for (Map.Entry<String, Snapshots.AskRef> r : sentRefs.entrySet()) {
        Snapshots.AskRef own = s.asks.get(r.getKey());
        Snapshots.AskRef sent = r.getValue();
        nodeRefs.put(r.getKey(), new Snapshots.AskRef(sent.app, sent.key, sent.capability, sent.outstanding,
            sent.anyRelax, own != null && own.placeable));
      }
      out.nodes.add(e.getKey());
      out.snapshots.add(new Snapshots.Snapshot(s.request, nodeRefs, s.calculator, s.nodeFree));
    }
    req.setCluster(nodes.get(nodes.size() - 1).getValue().request.getCluster());
    if (table.getAskIndexCount() > 0) {
      req.setLocality(table);
    }
    out.request = req.build();
    if (cpu >= 0) {
      metrics.batchBuildCpuNanos.add(Snapshots.threadCpuNanos() - cpu);
    }
  }

  private static void entry(ScheduleBatchLocality.Builder table, Map<String, Integer> nameIndex, int ask, String name,
      ResourceRequest rr) {
    Integer n = nameIndex.get(name);
    if (n == null) {
      n = table.getNamesCount();
      nameIndex.put(name, n);
      table.addNames(name);
    }
    table.addAskIndex(ask).addNameIndex(n).addNumContainers(rr.getNumContainers())
        .addRelaxLocality(rr.getRelaxLocality());
  }

  /** The batch's answer (or failure), on a gRPC thread: checked as a whole, then one answer per node. */
  private void answered(Built built, ScheduleBatchResponse response, EngineClient.CallFailed failure,
      EngineClient client) {
    if (failure != null) {
      fail(null, built, failure, client, built.plannedNanos);
      return;
    }
    String problem = check(built, response);
    if (problem != null) {
      fail(null, built, new EngineClient.CallFailed(EngineClient.Failure.INVALID_BATCH, problem, null), client,
          built.plannedNanos);
      return;
    }
    if (response.getRefusedAsksCount() > 0) {
      metrics.batchAsksRefused.add(response.getRefusedAsksCount());
      if (!refusedAsksLogged) {
        refusedAsksLogged = true;
        LOG.warn("yarn-rl engine refused {} ask(s) of a batch (first: {}); they wait for native scheduling "
            + "(the wait cap), counted in BatchAsksRefused", response.getRefusedAsksCount(),
            response.getRefusedAsks(0).getRefusal().getMessage());
      }
    }
    for (int i = 0; i < built.nodes.size(); i++) {
      ScheduleBatchNodeResult r = response.getResults(i);
      Snapshots.Snapshot snapshot = built.snapshots.get(i);
      if (r.hasRefusal()) {
        delivery.deliver(built.nodes.get(i), new EnginePath.Answer(snapshot, null,
            new EngineClient.CallFailed(EngineClient.Failure.REFUSED_NODE, "the engine refused node "
                + r.getNodeId() + ": " + r.getRefusal().getMessage(), null), client, built.plannedNanos, null,
            false));
        continue;
      }
      Map<String, Integer> given = new HashMap<>();
      for (Assignment a : r.getAssignmentsList()) {
        given.merge(a.getAskId(), a.getCount(), Integer::sum);
      }
      synchronized (promised) {
        given.forEach((ask, n) -> promised.merge(ask, n, Integer::sum));
      }
      ScheduleResponse single = ScheduleResponse.newBuilder().setRequestId(r.getRequestId())
          .setDecisionId(r.getDecisionId()).addAllAssignments(r.getAssignmentsList())
          .setPolicy(response.getPolicy()).setModelVersion(response.getModelVersion()).build();
      delivery.deliver(built.nodes.get(i), new EnginePath.Answer(snapshot, single, null, client,
          built.plannedNanos, given, true));
    }
  }

  /**
   * Why a batch answer cannot be used at all, or null: one result per node in the order sent, and over all its
   * nodes no ask given more containers than it was sent with (the engine's guarantee that one answer never hands
   * the same outstanding container to two nodes; each node's own answer is checked as a single one after this).
   */
  static String checkTotals(List<NodeId> nodes, Map<String, Integer> sent, ScheduleBatchResponse response) {
    if (response.getResultsCount() != nodes.size()) {
      return response.getResultsCount() + " results for a batch of " + nodes.size() + " nodes";
    }
    Map<String, Integer> total = new HashMap<>();
    for (int i = 0; i < nodes.size(); i++) {
      ScheduleBatchNodeResult r = response.getResults(i);
      if (!r.getNodeId().equals(nodes.get(i).toString())) {
        return "result " + i + " is for node " + r.getNodeId() + ", not " + nodes.get(i);
      }
      for (Assignment a : r.getAssignmentsList()) {
        int n = total.merge(a.getAskId(), Math.max(0, a.getCount()), Integer::sum);
        Integer limit = sent.get(a.getAskId());
        if (limit != null && n > limit) {
          return n + " containers of " + a.getAskId() + " over the batch's nodes, which was sent with " + limit;
        }
      }
    }
    return null;
  }

  private static String check(Built built, ScheduleBatchResponse response) {
    return checkTotals(built.nodes, built.sent, response);
  }

  /** Every node of a batch goes native for this reason; the breaker counts the batch once. */
  private void fail(List<Map.Entry<NodeId, Snapshots.Snapshot>> raw, Built built, EngineClient.CallFailed failure,
      EngineClient client, long plannedNanos) {
    boolean first = true;
    if (built != null) {
      for (int i = 0; i < built.nodes.size(); i++) {
        delivery.deliver(built.nodes.get(i), new EnginePath.Answer(built.snapshots.get(i), null, failure, client,
            plannedNanos, null, first));
        first = false;
      }
    } else {
      for (Map.Entry<NodeId, Snapshots.Snapshot> e : raw) {
        delivery.deliver(e.getKey(), new EnginePath.Answer(e.getValue(), null, failure, client, plannedNanos, null,
            first));
        first = false;
      }
      synchronized (lock) {
        batchInFlight = false;
        lock.notifyAll();
      }
    }
  }

  @Override
  public void close() {
    synchronized (lock) {
      closed = true;
      lock.notifyAll();
    }
    thread.interrupt();
    try {
      thread.join(2000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
