package org.yarnrl.yarn;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ResourceInformation;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.api.records.ResourceUtilization;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainer;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.Queue;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CSQueue;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.SchedulingMode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.PendingAsk;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.fica.FiCaSchedulerApp;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.fica.FiCaSchedulerNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.placement.AppPlacementAllocator;
import org.apache.hadoop.yarn.server.scheduler.SchedulerRequestKey;
import org.apache.hadoop.yarn.util.resource.ResourceCalculator;
import org.yarnrl.v1.Assignment;
import org.yarnrl.v1.ClusterSummary;
import org.yarnrl.v1.ContainerInfo;
import org.yarnrl.v1.JobMetadata;
import org.yarnrl.v1.LocalityRequest;
import org.yarnrl.v1.NodeSnapshot;
import org.yarnrl.v1.Resource;
import org.yarnrl.v1.ResourceAsk;
import org.yarnrl.v1.ScheduleRequest;
import org.yarnrl.v1.ScheduleResponse;
import org.yarnrl.v1.Utilization;

/**
 * Heartbeat snapshots for the engine, and the structural check of its answers. Pure translation: no policy here.
 *
 * <p>One {@link ResourceAsk} per (application attempt, scheduler key) with pending containers, in FIFO order of
 * applications and, within one, of scheduler keys (priority, then allocation request id): {@code num_containers} is
 * the "*" outstanding count and {@code locality} holds YARN's own counts for the snapshot's node (its host's and its
 * rack's entries; {@code locality_names} says how many hosts and racks the whole ask names). The ask id is
 * {@code <appAttemptId>/<priority>/<allocationRequestId>}. Built by {@link Builder}.
 */
final class Snapshots {
  private Snapshots() {}

  /** What the plugin keeps about one ask of a request to apply the engine's answer to it. */
  static final class AskRef {
    final FiCaSchedulerApp app;
    final SchedulerRequestKey key;
    final org.apache.hadoop.yarn.api.records.Resource capability;
    final int outstanding;
    /** The "*" entry's relaxLocality when the snapshot was built (an answer applied later re-reads it). */
    final boolean anyRelax;
    /**
     * Whether one container of the ask could go on the node then: it fitted the node's unallocated resource by the
     * RM's calculator and its locality allowed the node ({@link LocalityRules}).
     */
    final boolean placeable;

    AskRef(FiCaSchedulerApp app, SchedulerRequestKey key, org.apache.hadoop.yarn.api.records.Resource capability,
        int outstanding, boolean anyRelax, boolean placeable) {
      this.app = app;
      this.key = key;
      this.capability = capability;
      this.outstanding = outstanding;
      this.anyRelax = anyRelax;
      this.placeable = placeable;
    }
  }

  /** Per-application facts that do not change during its life. */
  static final class JobInfo {
    final long submitTimeMs;
    final JobMetadata metadata;

    JobInfo(long submitTimeMs, JobMetadata metadata) {
      this.submitTimeMs = submitTimeMs;
      this.metadata = metadata;
    }
  }

  static final class Snapshot {
    final ScheduleRequest request;
    final Map<String, AskRef> asks;
    /** The RM's calculator and the node's unallocated resource the engine was asked about. */
    final ResourceCalculator calculator;
    final org.apache.hadoop.yarn.api.records.Resource nodeFree;
    /** Whether any ask could go on the node (fit and locality): if none could, there is nothing to ask. */
    final boolean anyFits;

    Snapshot(ScheduleRequest request, Map<String, AskRef> asks, ResourceCalculator calculator,
        org.apache.hadoop.yarn.api.records.Resource nodeFree) {
      this.request = request;
      this.asks = asks;
      this.calculator = calculator;
      this.nodeFree = nodeFree;
      boolean any = false;
      for (AskRef a : asks.values()) {
        any |= a.placeable;
      }
      this.anyFits = any;
    }
  }

