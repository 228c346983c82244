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
import org.yarnrl.v1.ScheduleRequest;
import org.yarnrl.v1.ScheduleResponse;

/**
 * A scripted engine on a real loopback gRPC server, for the unit tests of what the plugin does with answers a real
 * policy never gives (invalid ones, another protocol version, a fixed node). Real engines: {@link EngineProcess}.
 */
final class FakeEngine implements AutoCloseable {
  final AtomicInteger scheduleCalls = new AtomicInteger();
  final AtomicInteger infoCalls = new AtomicInteger();
  private final Server server;

  FakeEngine(String protocolVersion, Function<ScheduleRequest, ScheduleResponse> answer) throws Exception {
    this(0, protocolVersion, answer);
  }

  /** On a fixed port (0: any), so that another engine can take the same address after this one stops. */
  FakeEngine(int port, String protocolVersion, Function<ScheduleRequest, ScheduleResponse> answer) throws Exception {
    server = ServerBuilder.forPort(port).addService(new PolicyEngineGrpc.PolicyEngineImplBase() {
      @Override
      public void getInfo(GetInfoRequest req, StreamObserver<GetInfoResponse> out) {
        infoCalls.incrementAndGet();
        out.onNext(GetInfoResponse.newBuilder().setProtocolVersion(protocolVersion).setPolicy("scripted").build());
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

  @Override
  public void close() throws InterruptedException {
    server.shutdownNow();
    server.awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
  }
}
