package org.yarnrl.yarn;

import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerCredentials;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.yarnrl.v1.GetInfoRequest;
import org.yarnrl.v1.GetInfoResponse;
import org.yarnrl.v1.PolicyEngineGrpc;
import org.yarnrl.v1.ReportRequest;
import org.yarnrl.v1.ReportResponse;
import org.yarnrl.v1.ScheduleRequest;
import org.yarnrl.v1.ScheduleResponse;

/**
 * grpc-java engines for the plugin's tests: a PolicyEngine service whose answers a test sets (empty decisions,
 * errors), a grpc.health.v1 service with a settable status, GetInfo with a settable model version, and optionally
 * TLS credentials and a bearer-token check (UNAUTHENTICATED without it, on every service, health included).
 */
final class TestEngines {
  private TestEngines() {}

  /** One fake engine on loopback. */
  static final class Fake implements AutoCloseable {
    final Server server;
    final AtomicReference<HealthCheckResponse.ServingStatus> health =
        new AtomicReference<>(HealthCheckResponse.ServingStatus.SERVING);
    final AtomicReference<String> modelVersion = new AtomicReference<>("v1");
    /** Non-null: every Schedule fails with it. */
    final AtomicReference<Status> scheduleError = new AtomicReference<>();
    /** True: every Schedule answer over-allocates (each ask gets 1000 containers more than it has outstanding). */
    final java.util.concurrent.atomic.AtomicBoolean invalid = new java.util.concurrent.atomic.AtomicBoolean();
    /** True: every Schedule answer is "wait" (no assignment): valid, and never placing anything (issue 23). */
    final java.util.concurrent.atomic.AtomicBoolean onlyWaits = new java.util.concurrent.atomic.AtomicBoolean();
    final AtomicInteger schedules = new AtomicInteger();
    final AtomicInteger reported = new AtomicInteger();
    final String name;

    Fake(String name, ServerCredentials creds, String token) throws IOException {
      this.name = name;
      ServerBuilder<?> b = creds == null ? ServerBuilder.forPort(0) : Grpc.newServerBuilderForPort(0, creds);
      ServerInterceptor auth = token == null ? null : new TokenCheck(token);
      b.addService(auth == null ? new Engine().bindService() : ServerInterceptors.intercept(new Engine(), auth));
      b.addService(auth == null ? new Health().bindService() : ServerInterceptors.intercept(new Health(), auth));
      server = b.build().start();
    }

    String address() {
      return "127.0.0.1:" + server.getPort();
    }

    private final class Engine extends PolicyEngineGrpc.PolicyEngineImplBase {
      @Override
      public void schedule(ScheduleRequest req, StreamObserver<ScheduleResponse> out) {
        schedules.incrementAndGet();
        Status error = scheduleError.get();
        if (error != null) {
          out.onError(error.asRuntimeException());
          return;
        }
        ScheduleResponse.Builder answer = ScheduleResponse.newBuilder().setRequestId(req.getRequestId())
            .setDecisionId(name);
        if (onlyWaits.get()) {
          out.onNext(answer.build());
          out.onCompleted();
          return;
        }
        if (invalid.get()) {
          for (org.yarnrl.v1.ResourceAsk ask : req.getAsksList()) {
            answer.addAssignments(org.yarnrl.v1.Assignment.newBuilder().setAskId(ask.getAskId())
                .setCount(ask.getNumContainers() + 1000));
          }
        }
        out.onNext(answer.build());
        out.onCompleted();
      }

      @Override
      public void report(ReportRequest req, StreamObserver<ReportResponse> out) {
        reported.addAndGet(req.getEventsCount());
        out.onNext(ReportResponse.newBuilder().setAccepted(req.getEventsCount()).build());
        out.onCompleted();
      }

      @Override
      public void getInfo(GetInfoRequest req, StreamObserver<GetInfoResponse> out) {
        out.onNext(GetInfoResponse.newBuilder().setProtocolVersion("yarnrl.v1").setPolicy("fake-" + name)
            .setModelVersion(modelVersion.get()).build());
        out.onCompleted();
      }
    }

    private final class Health extends HealthGrpc.HealthImplBase {
      @Override
      public void check(HealthCheckRequest req, StreamObserver<HealthCheckResponse> out) {
        out.onNext(HealthCheckResponse.newBuilder().setStatus(health.get()).build());
        out.onCompleted();
      }
    }

    @Override
    public void close() {
      server.shutdownNow();
    }
  }

  /** UNAUTHENTICATED unless the call carries {@code authorization: Bearer <token>}. */
  static final class TokenCheck implements ServerInterceptor {
    private final String expected;

    TokenCheck(String token) {
      this.expected = "Bearer " + token;
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
        ServerCallHandler<Q, R> next) {
      String got = headers.get(EngineChannels.AUTHORIZATION);
      if (!expected.equals(got)) {
        call.close(Status.UNAUTHENTICATED.withDescription(got == null ? "missing bearer token" : "invalid token"),
            new Metadata());
        return new ServerCall.Listener<Q>() {};
      }
      return next.startCall(call, headers);
    }
  }
}