  /**
   * Whether the attempt has pending containers a node of this partition could take ("" = the default partition),
   * read from the attempt's pending-resource counters as CapacityScheduler's own queues do: not from its asks, whose
   * lock an AM's allocate holds while it updates them (a node update asking every application would wait for it).
   */
  static boolean hasPending(FiCaSchedulerApp app, String partition) {
    String p = partition == null ? "" : partition;
    return app.hasPendingResourceRequest(p, SchedulingMode.RESPECT_PARTITION_EXCLUSIVITY)
        || (!p.isEmpty() && app.hasPendingResourceRequest("", SchedulingMode.RESPECT_PARTITION_EXCLUSIVITY));
  }

  /**
   * SchedulerAppUtils.isPlaceBlacklisted (the node's host or rack blacklisted by the application, or by the system
   * while its AM waits for a container) without the attempt's lock, for the same reason as {@link #hasPending}.
   */
  static boolean blacklisted(FiCaSchedulerApp app, FiCaSchedulerNode node) {
    boolean am = app.isWaitingForAMContainer();
    org.apache.hadoop.yarn.server.resourcemanager.scheduler.AppSchedulingInfo info = app.getAppSchedulingInfo();
    return info.isPlaceBlacklisted(node.getNodeName(), am) || info.isPlaceBlacklisted(node.getRackName(), am);
  }

  /**
   * Whether one more container of this ask could go on this node now: pending, not blacklisted there, fits the
   * node's unallocated resource by the RM's calculator ({@link ResourceFit}) and allowed there by its locality
   * ({@link LocalityRules}). Reads the ask's own allocator, without the attempt's lock (see {@link #hasPending}).
   */
  static boolean placeable(FiCaSchedulerApp app, SchedulerRequestKey key, FiCaSchedulerNode node,
      ResourceCalculator rc) {
    AppPlacementAllocator<?> placement = app.getAppSchedulingInfo().getAppPlacementAllocator(key);
    if (placement == null) {
      return false;
    }
    PendingAsk any = placement.getPendingAsk(ResourceRequest.ANY);
    if (any.getCount() <= 0 || blacklisted(app, node)
        || !ResourceFit.fits(rc, any.getPerAllocationResource(), 1, node.getUnallocatedResource())) {
      return false;
    }
    Map<String, ResourceRequest> requests = placement.getResourceRequests();
    ResourceRequest onHost = requests == null ? null : requests.get(node.getNodeName());
    ResourceRequest onRack = requests == null ? null : requests.get(node.getRackName());
    return LocalityRules.allowed(requests, any.getCount(), onHost == null ? 0 : onHost.getNumContainers(),
        onRack == null ? 0 : onRack.getNumContainers(), node.getRackName()) != null;
  }

  /** Whether the ask has pending containers now (its own allocator, without the attempt's lock). */
  static boolean pendingNow(FiCaSchedulerApp app, SchedulerRequestKey key) {
    AppPlacementAllocator<?> placement = app.getAppSchedulingInfo().getAppPlacementAllocator(key);
    return !app.isStopped() && placement != null && placement.getPendingAsk(ResourceRequest.ANY).getCount() > 0;
  }

  /** The calling thread's CPU time in ns, or -1 where the JVM cannot tell (ThreadMXBean). */
  static long threadCpuNanos() {
    java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
    return cpu.isCurrentThreadCpuTimeSupported() ? cpu.getCurrentThreadCpuTime() : -1;
  }

  static String askId(FiCaSchedulerApp app, SchedulerRequestKey key) {
    return askId(app.getApplicationAttemptId(), key);
  }

  static String askId(org.apache.hadoop.yarn.api.records.ApplicationAttemptId attempt, SchedulerRequestKey key) {
    return attempt + "/" + key.getPriority().getPriority() + "/" + key.getAllocationRequestId();
  }

  static Resource resource(org.apache.hadoop.yarn.api.records.Resource r) {
    Resource.Builder b = Resource.newBuilder().setMemoryMb(r.getMemorySize()).setVcores(r.getVirtualCores());
    ResourceInformation[] infos = r.getResources();
    for (int i = 2; i < infos.length; i++) { // 0 and 1 are memory and vcores
      if (infos[i].getValue() != 0) {
        b.putExtra(infos[i].getName(), infos[i].getValue());
      }
    }
    return b.build();
  }

