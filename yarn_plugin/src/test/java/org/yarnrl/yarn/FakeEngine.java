package org.yarnrl.yarn;

import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.yarnrl.v1.GetInfoRequest;
import org.yarnrl.v1.GetInfoResponse;
import org.yarnrl.v1.PolicyEngineGrpc;
import org.yarnrl.v1.ReportRequest;
import org.yarnrl.v1.ReportResponse;
import org.yarnrl.v1.ScheduleBatchRequest;
import org.yarnrl.v1.ScheduleBatchResponse;
import org.yarnrl.v1.ScheduleRequest;
import org.yarnrl.v1.ScheduleResponse;

/**
 * A scripted engine on a real loopback gRPC server, for the unit tests of what the plugin does with answers a real
 * policy never gives (invalid ones, another protocol version, a fixed node). Real engines: {@link EngineProcess}.
 */
final class FakeEngine implements AutoCloseable {
  final AtomicInteger scheduleCalls = new AtomicInteger();
  final AtomicInteger infoCalls = new AtomicInteger();
  final AtomicInteger batchCalls = new AtomicInteger();
  private final Server server;

  FakeEngine(String protocolVersion, Function<ScheduleRequest, ScheduleResponse> answer) throws Exception {
    this(0, protocolVersion, answer, null);
  }

  /** Also speaking ScheduleBatch (GetInfo capability "schedule-batch") with these answers. */
  FakeEngine(String protocolVersion, Function<ScheduleRequest, ScheduleResponse> answer,
      Function<ScheduleBatchRequest, ScheduleBatchResponse> batch) throws Exception {
    this(0, protocolVersion, answer, batch);
  }

  FakeEngine(int port, String protocolVersion, Function<ScheduleRequest, ScheduleResponse> answer) throws Exception {
    this(port, protocolVersion, answer, null);
  }

  /** On a fixed port (0: any), so that another engine can take the same address after this one stops. */
  FakeEngine(int port, String protocolVersion, Function<ScheduleRequest, ScheduleResponse> answer,
      Function<ScheduleBatchRequest, ScheduleBatchResponse> batch) throws Exception {
    server = ServerBuilder.forPort(port).addService(new PolicyEngineGrpc.PolicyEngineImplBase() {
      @Override
      public void getInfo(GetInfoRequest req, StreamObserver<GetInfoResponse> out) {
        infoCalls.incrementAndGet();
        GetInfoResponse.Builder info = GetInfoResponse.newBuilder().setProtocolVersion(protocolVersion)
            .setPolicy("scripted").addCapabilities("schedule");
        if (batch != null) {
          info.addCapabilities("schedule-batch").setMaxBatchNodes(10_000).setMaxBatchAsks(10_000);
        }
        out.onNext(info.build());
        out.onCompleted();
      }

      @Override
      public void scheduleBatch(ScheduleBatchRequest req, StreamObserver<ScheduleBatchResponse> out) {
        batchCalls.incrementAndGet();
        if (batch == null) {
          out.onError(io.grpc.Status.UNIMPLEMENTED.asRuntimeException());
          return;
        }
        ScheduleBatchResponse r;
        try {
          r = batch.apply(req);
        } catch (io.grpc.StatusRuntimeException e) {
          out.onError(e);
          return;
        }
        out.onNext(r);
        out.onCompleted();
      }

      @Override
      public void schedule(ScheduleRequest req, StreamObserver<ScheduleResponse> out) {
        scheduleCalls.incrementAndGet();
        ScheduleResponse r;
        try {
          r = answer.apply(req);
        } catch (io.grpc.StatusRuntimeException e) { // a scripted failure status
          out.onError(e);
          return;
        }
        out.onNext(r);
        out.onCompleted();
      }

      @Override
      public void report(ReportRequest req, StreamObserver<ReportResponse> out) {
        out.onNext(ReportResponse.newBuilder().setAccepted(req.getEventsCount()).build());
        out.onCompleted();
      }
    }).build().start();
  }

  String address() {
    return "127.0.0.1:" + server.getPort();
  }

  /** Everything that fits, in ask order, but only on nodes of this host; elsewhere nothing (wait). */
  static ScheduleResponse onlyOn(String host, ScheduleRequest req) {
    ScheduleResponse.Builder b = ScheduleResponse.newBuilder().setRequestId(req.getRequestId()).setDecisionId(
        "d" + req.getRequestId());
    if (!req.getNode().getHost().equals(host)) {
      return b.build();
    }
    long free = req.getNode().getUnallocated().getMemoryMb();
    long freeCores = req.getNode().getUnallocated().getVcores();
    for (org.yarnrl.v1.ResourceAsk a : req.getAsksList()) {
      long mem = a.getResource().getMemoryMb();
      long cores = Math.max(1, a.getResource().getVcores());
      int n = (int) Math.min(a.getNumContainers(), Math.min(free / mem, freeCores / cores));
      if (n > 0) {
        b.addAssignments(org.yarnrl.v1.Assignment.newBuilder().setAskId(a.getAskId()).setCount(n));
        free -= n * mem;
        freeCores -= n * cores;
      }
    }
    return b.build();
  }

  /**
   * Each node of a batch as the single request the plugin would have sent for its heartbeat (the batch's asks with
   * that node's host and rack entries), answered by {@code single}; nothing is booked between nodes (a scripted
   * engine answering one node only, or breaking the batch's rules on purpose).
   */
  static ScheduleBatchResponse perNode(ScheduleBatchRequest req, Function<ScheduleRequest, ScheduleResponse> single) {
    ScheduleBatchResponse.Builder b = ScheduleBatchResponse.newBuilder().setBatchId(req.getBatchId())
        .setPolicy("scripted");
    org.yarnrl.v1.ScheduleBatchLocality t = req.getLocality();
    for (int i = 0; i < req.getNodesCount(); i++) {
      org.yarnrl.v1.NodeSnapshot node = req.getNodes(i);
      String requestId = i < req.getRequestIdsCount() ? req.getRequestIds(i) : "";
      ScheduleRequest.Builder one = ScheduleRequest.newBuilder().setRequestId(requestId).setNode(node)
          .setCluster(req.getCluster());
      for (int a = 0; a < req.getAsksCount(); a++) {
        org.yarnrl.v1.ResourceAsk.Builder ask = req.getAsks(a).toBuilder();
        for (int j = 0; j < t.getAskIndexCount(); j++) {
          String name = t.getNames(t.getNameIndex(j));
          if (t.getAskIndex(j) == a && (name.equals(node.getHost()) || name.equals(node.getRack()))) {
            ask.addLocality(org.yarnrl.v1.LocalityRequest.newBuilder().setResourceName(name)
                .setNumContainers(t.getNumContainers(j)).setRelaxLocality(t.getRelaxLocality(j)));
          }
        }
        one.addAsks(ask);
      }
      ScheduleResponse r = single.apply(one.build());
      b.addResults(org.yarnrl.v1.ScheduleBatchNodeResult.newBuilder().setNodeId(node.getNodeId())
          .setRequestId(requestId).setDecisionId(r.getDecisionId()).addAllAssignments(r.getAssignmentsList()));
    }
    return b.build();
  }

  @Override
  public void close() throws InterruptedException {
    server.shutdownNow();
    server.awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
  }
}
