package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.yarnrl.v1.PolicyEngineGrpc;
import org.yarnrl.v1.ReportRequest;
import org.yarnrl.v1.ReportResponse;
import org.yarnrl.v1.ScheduleRequest;
import org.yarnrl.v1.ScheduleResponse;

/** The plugin's engine client against real gRPC servers on loopback: deadline, errors, circuit breaker, Report. */
class EngineClientTest {
  private final AtomicLong now = new AtomicLong(1_000_000);
  private final RlSchedulerMetrics metrics = new RlSchedulerMetrics();
  private Server server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.shutdownNow();
    }
  }

  private String serve(PolicyEngineGrpc.PolicyEngineImplBase impl) throws Exception {
    server = ServerBuilder.forPort(0).addService(impl).build().start();
    return "127.0.0.1:" + server.getPort();
  }

  private EngineClient client(String address, long deadlineMs) {
    return new EngineClient(address, deadlineMs, 3, 5000, 20, 64, metrics, now::get);
  }

  @Test
  void slowEngineTimesOutAtTheDeadline() throws Exception {
    String address = serve(new PolicyEngineGrpc.PolicyEngineImplBase() {
      @Override
      public void schedule(ScheduleRequest req, StreamObserver<ScheduleResponse> out) {
        try {
          Thread.sleep(500);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        out.onNext(ScheduleResponse.newBuilder().setRequestId(req.getRequestId()).build());
        out.onCompleted();
      }
    });
    try (EngineClient c = client(address, 30)) {
      long start = System.nanoTime();
      EngineClient.CallFailed e = assertThrows(EngineClient.CallFailed.class,
          () -> c.schedule(ScheduleRequest.newBuilder().setRequestId("1").build()));
      assertEquals(EngineClient.Failure.TIMEOUT, e.failure);
      assertTrue((System.nanoTime() - start) / 1e6 < 400, "deadline not enforced");
    }
  }

  @Test
  void answersComeBackAndReportsAreBatched() throws Exception {
    AtomicInteger reported = new AtomicInteger();
    String address = serve(new PolicyEngineGrpc.PolicyEngineImplBase() {
      @Override
      public void schedule(ScheduleRequest req, StreamObserver<ScheduleResponse> out) {
        out.onNext(ScheduleResponse.newBuilder().setRequestId(req.getRequestId()).setDecisionId("d1").build());
        out.onCompleted();
      }

      @Override
      public void report(ReportRequest req, StreamObserver<ReportResponse> out) {
        reported.addAndGet(req.getEventsCount());
        out.onNext(ReportResponse.newBuilder().setAccepted(req.getEventsCount()).build());
        out.onCompleted();
      }
    });
    try (EngineClient c = client(address, 1000)) {
      assertEquals("d1", c.schedule(ScheduleRequest.newBuilder().setRequestId("7").build()).getDecisionId());
      for (int i = 0; i < 10; i++) {
        c.report(org.yarnrl.v1.Event.newBuilder().setTimestampMs(i).build());
      }
      for (int i = 0; i < 500 && reported.get() < 10; i++) { // up to 10 s: the report thread flushes late on a loaded machine
        Thread.sleep(20);
      }
      assertEquals(10, reported.get());
      assertEquals(10, metrics.getReportEventsSent());
    }
  }

  @Test
  void breakerOpensAfterConsecutiveFailuresAndProbesAfterTheOpenPeriod() throws Exception {
    int port = EngineProcess.freePort(); // nothing listens there
    try (EngineClient c = client("127.0.0.1:" + port, 200)) {
      EngineClient.CallFailed e = assertThrows(EngineClient.CallFailed.class,
          () -> c.schedule(ScheduleRequest.getDefaultInstance()));
      assertEquals(EngineClient.Failure.UNAVAILABLE, e.failure);
      assertTrue(c.allowCall());
      c.recordFailure("1");
      c.recordFailure("2");
      assertEquals(EngineClient.Breaker.CLOSED, c.breakerState());
      c.recordFailure("3");
      assertEquals(EngineClient.Breaker.OPEN, c.breakerState());
      assertEquals("OPEN", metrics.getBreakerState());
      assertFalse(c.allowCall());
      now.addAndGet(4999);
      assertFalse(c.allowCall());
      now.addAndGet(1);
      assertTrue(c.allowCall()); // half-open: one probe
      assertEquals(EngineClient.Breaker.HALF_OPEN, c.breakerState());
      c.recordFailure("probe failed");
      assertEquals(EngineClient.Breaker.OPEN, c.breakerState()); // one failure re-opens it
      now.addAndGet(5000);
      assertTrue(c.allowCall());
      c.recordSuccess();
      assertEquals(EngineClient.Breaker.CLOSED, c.breakerState());
      c.recordFailure("a");
      c.recordSuccess();
      c.recordFailure("b");
      c.recordFailure("c");
      assertEquals(EngineClient.Breaker.CLOSED, c.breakerState()); // failures must be consecutive
    }
  }

  @Test
  void reportsToADeadEngineAreDroppedAndCounted() throws Exception {
    try (EngineClient c = client("127.0.0.1:" + EngineProcess.freePort(), 50)) {
      c.report(org.yarnrl.v1.Event.newBuilder().setTimestampMs(1).build());
      for (int i = 0; i < 200 && metrics.getReportFailures() == 0; i++) {
        Thread.sleep(20);
      }
      assertEquals(1, metrics.getReportFailures());
      assertEquals(1, metrics.getReportEventsDropped());
    }
  }

  @Test
  void aReportBatchSurvivesABriefUnavailableEngine() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    AtomicInteger received = new AtomicInteger();
    String address = serve(new PolicyEngineGrpc.PolicyEngineImplBase() {
      @Override
      public void report(ReportRequest req, StreamObserver<ReportResponse> out) {
        if (calls.incrementAndGet() == 1) {
          out.onError(io.grpc.Status.UNAVAILABLE.withDescription("restarting").asRuntimeException());
          return;
        }
        received.addAndGet(req.getEventsCount());
        out.onNext(ReportResponse.getDefaultInstance());
        out.onCompleted();
      }
    });
    try (EngineClient c = client(address, 50)) {
      c.report(org.yarnrl.v1.Event.newBuilder().setTimestampMs(1).build());
      c.report(org.yarnrl.v1.Event.newBuilder().setTimestampMs(2).build());
      for (int i = 0; i < 200 && metrics.getReportEventsSent() < 2; i++) {
        Thread.sleep(20);
      }
      assertTrue(calls.get() >= 2, "calls " + calls.get());
      assertEquals(2, received.get());
      assertEquals(2, metrics.getReportEventsSent());
      assertEquals(0, metrics.getReportEventsDropped());
      assertEquals(0, metrics.getReportFailures());
    }
  }
}