  /** The cluster as a scheduler sees it (nodes, racks, total and unallocated resources). */
  static ClusterSummary cluster(
      org.apache.hadoop.yarn.server.resourcemanager.scheduler.AbstractYarnScheduler<?, ?> scheduler,
      java.util.Set<String> racks) {
    org.apache.hadoop.yarn.api.records.Resource total = scheduler.getClusterResource();
    return ClusterSummary.newBuilder()
        .setNumNodes(scheduler.getNumClusterNodes())
        .setNumRacks(racks.size())
        .setTotal(resource(total))
        .setUnallocated(resource(org.apache.hadoop.yarn.util.resource.Resources.subtract(total,
            scheduler.getRootQueueMetrics().getAllocatedResources())))
        .setResourceCalculator(ResourceFit.kind(scheduler.getResourceCalculator()))
        .build();
  }

  static NodeSnapshot node(FiCaSchedulerNode node, long nowMs) {
    NodeSnapshot.Builder b = NodeSnapshot.newBuilder()
        .setNodeId(node.getNodeID().toString())
        .setHost(node.getRMNode().getHostName())
        .setRack(node.getRackName())
        .setTotal(resource(node.getTotalResource()))
        .setUnallocated(resource(node.getUnallocatedResource()))
        .setTimestampMs(nowMs);
    if (node.getPartition() != null && !node.getPartition().isEmpty()) {
      b.setPartition(node.getPartition());
    }
    for (RMContainer c : node.getCopiedListOfRunningContainers()) {
      b.addRunning(ContainerInfo.newBuilder()
          .setContainerId(c.getContainerId().toString())
          .setApplicationId(c.getApplicationAttemptId().getApplicationId().toString())
          .setResource(resource(c.getAllocatedResource()))
          .setStartTimeMs(c.getCreationTime()));
    }
    ResourceUtilization u = node.getNodeUtilization();
    if (u != null) {
      b.setUtilization(Utilization.newBuilder().setCpu(u.getCPU()).setPhysicalMemoryMb(u.getPhysicalMemory())
          .setVirtualMemoryMb(u.getVirtualMemory()));
    }
    return b.build();
  }

  /**
   * Builds the heartbeat snapshots of one scheduler (its scheduler thread only), bounded and cached:
   *
   * <ul>
   *   <li>each ask carries only the locality entries that matter on the snapshot's node, its host's and its rack's
   *       (YARN's host, rack and "*" counts for this node are all a decision there can use), plus
   *       {@code locality_names}, the whole ask's count of host and rack names (CapacityScheduler's unique location
   *       count, which the delay policy's off-switch wait reads). A MapReduce job on a large cluster names hundreds
   *       of hosts per ask: sending them all with every heartbeat made a snapshot O(asks x hosts) under the
   *       scheduler lock (12,000 entries per heartbeat at 5,000 nodes);</li>
   *   <li>at most {@code maxAsks} asks per snapshot, the first in FIFO order (the engine refuses more than 10,000);
   *       the rest wait for a later heartbeat (counted, {@code SnapshotAsksLeftOut});</li>
   *   <li>the node-independent part of each ask is built once per change of the ask and reused: an ask is rebuilt
   *       only when one of the values it was built from changed (outstanding count, size, relax flag, number of
   *       names, queue, headroom, partition, job), so a heartbeat with unchanged asks builds no ask
   *       ({@code SnapshotAsksBuilt} counts the builds).</li>
   * </ul>
   */
  static final class Builder {
    /** A cached ask is dropped when no snapshot used it for this many snapshots (finished asks and attempts). */
    static final int EVICT_AFTER = 4096;
    /** The scheduler thread's CPU time for building a snapshot, whatever the machine's load (about 1 us a call). */
    private static final java.lang.management.ThreadMXBean CPU =
        java.lang.management.ManagementFactory.getThreadMXBean();

