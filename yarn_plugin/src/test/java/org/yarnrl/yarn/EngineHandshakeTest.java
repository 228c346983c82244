package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.yarnrl.v1.ScheduleRequest;
import org.yarnrl.v1.ScheduleResponse;

/** The version handshake and the asynchronous Schedule call against real gRPC servers on loopback. */
class EngineHandshakeTest {
  private final RlSchedulerMetrics metrics = new RlSchedulerMetrics();

  private EngineClient client(String address, long deadlineMs) {
    return new EngineClient(address, deadlineMs, 3, 5000, 20, 64, metrics, System::currentTimeMillis);
  }

  @Test
  void aRestartedEngineIsAskedItsVersionAgainAndRefusedWhenItChanged() throws Exception {
    int port = EngineProcess.freePort();
    FakeEngine v1 = new FakeEngine(port, "yarnrl.v1", req -> ScheduleResponse.getDefaultInstance());
    try (EngineClient c = client("127.0.0.1:" + port, 1000);
         EngineHandshake h = new EngineHandshake(c, metrics, 50, 1000)) {
      MockCluster.waitFor(() -> h.state() == EngineHandshake.State.OK, "handshake with yarnrl.v1");
      assertEquals("OK", metrics.getHandshakeState());
      v1.close();
      try (FakeEngine v2 = new FakeEngine(port, "yarnrl.v2", req -> ScheduleResponse.getDefaultInstance())) {
        MockCluster.waitFor(() -> h.state() == EngineHandshake.State.REFUSED, "refusal of yarnrl.v2 after reconnect");
        assertEquals("yarnrl.v2", metrics.getEngineProtocolVersion());
        assertTrue(v2.infoCalls.get() >= 1);
      }
    }
  }

  @Test
  void anAsynchronousCallReportsItsTimeoutWithoutBlockingTheCaller() throws Exception {
    try (FakeEngine slow = new FakeEngine("yarnrl.v1", req -> {
      try {
        Thread.sleep(1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return ScheduleResponse.newBuilder().setRequestId(req.getRequestId()).build();
    });
         EngineClient c = client(slow.address(), 50)) {
      CompletableFuture<EngineClient.CallFailed> failure = new CompletableFuture<>();
      long start = System.nanoTime();
      c.scheduleAsync(ScheduleRequest.newBuilder().setRequestId("1").build(), (response, failed) -> {
        assertNull(response);
        failure.complete(failed);
      });
      assertTrue((System.nanoTime() - start) / 1e6 < 500, "scheduleAsync blocked its caller");
      EngineClient.CallFailed f = failure.get(30, TimeUnit.SECONDS);
      assertNotNull(f);
      assertEquals(EngineClient.Failure.TIMEOUT, f.failure);
    }
  }

  @Test
  void anAsynchronousAnswerComesBack() throws Exception {
    try (FakeEngine fake = new FakeEngine("yarnrl.v1",
        req -> ScheduleResponse.newBuilder().setRequestId(req.getRequestId()).setDecisionId("d").build());
         EngineClient c = client(fake.address(), 5000)) {
      CompletableFuture<ScheduleResponse> answer = new CompletableFuture<>();
      c.scheduleAsync(ScheduleRequest.newBuilder().setRequestId("42").build(), (response, failed) -> {
        if (failed != null) {
          answer.completeExceptionally(failed);
        } else {
          answer.complete(response);
        }
      });
      ScheduleResponse r = answer.get(30, TimeUnit.SECONDS);
      assertEquals("42", r.getRequestId());
      assertEquals("d", r.getDecisionId());
    }
  }
}
