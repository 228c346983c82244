package org.yarnrl.yarn;

import org.apache.hadoop.conf.Configuration;
import org.yarnrl.v1.Event;
import org.yarnrl.v1.RouteRequest;
import org.yarnrl.v1.RouteResponse;

/**
 * The scheduler plugin's engine connection ({@link EngineClient}: deadline, circuit breaker, channel security from
 * {@link EngineChannels}; {@link EngineHandshake}: protocol version before use and after every reconnect), opened
 * for callers outside this package that ask {@code Route} instead of {@code Schedule} — the federation Router
 * policy ({@code org.yarnrl.federation}). Nothing here blocks longer than the deadline.
 */
public final class RouteEngine implements AutoCloseable {
  /** Why a call gave an answer or none; the caller counts these. */
  public enum Outcome { ANSWERED, TIMEOUT, UNAVAILABLE, ERROR, BREAKER_OPEN, VERSION_MISMATCH }

  /** One call's outcome: the response when {@link Outcome#ANSWERED}, else the reason in {@code detail}. */
  public static final class Answer {
    public final Outcome outcome;
    public final RouteResponse response;
    public final String detail;

    Answer(Outcome outcome, RouteResponse response, String detail) {
      this.outcome = outcome;
      this.response = response;
      this.detail = detail;
    }
  }

  private final EngineClient client;
  private final EngineHandshake handshake;
  private final RlSchedulerMetrics metrics = new RlSchedulerMetrics();

  /**
   * @param conf channel security keys as the scheduler reads them ({@code yarnrl.engine.tls.*}, {@code token})
   */
  public RouteEngine(String address, Configuration conf, long deadlineMillis, int failureThreshold, long openMillis) {
    this.client = new EngineClient(address, EngineChannels.fromConf(conf), deadlineMillis, failureThreshold,
        openMillis, 200, 4096, metrics, System::currentTimeMillis);
    this.handshake = new EngineHandshake(client, metrics, 1000, Math.max(1000, deadlineMillis));
  }

  public String address() {
    return client.address();
  }

  /** Asks the engine, unless its breaker is open or its protocol version is unknown / refused. */
  public Answer route(RouteRequest request) {
    EngineHandshake.State hs = handshake.state();
    if (hs == EngineHandshake.State.REFUSED) {
      return new Answer(Outcome.VERSION_MISMATCH, null, "engine speaks " + metrics.engineProtocolVersion);
    }
    if (hs != EngineHandshake.State.OK) {
      return new Answer(Outcome.UNAVAILABLE, null, "protocol version not known yet");
    }
    if (!client.allowCall()) {
      return new Answer(Outcome.BREAKER_OPEN, null, "circuit breaker open");
    }
    try {
      return new Answer(Outcome.ANSWERED, client.route(request), "");
    } catch (EngineClient.CallFailed e) {
      client.recordFailure(e.getMessage());
      if (e.failure == EngineClient.Failure.UNAVAILABLE) {
        handshake.reconnected("a call found the engine unavailable");
      }
      Outcome o = e.failure == EngineClient.Failure.TIMEOUT ? Outcome.TIMEOUT
          : e.failure == EngineClient.Failure.UNAVAILABLE ? Outcome.UNAVAILABLE : Outcome.ERROR;
      return new Answer(o, null, e.getMessage());
    }
  }

  /** The answer was followed. */
  public void accepted() {
    client.recordSuccess();
  }

  /** The answer could not be followed (counts toward the breaker like a failed call). */
  public void rejected(String why) {
    client.recordFailure(why);
  }

  public String breakerState() {
    return client.breakerState().name();
  }

  public String handshakeState() {
    return handshake.state().name();
  }

  /** Feedback, sent in batches from a background thread; dropped (never blocking) when the queue is full. */
  public void report(Event event) {
    client.report(event);
  }

  @Override
  public void close() {
    handshake.close();
    client.close();
  }
}
