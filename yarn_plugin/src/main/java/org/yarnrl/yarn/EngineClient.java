package org.yarnrl.yarn;

import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
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
import org.yarnrl.v1.RouteRequest;
import org.yarnrl.v1.RouteResponse;
import org.yarnrl.v1.ScheduleBatchRequest;
import org.yarnrl.v1.ScheduleBatchResponse;
import org.yarnrl.v1.ScheduleRequest;
import org.yarnrl.v1.ScheduleResponse;

/**
 * The plugin's connection to the policy engine: Schedule calls with a per-call deadline behind a circuit breaker,
 * and Report events sent in batches from a background thread so that feedback never holds the scheduler lock.
 *
 * <p>Breaker: after {@code failureThreshold} consecutive failed calls the engine is skipped for {@code openMillis};
 * then one call probes it (half-open): success closes the breaker, failure opens it again. State changes are logged
 * once each.
 *
 * <p>The channel (plaintext, TLS, mTLS, token) comes from {@link EngineChannels}; several clients behind
 * {@link EngineFailover} make the failover set, and only the active one writes the breaker state to the metrics.
 */
class EngineClient implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EngineClient.class);

  enum Breaker { CLOSED, OPEN, HALF_OPEN }

  /**
   * Why a Schedule call gave no usable answer. The last three are the batched path's per-node reasons
   * ({@link BatchPlanner}): a plan older than its bound when its node update ran, a node the engine refused in its
   * batch, a batch answer that breaks the batch's rules (whole-batch checks; a single answer's are
   * {@link Snapshots#check}).
   */
  enum Failure { TIMEOUT, UNAVAILABLE, ERROR, STALE_PLAN, REFUSED_NODE, INVALID_BATCH }

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
  private final HealthGrpc.HealthBlockingStub health;
  private final EngineChannels channels;
  private final RlSchedulerMetrics metrics;
  /** Whether this client's breaker state is the one the metrics show (the active engine of a failover set). */
  private volatile boolean active = true;
  private String lastSecurityProblem;

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
    this(address, EngineChannels.plaintext(), deadlineMillis, failureThreshold, openMillis, reportIntervalMillis,
        reportQueueCapacity, metrics, clock);
  }

  EngineClient(String address, EngineChannels channels, long deadlineMillis, int failureThreshold, long openMillis,
      long reportIntervalMillis, int reportQueueCapacity, RlSchedulerMetrics metrics, LongSupplier clock) {
    this.address = address;
    this.deadlineMillis = deadlineMillis;
    this.failureThreshold = Math.max(1, failureThreshold);
    this.openMillis = openMillis;
    this.clock = clock;
    this.metrics = metrics;
    this.channels = channels;
    this.channel = channels.open(address);
    this.stub = channels.withToken(PolicyEngineGrpc.newBlockingStub(channel));
    this.asyncStub = channels.withToken(PolicyEngineGrpc.newStub(channel));
    this.health = channels.withToken(HealthGrpc.newBlockingStub(channel));
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

  /** Route (the federation Router's home sub-cluster choice) with the same deadline and failure reading. */
  RouteResponse route(RouteRequest request) throws CallFailed {
    try {
      return stub.withDeadlineAfter(deadlineMillis, TimeUnit.MILLISECONDS).route(request);
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

  /**
   * ScheduleBatch without waiting (many nodes per call, {@link BatchPlanner}): the answer or its failure goes to
   * {@code done} on a gRPC thread, with its own deadline (a batch is many decisions).
   */
  void scheduleBatchAsync(ScheduleBatchRequest request, long deadline,
      BiConsumer<ScheduleBatchResponse, CallFailed> done) {
    asyncStub.withDeadlineAfter(deadline, TimeUnit.MILLISECONDS).scheduleBatch(request,
        new StreamObserver<ScheduleBatchResponse>() {
          private ScheduleBatchResponse response;

          @Override
          public void onNext(ScheduleBatchResponse value) {
            response = value;
          }

          @Override
          public void onError(Throwable t) {
            done.accept(null, failed(Status.fromThrowable(t), t));
          }

          @Override
          public void onCompleted() {
            done.accept(response, response == null
                ? new CallFailed(Failure.ERROR, "no answer in a completed call", null) : null);
          }
        });
  }

  private CallFailed failed(Status status, Throwable cause) {
    Status.Code code = status.getCode();
    Failure f = code == Status.Code.DEADLINE_EXCEEDED ? Failure.TIMEOUT
        : code == Status.Code.UNAVAILABLE ? Failure.UNAVAILABLE : Failure.ERROR;
    // a TLS or token refusal says which setting to fix (logged once per distinct problem)
    String security = securityProblem(cause instanceof StatusRuntimeException ? (StatusRuntimeException) cause
        : status.asRuntimeException());
    return new CallFailed(f, code + ": " + status.getDescription() + (security == null ? "" : " (" + security + ")"),
        cause);
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

  /** What a grpc.health.v1 check of the engine's service said. */
  enum Health { SERVING, NOT_SERVING, UNREACHABLE }

  /** One health check result with the reason when it is not SERVING. */
  static final class HealthCheck {
    final Health health;
    final String detail;

    HealthCheck(Health health, String detail) {
      this.health = health;
      this.detail = detail;
    }

    @Override
    public String toString() {
      return detail.isEmpty() ? health.name() : health + " (" + detail + ")";
    }
  }

  /**
   * Health check of the PolicyEngine service (grpc.health.v1, with the channel's TLS and token: the engine applies
   * the same policy to health as to scheduling). An engine without the health service that answers UNIMPLEMENTED
   * counts as SERVING: it is reachable, and its Schedule calls decide the rest. A channel waiting out gRPC's
   * reconnect backoff is told to retry now, so a restarted engine is seen at the next check.
   */
  HealthCheck checkHealth(long timeoutMillis) {
    if (channel.getState(false) == ConnectivityState.TRANSIENT_FAILURE) {
      channel.resetConnectBackoff();
    }
    try {
      HealthCheckResponse r = health.withDeadlineAfter(timeoutMillis, TimeUnit.MILLISECONDS)
          .check(HealthCheckRequest.newBuilder().setService(PolicyEngineGrpc.SERVICE_NAME).build());
      if (r.getStatus() == HealthCheckResponse.ServingStatus.SERVING) {
        return new HealthCheck(Health.SERVING, "");
      }
      return new HealthCheck(Health.NOT_SERVING, r.getStatus().name());
    } catch (StatusRuntimeException e) {
      Status.Code code = e.getStatus().getCode();
      if (code == Status.Code.UNIMPLEMENTED) {
        return new HealthCheck(Health.SERVING, "");
      }
      String security = securityProblem(e);
      return new HealthCheck(Health.UNREACHABLE, security != null ? security
          : code + (e.getStatus().getDescription() == null ? "" : ": " + e.getStatus().getDescription()));
    }
  }

  /** The TLS/token reading of a failure ({@link EngineChannels#explainFailure}); logged once per distinct problem. */
  private String securityProblem(StatusRuntimeException e) {
    String problem = channels.explainFailure(e);
    if (problem != null) {
      synchronized (this) {
        if (!problem.equals(lastSecurityProblem)) {
          lastSecurityProblem = problem;
          LOG.error("yarn-rl engine {}: {}", address, problem);
        }
      }
    }
    return problem;
  }

  boolean isActive() {
    return active;
  }

  /** Whether this client is the one the metrics and logs follow (see {@link EngineFailover}). */
  void setActive(boolean active) {
    this.active = active;
    if (active) {
      synchronized (this) {
        metrics.breakerState = breaker.name();
      }
    }
  }

  /**
   * The engine is healthy again after an outage: end the breaker's open period now, so the next heartbeat probes
   * it instead of waiting out the rest of the period.
   */
  synchronized void probeNow(String why) {
    if (breaker == Breaker.OPEN) {
      openUntil = clock.getAsLong();
      LOG.info("yarn-rl engine {}: {}; probing it on the next heartbeat", address, why);
    }
  }

  /** Close the breaker without a probe (failback to an engine that has been healthy for a while). */
  synchronized void resetBreaker(String why) {
    consecutiveFailures = 0;
    if (breaker != Breaker.CLOSED) {
      setBreaker(Breaker.CLOSED, why);
    }
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
    if (active) {
      metrics.breakerState = next.name();
    }
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
