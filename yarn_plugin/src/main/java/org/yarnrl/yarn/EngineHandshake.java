package org.yarnrl.yarn;

import io.grpc.StatusRuntimeException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.yarnrl.v1.GetInfoResponse;

/**
 * The protocol-version handshake: before the scheduler uses an engine, and again after every reconnect, a
 * background thread asks it {@code GetInfo} and checks {@code protocol_version}. Until that answer the engine is
 * not asked (heartbeats are scheduled natively, counted as unavailable); an engine speaking another version is
 * refused (native, counted as {@code FallbacksVersionMismatch}, logged once per engine version) until the
 * connection drops and whatever answers next is asked again. No scheduler lock is ever held here.
 */
final class EngineHandshake implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EngineHandshake.class);

  /** The protocol this plugin speaks (proto/yarnrl/v1/scheduler.proto, GetInfoResponse.protocol_version). */
  static final String PROTOCOL_VERSION = "yarnrl.v1";

  enum State { UNKNOWN, OK, REFUSED }

  private final EngineClient client;
  private final RlSchedulerMetrics metrics;
  private final long retryMillis;
  private final long timeoutMillis;
  private final Set<String> refusalsLogged = ConcurrentHashMap.newKeySet();
  private final Object wake = new Object();
  private final Thread thread;
  private volatile State state = State.UNKNOWN;
  /** The accepted engine's GetInfo answer (capabilities, batch limits), or null until one is accepted. */
  private volatile GetInfoResponse info;
  private volatile boolean closed;
  private boolean unreachableLogged;

  EngineHandshake(EngineClient client, RlSchedulerMetrics metrics, long retryMillis, long timeoutMillis) {
    this.client = client;
    this.metrics = metrics;
    this.retryMillis = retryMillis;
    this.timeoutMillis = timeoutMillis;
    metrics.handshakeState = State.UNKNOWN.name();
    client.onConnectionLost(() -> reconnected("connection to the engine lost"));
    thread = new Thread(this::loop, "yarnrl-engine-handshake");
    thread.setDaemon(true);
    thread.start();
  }

  State state() {
    return state;
  }

  /** What the engine said of itself when it was last accepted, or null (none accepted since the last reconnect). */
  GetInfoResponse info() {
    return state == State.OK ? info : null;
  }

  /** Speak to the engine again before using it (the connection dropped, or a call found it unavailable). */
  void reconnected(String why) {
    if (state != State.UNKNOWN) {
      LOG.info("yarn-rl engine {}: {}; checking its protocol version again before using it", client.address(), why);
    }
    setState(State.UNKNOWN);
    synchronized (wake) {
      wake.notifyAll();
    }
  }

  private void setState(State next) {
    state = next;
    if (client.isActive()) { // of a failover list, the metrics follow the active engine
      metrics.handshakeState = next.name();
    }
  }

  private void loop() {
    while (!closed) {
      if (state == State.UNKNOWN) {
        try {
          check(client.info(timeoutMillis));
          unreachableLogged = false;
          continue;
        } catch (StatusRuntimeException e) {
          if (!unreachableLogged) {
            LOG.info("yarn-rl engine {} not reachable for its protocol version yet ({}); scheduling natively "
                + "until it answers", client.address(), e.getStatus().getCode());
            unreachableLogged = true;
          }
        } catch (RuntimeException e) {
          LOG.warn("yarn-rl engine {}: GetInfo failed", client.address(), e);
        }
      }
      synchronized (wake) {
        try {
          wake.wait(state == State.UNKNOWN ? retryMillis : 60_000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  /** Accept or refuse the engine by the version it reports. */
  void check(GetInfoResponse info) {
    String version = info.getProtocolVersion();
    if (client.isActive()) {
      metrics.engineProtocolVersion = version;
    }
    if (PROTOCOL_VERSION.equals(version)) {
      if (state != State.OK) {
        metrics.enginePolicy = info.getPolicy(); // shown on the RM's scheduler views (issue 23)
        LOG.info("yarn-rl engine {} speaks {} (policy {}, engine {}): using it", client.address(), version,
            info.getPolicy(), info.getEngineVersion());
      }
      this.info = info;
      setState(State.OK);
    } else {
      if (refusalsLogged.add(version)) {
        LOG.error("yarn-rl engine {} speaks protocol '{}', this plugin speaks '{}': refusing it and scheduling "
            + "natively (counted in FallbacksVersionMismatch) until an engine speaking '{}' answers there",
            client.address(), version, PROTOCOL_VERSION, PROTOCOL_VERSION);
      }
      setState(State.REFUSED);
    }
  }

  @Override
  public void close() {
    closed = true;
    thread.interrupt();
    try {
      thread.join(2000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
