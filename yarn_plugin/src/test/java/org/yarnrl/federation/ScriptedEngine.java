package org.yarnrl.federation;

import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.yarnrl.v1.GetInfoRequest;
import org.yarnrl.v1.GetInfoResponse;
import org.yarnrl.v1.PolicyEngineGrpc;
import org.yarnrl.v1.RouteRequest;
import org.yarnrl.v1.RouteResponse;

/**
 * A scripted engine on a real loopback gRPC server, for the federation policies' unit tests: it speaks the
 * protocol version, records every {@code Route} request and answers with {@link #answer}, for the answers a real
 * policy never gives.
 */
final class ScriptedEngine implements AutoCloseable {
  final List<RouteRequest> seen = new CopyOnWriteArrayList<>();
  final AtomicReference<Function<RouteRequest, RouteResponse>> answer = new AtomicReference<>();
  private final Server server;

  ScriptedEngine() throws IOException {
    server = ServerBuilder.forPort(0).addService(new PolicyEngineGrpc.PolicyEngineImplBase() {
      @Override
      public void getInfo(GetInfoRequest req, StreamObserver<GetInfoResponse> out) {
        out.onNext(GetInfoResponse.newBuilder().setProtocolVersion("yarnrl.v1").setPolicy("scripted").build());
        out.onCompleted();
      }

      @Override
      public void route(RouteRequest req, StreamObserver<RouteResponse> out) {
        seen.add(req);
        out.onNext(answer.get().apply(req));
        out.onCompleted();
      }
    }).build().start();
  }

  /** host:port, for {@code yarnrl.federation.engine.address}. */
  String address() {
    return "127.0.0.1:" + server.getPort();
  }

  @Override
  public void close() {
    server.shutdownNow();
  }
}