    private final int maxAsks;
    private final RlSchedulerMetrics metrics;
    private final Map<ApplicationAttemptId, Map<SchedulerRequestKey, CachedAsk>> cache = new HashMap<>();
    private long snapshots;

    Builder(int maxAsks, RlSchedulerMetrics metrics) {
      if (maxAsks <= 0) {
        throw new IllegalArgumentException("the most asks per snapshot must be positive, got " + maxAsks);
      }
      this.maxAsks = maxAsks;
      this.metrics = metrics;
    }

    /** Asks held in the cache (for tests). */
    synchronized int cachedAsks() {
      int n = 0;
      for (Map<SchedulerRequestKey, CachedAsk> m : cache.values()) {
        n += m.size();
      }
      return n;
    }

    /** The application is gone: its asks will not come back. */
    synchronized void forget(org.apache.hadoop.yarn.api.records.ApplicationId application) {
      cache.keySet().removeIf(a -> a.getApplicationId().equals(application));
    }

    /**
     * The asks of the given attempts (in FIFO order) that could use this node, or an empty snapshot when none has
     * pending containers.
     */
    synchronized Snapshot build(String requestId, FiCaSchedulerNode node, List<? extends FiCaSchedulerApp> attempts,
        Map<org.apache.hadoop.yarn.api.records.ApplicationId, JobInfo> jobs, ClusterSummary cluster,
        ResourceCalculator calculator, long nowMs) {
      org.apache.hadoop.yarn.api.records.Resource nodeFree =
          org.apache.hadoop.yarn.util.resource.Resources.clone(node.getUnallocatedResource());
      long cpu = CPU.isCurrentThreadCpuTimeSupported() ? CPU.getCurrentThreadCpuTime() : -1;
      long seq = ++snapshots;
      Map<String, AskRef> refs = new LinkedHashMap<>();
      List<ResourceAsk> asks = new ArrayList<>();
      String host = node.getNodeName();
      String rack = node.getRackName();
      long built = 0;
      long entries = 0;
      long leftOut = 0;
      for (FiCaSchedulerApp app : attempts) {
        JobInfo job = jobs.get(app.getApplicationId());
        Queue queue = app.getQueue();
        String queuePath = queue instanceof CSQueue ? ((CSQueue) queue).getQueuePath() : null;
        org.apache.hadoop.yarn.api.records.Resource headroom = queuePath == null ? null : app.getHeadroom();
        Map<SchedulerRequestKey, CachedAsk> appCache = null;
        for (SchedulerRequestKey key : app.getSchedulerKeys()) {
          // the ask's own allocator, not the attempt's getPendingAsk: that waits for the attempt's lock, which an
          // AM's allocate holds while it updates all its asks
          AppPlacementAllocator<?> placement = app.getAppSchedulingInfo().getAppPlacementAllocator(key);
          PendingAsk any = placement == null ? PendingAsk.ZERO : placement.getPendingAsk(ResourceRequest.ANY);
          if (any.getCount() <= 0) {
            continue;
          }
          if (asks.size() >= maxAsks) {
            leftOut++;
            continue;
          }
          Map<String, ResourceRequest> requests = placement.getResourceRequests();
          if (appCache == null) {
            appCache = cache.computeIfAbsent(app.getApplicationAttemptId(), a -> new HashMap<>());
          }
          CachedAsk cached = appCache.get(key);
          Inputs inputs = new Inputs(app, key, any, placement, requests, queuePath, headroom, job);
          if (cached == null || !cached.inputs.equals(inputs)) {
            cached = new CachedAsk(inputs, askMessage(app, key, inputs));
            appCache.put(key, cached);
            built++;
          }
          cached.lastUsed = seq;
          ResourceAsk ask = cached.message;
          ResourceRequest onHost = requests == null ? null : requests.get(host);
          ResourceRequest onRack = requests == null ? null : requests.get(rack);
          boolean hostEntry = onHost != null && onHost.getNumContainers() > 0;
          // a rack entry at 0 still says something when it forbids relaxing (no off-switch placement there)
          boolean rackEntry = onRack != null && (onRack.getNumContainers() > 0 || !onRack.getRelaxLocality());
          if (hostEntry || rackEntry) {
            ResourceAsk.Builder b = ask.toBuilder();
            if (hostEntry) {
              b.addLocality(locality(host, onHost));
              entries++;
            }
            if (rackEntry) {
              b.addLocality(locality(rack, onRack));
              entries++;
            }
            ask = b.build();
          }
          asks.add(ask);
          boolean placeable = ResourceFit.fits(calculator, any.getPerAllocationResource(), 1, nodeFree)
              && LocalityRules.allowed(requests, any.getCount(), hostEntry ? onHost.getNumContainers() : 0,
                  onRack != null ? onRack.getNumContainers() : 0, rack) != null;
          refs.put(ask.getAskId(), new AskRef(app, key, any.getPerAllocationResource(), any.getCount(),
              inputs.anyRelax, placeable));
        }
      }
      if (seq % EVICT_AFTER == 0) {
        evictOlderThan(seq - EVICT_AFTER);
      }
      metrics.snapshots.increment();
      metrics.snapshotAsks.add(asks.size());
      metrics.snapshotAsksBuilt.add(built);
      metrics.snapshotLocalityEntries.add(entries);
      metrics.snapshotAsksLeftOut.add(leftOut);
      ScheduleRequest request = ScheduleRequest.newBuilder()
          .setRequestId(requestId)
          .setNode(refs.isEmpty() ? NodeSnapshot.getDefaultInstance() : node(node, nowMs))
          .addAllAsks(asks)
          .setCluster(cluster)
          .build();
      if (cpu >= 0) {
        metrics.snapshotCpuNanos.add(CPU.getCurrentThreadCpuTime() - cpu);
      }
      return new Snapshot(request, refs, calculator, nodeFree);
    }

