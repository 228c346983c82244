package org.yarnrl.yarn;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.yarn.api.records.ResourceInformation;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.api.records.ResourceUtilization;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainer;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.Queue;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CSQueue;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.PendingAsk;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.fica.FiCaSchedulerApp;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.common.fica.FiCaSchedulerNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.placement.AppPlacementAllocator;
import org.apache.hadoop.yarn.server.scheduler.SchedulerRequestKey;
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
 * the "*" outstanding count and {@code locality} holds YARN's own host and rack counts. The ask id is
 * {@code <appAttemptId>/<priority>/<allocationRequestId>}.
 */
final class Snapshots {
  private Snapshots() {}

  /** What the plugin keeps about one ask of a request to apply the engine's answer to it. */
  static final class AskRef {
    final FiCaSchedulerApp app;
    final SchedulerRequestKey key;
    final org.apache.hadoop.yarn.api.records.Resource capability;
    final int outstanding;

    AskRef(FiCaSchedulerApp app, SchedulerRequestKey key, org.apache.hadoop.yarn.api.records.Resource capability,
        int outstanding) {
      this.app = app;
      this.key = key;
      this.capability = capability;
      this.outstanding = outstanding;
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

    Snapshot(ScheduleRequest request, Map<String, AskRef> asks) {
      this.request = request;
      this.asks = asks;
    }
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
   * The asks of the given attempts (in FIFO order) that could use this node, or an empty snapshot when none has
   * pending containers.
   */
  static Snapshot build(String requestId, FiCaSchedulerNode node, List<? extends FiCaSchedulerApp> attempts,
      Map<org.apache.hadoop.yarn.api.records.ApplicationId, JobInfo> jobs, ClusterSummary cluster, long nowMs) {
    Map<String, AskRef> refs = new LinkedHashMap<>();
    List<ResourceAsk> asks = new ArrayList<>();
    for (FiCaSchedulerApp app : attempts) {
      JobInfo job = jobs.get(app.getApplicationId());
      Queue queue = app.getQueue();
      String queuePath = queue instanceof CSQueue ? ((CSQueue) queue).getQueuePath() : null;
      org.apache.hadoop.yarn.api.records.Resource headroom = queuePath == null ? null : app.getHeadroom();
      for (SchedulerRequestKey key : app.getSchedulerKeys()) {
        PendingAsk any = app.getPendingAsk(key, ResourceRequest.ANY);
        if (any.getCount() <= 0) {
          continue;
        }
        String id = askId(app, key);
        ResourceAsk.Builder ask = ResourceAsk.newBuilder()
            .setAskId(id)
            .setApplicationId(app.getApplicationId().toString())
            .setAttemptId(app.getApplicationAttemptId().getAttemptId())
            .setQueue(app.getQueueName())
            .setUser(app.getUser())
            .setPriority(key.getPriority().getPriority())
            .setAllocationRequestId(key.getAllocationRequestId())
            .setResource(resource(any.getPerAllocationResource()))
            .setNumContainers(any.getCount())
            .setRelaxLocality(true);
        if (queuePath != null) {
          ask.setQueuePath(queuePath);
          if (headroom != null) {
            ask.setUserHeadroom(resource(headroom));
          }
        }
        AppPlacementAllocator<?> placement = app.getAppSchedulingInfo().getAppPlacementAllocator(key);
        if (placement != null) {
          String partition = placement.getPrimaryRequestedNodePartition();
          if (partition != null && !partition.isEmpty()) {
            ask.setPartition(partition);
          }
          for (Map.Entry<String, ResourceRequest> e : placement.getResourceRequests().entrySet()) {
            ResourceRequest rr = e.getValue();
            if (ResourceRequest.ANY.equals(e.getKey())) {
              ask.setRelaxLocality(rr.getRelaxLocality());
            } else if (rr.getNumContainers() > 0) {
              ask.addLocality(LocalityRequest.newBuilder().setResourceName(e.getKey())
                  .setNumContainers(rr.getNumContainers()).setRelaxLocality(rr.getRelaxLocality()));
            }
          }
        }
        if (job != null) {
          ask.setSubmitTimeMs(job.submitTimeMs);
          if (!job.metadata.equals(JobMetadata.getDefaultInstance())) {
            ask.setJob(job.metadata);
          }
        }
        asks.add(ask.build());
        refs.put(id, new AskRef(app, key, any.getPerAllocationResource(), any.getCount()));
      }
    }
    ScheduleRequest request = ScheduleRequest.newBuilder()
        .setRequestId(requestId)
        .setNode(refs.isEmpty() ? NodeSnapshot.getDefaultInstance() : node(node, nowMs))
        .addAllAsks(asks)
        .setCluster(cluster)
        .build();
    return new Snapshot(request, refs);
  }

  /**
   * Why the engine's answer cannot be applied to this heartbeat, or null when it can: every assignment names an ask
   * of the request with a positive count, no ask gets more than its outstanding count, and all of them together
   * fit the node's unallocated resources. (Locality is checked container by container when applying.)
   */
  static String check(ScheduleResponse response, Snapshot snapshot, FiCaSchedulerNode node) {
    if (!response.getRequestId().equals(snapshot.request.getRequestId())) {
      return "answer to request " + response.getRequestId() + ", not " + snapshot.request.getRequestId();
    }
    Map<String, Integer> perAsk = new HashMap<>();
    long memory = 0;
    long vcores = 0;
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
      memory += ref.capability.getMemorySize() * a.getCount();
      vcores += (long) ref.capability.getVirtualCores() * a.getCount();
    }
    org.apache.hadoop.yarn.api.records.Resource free = node.getUnallocatedResource();
    if (memory > free.getMemorySize() || vcores > free.getVirtualCores()) {
      return "assignments need " + memory + " MB / " + vcores + " vcores, node has " + free.getMemorySize()
          + " MB / " + free.getVirtualCores() + " vcores unallocated";
    }
    return null;
  }
}
