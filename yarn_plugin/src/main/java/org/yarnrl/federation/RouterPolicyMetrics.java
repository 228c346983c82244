package org.yarnrl.federation;

import java.util.Arrays;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/** Counters of the learned Router policy (one per Router JVM); see {@link RouterPolicyMXBean}. */
final class RouterPolicyMetrics implements RouterPolicyMXBean {
  /** Why a submission was routed by the built-in rule instead of the engine's answer. */
  enum Fallback {
    TIMEOUT, UNAVAILABLE, ERROR, INVALID_ANSWER, BLACKLISTED, BREAKER_OPEN, VERSION_MISMATCH, MALFORMED_TAGS,
    PADDING_CHOSEN, DISABLED
  }

  volatile String engineAddress = "";
  volatile java.util.function.Supplier<String> breaker = () -> "DISABLED";
  volatile java.util.function.Supplier<String> handshake = () -> "DISABLED";
  volatile String lastDecision = "";
  volatile String lastFallback = "";
  final LongAdder decisions = new LongAdder();
  final LongAdder engineDecisions = new LongAdder();
  final LongAdder builtinDecisions = new LongAdder();
  /** Decisions that used the background load copy instead of reading the state store (load.max-age-ms). */
  final LongAdder loadCopyReads = new LongAdder();
  private final Map<Fallback, LongAdder> fallbacks = new EnumMap<>(Fallback.class);
  private final Window decisionMicros = new Window();
  private final Window stateStoreMicros = new Window();
  private final Window engineMicros = new Window();

  /** The last 4096 times of one kind, for their percentiles. */
  static final class Window {
    private final long[] micros = new long[4096];
    private long recorded;

    synchronized void record(long us) {
      micros[(int) (recorded++ % micros.length)] = us;
    }

    synchronized long percentile(double q) {
      int n = (int) Math.min(recorded, micros.length);
      if (n == 0) {
        return 0;
      }
      long[] s = Arrays.copyOf(micros, n);
      Arrays.sort(s);
      return s[Math.min(n - 1, (int) Math.ceil(q * n) - 1)];
    }
  }

  RouterPolicyMetrics() {
    for (Fallback f : Fallback.values()) {
      fallbacks.put(f, new LongAdder());
    }
  }

  void fallback(Fallback why) {
    fallbacks.get(why).increment();
  }

  long fallbacks(Fallback why) {
    return fallbacks.get(why).sum();
  }

  void recordMicros(long us) {
    decisionMicros.record(us);
  }

  void recordStateStoreMicros(long us) {
    stateStoreMicros.record(us);
  }

  void recordEngineMicros(long us) {
    engineMicros.record(us);
  }

  @Override
  public long getLoadCopyReads() {
    return loadCopyReads.sum();
  }

  @Override
  public String getEngineAddress() {
    return engineAddress;
  }

  @Override
  public String getBreakerState() {
    return breaker.get();
  }

  @Override
  public String getHandshakeState() {
    return handshake.get();
  }

  @Override
  public String getLastDecision() {
    return lastDecision;
  }

  @Override
  public String getLastFallback() {
    return lastFallback;
  }

  @Override
  public long getDecisions() {
    return decisions.sum();
  }

  @Override
  public long getEngineDecisions() {
    return engineDecisions.sum();
  }

  @Override
  public long getBuiltinDecisions() {
    return builtinDecisions.sum();
  }

  @Override
  public long getFallbacksTimeout() {
    return fallbacks(Fallback.TIMEOUT);
  }

  @Override
  public long getFallbacksUnavailable() {
    return fallbacks(Fallback.UNAVAILABLE);
  }

  @Override
  public long getFallbacksError() {
    return fallbacks(Fallback.ERROR);
  }

  @Override
  public long getFallbacksInvalidAnswer() {
    return fallbacks(Fallback.INVALID_ANSWER);
  }

  @Override
  public long getFallbacksBlacklisted() {
    return fallbacks(Fallback.BLACKLISTED);
  }

  @Override
  public long getFallbacksBreakerOpen() {
    return fallbacks(Fallback.BREAKER_OPEN);
  }

  @Override
  public long getFallbacksVersionMismatch() {
    return fallbacks(Fallback.VERSION_MISMATCH);
  }

  @Override
  public long getFallbacksMalformedTags() {
    return fallbacks(Fallback.MALFORMED_TAGS);
  }

  @Override
  public long getFallbacksPaddingChosen() {
    return fallbacks(Fallback.PADDING_CHOSEN);
  }

  @Override
  public long getFallbacksDisabled() {
    return fallbacks(Fallback.DISABLED);
  }

  @Override
  public long getFallbacksTotal() {
    long t = 0;
    for (LongAdder a : fallbacks.values()) {
      t += a.sum();
    }
    return t;
  }

  @Override
  public long getDecisionMicrosP50() {
    return decisionMicros.percentile(0.50);
  }

  @Override
  public long getDecisionMicrosP99() {
    return decisionMicros.percentile(0.99);
  }

  @Override
  public long getDecisionMicrosMax() {
    return decisionMicros.percentile(1.0);
  }

  @Override
  public long getStateStoreMicrosP50() {
    return stateStoreMicros.percentile(0.50);
  }

  @Override
  public long getStateStoreMicrosP99() {
    return stateStoreMicros.percentile(0.99);
  }

  @Override
  public long getEngineMicrosP50() {
    return engineMicros.percentile(0.50);
  }

  @Override
  public long getEngineMicrosP99() {
    return engineMicros.percentile(0.99);
  }
}