    private void evictOlderThan(long seq) {
      for (java.util.Iterator<Map<SchedulerRequestKey, CachedAsk>> it = cache.values().iterator(); it.hasNext();) {
        Map<SchedulerRequestKey, CachedAsk> m = it.next();
        m.values().removeIf(c -> c.lastUsed < seq);
        if (m.isEmpty()) {
          it.remove();
        }
      }
    }

    private static LocalityRequest locality(String name, ResourceRequest rr) {
      return LocalityRequest.newBuilder().setResourceName(name).setNumContainers(rr.getNumContainers())
          .setRelaxLocality(rr.getRelaxLocality()).build();
    }

    /** The node-independent part of an ask: everything but its host and rack entries. */
    private static ResourceAsk askMessage(FiCaSchedulerApp app, SchedulerRequestKey key, Inputs in) {
      ResourceAsk.Builder ask = ResourceAsk.newBuilder()
          .setAskId(askId(app, key))
          .setApplicationId(app.getApplicationId().toString())
          .setAttemptId(app.getApplicationAttemptId().getAttemptId())
          .setQueue(in.queueName)
          .setUser(in.user)
          .setPriority(key.getPriority().getPriority())
          .setAllocationRequestId(key.getAllocationRequestId())
          .setResource(resource(in.perContainer))
          .setNumContainers(in.outstanding)
          .setRelaxLocality(in.anyRelax)
          .setLocalityNames(in.names);
      if (in.queuePath != null) {
        ask.setQueuePath(in.queuePath);
        if (in.headroom != null) {
          ask.setUserHeadroom(resource(in.headroom));
        }
      }
      if (in.partition != null && !in.partition.isEmpty()) {
        ask.setPartition(in.partition);
      }
      if (in.job != null) {
        ask.setSubmitTimeMs(in.job.submitTimeMs);
        if (!in.job.metadata.equals(JobMetadata.getDefaultInstance())) {
          ask.setJob(in.job.metadata);
        }
      }
      return ask.build();
    }
  }

  /** What an ask's message is built from: equal inputs, equal message. */
  private static final class Inputs {
    final int outstanding;
    final org.apache.hadoop.yarn.api.records.Resource perContainer;
    final boolean anyRelax;
    final int names;
    final String queueName;
    final String user;
    final String queuePath;
    final org.apache.hadoop.yarn.api.records.Resource headroom;
    final String partition;
    final JobInfo job;

