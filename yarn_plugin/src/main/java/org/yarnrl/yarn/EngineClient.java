package org.yarnrl.yarn;

import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.yarnrl.v1.Event;
import org.yarnrl.v1.GetInfoRequest;
import org.yarnrl.v1.GetInfoResponse;
import org.yarnrl.v1.PolicyEngineGrpc;
import org.yarnrl.v1.ReportRequest;
import org.yarnrl.v1.ScheduleRequest;
import org.yarnrl.v1.ScheduleResponse;

/**
 * The plugin's connection to the policy engine: Schedule calls with a per-call deadline behind a circuit breaker,
 * and Report events sent in batches from a background thread so that feedback never holds the scheduler lock.
 *
 * <p>Breaker: after {@code failureThreshold} consecutive failed calls the engine is skipped for {@code openMillis};
 * then one call probes it (half-open): success closes the breaker, failure opens it again. State changes are logged
 * once each.
 */
class EngineClient implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EngineClient.class);

  enum Breaker { CLOSED, OPEN, HALF_OPEN }

  /** Why a Schedule call gave no usable answer. */
  enum Failure { TIMEOUT, UNAVAILABLE, ERROR }

  static final class CallFailed extends Exception {
    final Failure failure;

    CallFailed(Failure failure, String message, Throwable cause) {
      super(message, cause);
      this.failure = failure;
    }
  }

  private final String address;
  private final long deadlineMillis;
  private final int failureThreshold;
  private final long openMillis;
  private final LongSupplier clock;
  private final ManagedChannel channel;
  private final PolicyEngineGrpc.PolicyEngineBlockingStub stub;
  private final PolicyEngineGrpc.PolicyEngineStub asyncStub;
  private final RlSchedulerMetrics metrics;

  private Breaker breaker = Breaker.CLOSED;
  private int consecutiveFailures;
  private long openUntil;

  /** Tries per Report batch while the engine answers UNAVAILABLE (200 + 400 ms of backoff in all). */
  static final int REPORT_ATTEMPTS = 3;
  static final long REPORT_RETRY_BACKOFF_MILLIS = 200;

  private final BlockingQueue<Event> pendingEvents;
  private final Thread reporter;
  private final long reportIntervalMillis;
  private volatile boolean closed;

  EngineClient(String address, long deadlineMillis, int failureThreshold, long openMillis,
      long reportIntervalMillis, int reportQueueCapacity, RlSchedulerMetrics metrics, LongSupplier clock) {
    this.address = address;
    this.deadlineMillis = deadlineMillis;
    this.failureThreshold = Math.max(1, failureThreshold);
    this.openMillis = openMillis;
    this.clock = clock;
    this.metrics = metrics;
    this.channel = ManagedChannelBuilder.forTarget(address).usePlaintext().build();
    this.stub = PolicyEngineGrpc.newBlockingStub(channel);
    this.asyncStub = PolicyEngineGrpc.newStub(channel);
    this.pendingEvents = new ArrayBlockingQueue<>(Math.max(16, reportQueueCapacity));
    this.reportIntervalMillis = reportIntervalMillis;
    channel.getState(true); // connect now, not on the first heartbeat
    this.reporter = new Thread(this::reportLoop, "yarnrl-engine-report");
    reporter.setDaemon(true);
    reporter.start();
  }

  String address() {
    return address;
  }

  /** Whether the next heartbeat may ask the engine (false while the breaker is open). Caller holds the lock. */
  synchronized boolean allowCall() {
    if (breaker == Breaker.OPEN) {
      if (clock.getAsLong() < openUntil) {
        return false;
      }
      setBreaker(Breaker.HALF_OPEN, "probing the engine again");
      channel.resetConnectBackoff(); // an engine that came back must not wait out gRPC's reconnect backoff
    }
    return true;
  }

  synchronized Breaker breakerState() {
    return breaker;
  }

  ScheduleResponse schedule(ScheduleRequest request) throws CallFailed {
    try {
      ScheduleResponse response =
          stub.withDeadlineAfter(deadlineMillis, TimeUnit.MILLISECONDS).schedule(request);
      return response;
    } catch (StatusRuntimeException e) {
      throw failed(e.getStatus(), e);
    }
  }

  /**
   * Schedule without waiting: the answer (or why there is none) is handed to {@code done} on a gRPC thread, never
   * the caller's. The call carries the same deadline as {@link #schedule}; the caller holds no lock while it runs.
   */
  void scheduleAsync(ScheduleRequest request, BiConsumer<ScheduleResponse, CallFailed> done) {
    asyncStub.withDeadlineAfter(deadlineMillis, TimeUnit.MILLISECONDS).schedule(request,
        new StreamObserver<ScheduleResponse>() {
          private ScheduleResponse response;

          @Override
          public void onNext(ScheduleResponse value) {
            response = value;
          }

          @Override
          public void onError(Throwable t) {
            Status status = Status.fromThrowable(t);
            done.accept(null, failed(status, t));
          }

          @Override
          public void onCompleted() {
            done.accept(response, response == null
                ? new CallFailed(Failure.ERROR, "no answer in a completed call", null) : null);
          }
        });
  }

  private static CallFailed failed(Status status, Throwable cause) {
    Status.Code code = status.getCode();
    Failure f = code == Status.Code.DEADLINE_EXCEEDED ? Failure.TIMEOUT
        : code == Status.Code.UNAVAILABLE ? Failure.UNAVAILABLE : Failure.ERROR;
    return new CallFailed(f, code + ": " + status.getDescription(), cause);
  }

  /**
   * Runs {@code onLost} (on a gRPC thread) each time the channel leaves READY: the engine went away or restarted,
   * and whoever answers next must be asked its protocol version again ({@link EngineHandshake}).
   */
  void onConnectionLost(Runnable onLost) {
    watch(channel.getState(false), onLost);
  }

  private void watch(ConnectivityState seen, Runnable onLost) {
    if (closed) {
      return;
    }
    channel.notifyWhenStateChanged(seen, () -> {
      ConnectivityState now = channel.getState(false);
      if (seen == ConnectivityState.READY && now != ConnectivityState.READY) {
        onLost.run();
      }
      watch(now, onLost);
    });
  }

  GetInfoResponse info(long timeoutMillis) {
    return stub.withDeadlineAfter(timeoutMillis, TimeUnit.MILLISECONDS).getInfo(GetInfoRequest.getDefaultInstance());
  }

  /** A call succeeded and its answer was used. */
  synchronized void recordSuccess() {
    consecutiveFailures = 0;
    if (breaker != Breaker.CLOSED) {
      setBreaker(Breaker.CLOSED, "engine answering again");
    }
  }

  /** A call failed or its answer could not be used. */
  synchronized void recordFailure(String why) {
    consecutiveFailures++;
    if (breaker == Breaker.HALF_OPEN
        || (breaker == Breaker.CLOSED && consecutiveFailures >= failureThreshold)) {
      openUntil = clock.getAsLong() + openMillis;
      setBreaker(Breaker.OPEN, consecutiveFailures + " consecutive failures, last: " + why
          + "; scheduling natively for " + openMillis + " ms");
    }
  }

  private void setBreaker(Breaker next, String why) {
    LOG.info("yarn-rl engine {}: circuit breaker {} -> {} ({})", address, breaker, next, why);
    breaker = next;
    metrics.breakerState = next.name();
  }

  /** Queue a feedback event; dropped (and counted) when the queue is full, never blocking the caller. */
  void report(Event event) {
    if (closed || !pendingEvents.offer(event)) {
      metrics.reportEventsDropped.increment();
    }
  }

  private void reportLoop() {
    List<Event> batch = new ArrayList<>();
    while (!closed) {
      try {
        Event first = pendingEvents.poll(reportIntervalMillis, TimeUnit.MILLISECONDS);
        if (first == null) {
          continue;
        }
        batch.add(first);
        pendingEvents.drainTo(batch, 1023);
        sendWithRetry(batch);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } finally {
        batch.clear();
      }
    }
  }

  /**
   * Sends one batch. An UNAVAILABLE engine (still connecting, restarting) gets a few more tries with a short backoff,
   * so a blip does not cost the learner its feedback; after that the batch is dropped and counted.
   */
  private void sendWithRetry(List<Event> batch) throws InterruptedException {
    ReportRequest request = ReportRequest.newBuilder().addAllEvents(batch).build();
    for (int attempt = 1; ; attempt++) {
      try {
        stub.withDeadlineAfter(Math.max(1000, deadlineMillis), TimeUnit.MILLISECONDS).report(request);
        metrics.reportEventsSent.add(batch.size());
        return;
      } catch (StatusRuntimeException e) {
        boolean transient_ = e.getStatus().getCode() == Status.Code.UNAVAILABLE;
        if (!transient_ || attempt >= REPORT_ATTEMPTS || closed) {
          // feedback is best effort: an engine that stays down loses these events, scheduling is unaffected
          metrics.reportFailures.increment();
          metrics.reportEventsDropped.add(batch.size());
          return;
        }
        Thread.sleep(REPORT_RETRY_BACKOFF_MILLIS * attempt);
      }
    }
  }

  @Override
  public void close() {
    closed = true;
    reporter.interrupt();
    channel.shutdownNow();
    try {
      channel.awaitTermination(2, TimeUnit.SECONDS);
      reporter.join(2000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