    Inputs(FiCaSchedulerApp app, SchedulerRequestKey key, PendingAsk any, AppPlacementAllocator<?> placement,
        Map<String, ResourceRequest> requests, String queuePath, org.apache.hadoop.yarn.api.records.Resource headroom,
        JobInfo job) {
      this.outstanding = any.getCount();
      this.perContainer = any.getPerAllocationResource();
      ResourceRequest anyRequest = requests == null ? null : requests.get(ResourceRequest.ANY);
      this.anyRelax = anyRequest == null || anyRequest.getRelaxLocality();
      // YARN's own count of the ask's names (LocalityAppPlacementAllocator.getUniqueLocationAsks), "*" excluded
      this.names = requests == null ? 0 : requests.size() - (anyRequest == null ? 0 : 1);
      this.queueName = app.getQueueName();
      this.user = app.getUser();
      this.queuePath = queuePath;
      this.headroom = headroom;
      this.partition = placement == null ? null : placement.getPrimaryRequestedNodePartition();
      this.job = job;
    }

    @Override
    public boolean equals(Object o) {
      if (!(o instanceof Inputs)) {
        return false;
      }
      Inputs x = (Inputs) o;
      return outstanding == x.outstanding && anyRelax == x.anyRelax && names == x.names && job == x.job
          && java.util.Objects.equals(perContainer, x.perContainer) && java.util.Objects.equals(queueName, x.queueName)
          && java.util.Objects.equals(user, x.user) && java.util.Objects.equals(queuePath, x.queuePath)
          && java.util.Objects.equals(headroom, x.headroom) && java.util.Objects.equals(partition, x.partition);
    }

    @Override
    public int hashCode() {
      return java.util.Objects.hash(outstanding, names, queuePath);
    }
  }

  private static final class CachedAsk {
    final Inputs inputs;
    final ResourceAsk message;
    long lastUsed;

    CachedAsk(Inputs inputs, ResourceAsk message) {
      this.inputs = inputs;
      this.message = message;
    }
  }

  /**
   * Why the engine's answer cannot be applied to this heartbeat, or null when it can: every assignment names an ask
   * of the request with a positive count, no ask gets more than its outstanding count, and all of them together
   * fit the node's unallocated resource the engine was told about, by the RM's calculator ({@link ResourceFit}).
   * Whether it still fits when applied (the asks and the node may have changed meanwhile) is checked container by
   * container then, and what no longer matches is discarded, not held against the engine.
   */
  static String check(ScheduleResponse response, Snapshot snapshot) {
    if (!response.getRequestId().equals(snapshot.request.getRequestId())) {
      return "answer to request " + response.getRequestId() + ", not " + snapshot.request.getRequestId();
    }
    Map<String, Integer> perAsk = new HashMap<>();
    org.apache.hadoop.yarn.api.records.Resource need = org.apache.hadoop.yarn.util.resource.Resources.createResource(0);
    for (Assignment a : response.getAssignmentsList()) {
      AskRef ref = snapshot.asks.get(a.getAskId());
      if (ref == null) {
        return "unknown ask id " + a.getAskId();
      }
      if (a.getCount() <= 0) {
        return "non-positive count " + a.getCount() + " for " + a.getAskId();
      }
      int total = perAsk.merge(a.getAskId(), a.getCount(), Integer::sum);
      if (total > ref.outstanding) {
        return total + " containers for " + a.getAskId() + " which has " + ref.outstanding + " outstanding";
      }
      org.apache.hadoop.yarn.util.resource.Resources.addTo(need,
          org.apache.hadoop.yarn.util.resource.Resources.multiply(ref.capability, a.getCount()));
    }
    if (!ResourceFit.fits(snapshot.calculator, need, 1, snapshot.nodeFree)) {
      return "assignments need " + need + ", node had " + snapshot.nodeFree + " unallocated ("
          + snapshot.calculator.getClass().getSimpleName() + ")";
    }
    return null;
  }
}
