package org.yarnrl.federation;

import org.apache.hadoop.conf.Configuration;

/**
 * The learned Router policy's settings ({@code yarn-site.xml} of the Router). Every value is checked once, when the
 * policy is initialised and (through {@link RouterLauncher}) before the Router starts: a value that makes no sense
 * is an {@link IllegalArgumentException} that names its key.
 */
final class RouterSettings {
  static final String PREFIX = "yarnrl.federation.";
  /** host:port of the policy engine; default: the scheduler's {@code yarnrl.engine.address}. */
  static final String ENGINE_ADDRESS = PREFIX + "engine.address";
  static final String SCHEDULER_ENGINE_ADDRESS = "yarnrl.engine.address";
  static final String DEADLINE_MS = PREFIX + "engine.deadline-ms";
  static final String BREAKER_FAILURES = PREFIX + "engine.breaker.failures";
  static final String BREAKER_OPEN_MS = PREFIX + "engine.breaker.open-ms";
  /** Memory of one executor: the unit in which a sub-cluster's capacity and free space are sent. */
  static final String EXECUTOR_MB = PREFIX + "executor-mb";
  static final String HISTORY_LENGTH = PREFIX + "history.length";
  static final String HISTORY_INTERVAL_MS = PREFIX + "history.interval-ms";
  /** Send this many clusters (a model trained for a fixed cluster count); the extra ones are full and never chosen. */
  static final String PAD_CLUSTERS = PREFIX + "pad-clusters";
  /** Seconds of real time per emulator step (job run times and deadlines are sent in steps). */
  static final String SECONDS_PER_STEP = PREFIX + "seconds-per-step";
  static final String STREAM_ID = PREFIX + "stream-id";
  /**
   * A model's fixed cluster shape, {@code CAPACITY[:HETERO],...} (RL-LSFC checks both): slot k carries sub-cluster
   * SC(k+1) with this capacity and heterogeneity factor and its real free share (available = capacity * (1 -
   * occupation)); slots without an active candidate are sent as full padding.
   */
  static final String CLUSTER_SHAPE = PREFIX + "cluster-shape";
  /** Multiplies a job's executor count (yarnrl.executors) into the model's scale. */
  static final String JOB_SCALE = PREFIX + "job-scale";
  /**
   * 0 (default): every decision reads the sub-clusters' load from the state store. N &gt; 0: a background thread
   * reads it every N/2 ms and a decision uses that copy while it is at most N ms old, so no decision waits on the
   * state store (ZooKeeper) unless the copy is stale. The RMs' own heartbeat interval bounds freshness anyway.
   */
  static final String LOAD_MAX_AGE_MS = PREFIX + "load.max-age-ms";
  /** false: never ask the engine, route by the built-in rule only (a baseline, and an off switch). */
  static final String ENABLED = PREFIX + "engine.enabled";

  final String engineAddress;
  final long deadlineMillis;
  final int breakerFailures;
  final long breakerOpenMillis;
  final long executorMb;
  final int historyLength;
  final long historyIntervalMillis;
  final int padClusters;
  final double secondsPerStep;
  final String streamId;
  final boolean engineEnabled;
  final long[] shapeCapacity;
  final double[] shapeHetero;
  final double jobScale;
  final long loadMaxAgeMillis;

  private RouterSettings(Configuration conf) {
    engineEnabled = bool(conf, ENABLED, true);
    String address = conf.getTrimmed(ENGINE_ADDRESS, conf.getTrimmed(SCHEDULER_ENGINE_ADDRESS, ""));
    if (engineEnabled && address.isEmpty()) {
      throw new IllegalArgumentException(ENGINE_ADDRESS + " (or " + SCHEDULER_ENGINE_ADDRESS
          + ") must name the policy engine as host:port, or set " + ENABLED + "=false");
    }
    if (engineEnabled && !address.matches("[^\\s:,]+:\\d{1,5}")) {
      throw new IllegalArgumentException(ENGINE_ADDRESS + " must be host:port, got '" + address + "'");
    }
    engineAddress = address;
    deadlineMillis = range(conf, DEADLINE_MS, 50, 1, 60_000);
    breakerFailures = (int) range(conf, BREAKER_FAILURES, 3, 1, 1_000_000);
    breakerOpenMillis = range(conf, BREAKER_OPEN_MS, 5000, 0, 86_400_000L);
    executorMb = range(conf, EXECUTOR_MB, 1024, 1, 1 << 30);
    historyLength = (int) range(conf, HISTORY_LENGTH, 100, 1, 10_000);
    historyIntervalMillis = range(conf, HISTORY_INTERVAL_MS, 1000, 10, 3_600_000L);
    padClusters = (int) range(conf, PAD_CLUSTERS, 0, 0, 1000);
    loadMaxAgeMillis = range(conf, LOAD_MAX_AGE_MS, 0, 0, 3_600_000L);
    String sps = conf.getTrimmed(SECONDS_PER_STEP, "1");
    double v;
    try {
      v = Double.parseDouble(sps);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(SECONDS_PER_STEP + " must be a positive number, got '" + sps + "'");
    }
    if (!(v > 0) || Double.isInfinite(v)) {
      throw new IllegalArgumentException(SECONDS_PER_STEP + " must be a positive number, got '" + sps + "'");
    }
    secondsPerStep = v;
    streamId = conf.getTrimmed(STREAM_ID, "router");
    jobScale = positive(conf, JOB_SCALE, 1.0);
    String shape = conf.getTrimmed(CLUSTER_SHAPE, "");
    if (shape.isEmpty()) {
      shapeCapacity = new long[0];
      shapeHetero = new double[0];
    } else {
      String[] parts = shape.split(",");
      shapeCapacity = new long[parts.length];
      shapeHetero = new double[parts.length];
      for (int i = 0; i < parts.length; i++) {
        String[] ch = parts[i].trim().split(":");
        try {
          shapeCapacity[i] = Long.parseLong(ch[0].trim());
          shapeHetero[i] = ch.length > 1 ? Double.parseDouble(ch[1].trim()) : 1.0;
        } catch (NumberFormatException e) {
          shapeCapacity[i] = -1;
        }
        if (ch.length > 2 || shapeCapacity[i] <= 0 || !(shapeHetero[i] > 0) || Double.isInfinite(shapeHetero[i])) {
          throw new IllegalArgumentException(CLUSTER_SHAPE + " must be CAPACITY[:HETERO],... with positive numbers, "
              + "got '" + shape + "'");
        }
      }
    }
  }

  private static double positive(Configuration conf, String key, double def) {
    String s = conf.getTrimmed(key);
    if (s == null || s.isEmpty()) {
      return def;
    }
    double v;
    try {
      v = Double.parseDouble(s);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + " must be a positive number, got '" + s + "'");
    }
    if (!(v > 0) || Double.isInfinite(v)) {
      throw new IllegalArgumentException(key + " must be a positive number, got '" + s + "'");
    }
    return v;
  }

  /** The settings of {@code conf}, or an IllegalArgumentException naming the first key whose value makes no sense. */
  static RouterSettings of(Configuration conf) {
    return new RouterSettings(conf);
  }

  private static boolean bool(Configuration conf, String key, boolean def) {
    String s = conf.getTrimmed(key);
    if (s == null || s.isEmpty()) {
      return def;
    }
    if (s.equalsIgnoreCase("true") || s.equalsIgnoreCase("false")) {
      return Boolean.parseBoolean(s);
    }
    throw new IllegalArgumentException(key + " must be true or false, got '" + s + "'");
  }

  private static long range(Configuration conf, String key, long def, long min, long max) {
    String s = conf.getTrimmed(key);
    if (s == null || s.isEmpty()) {
      return def;
    }
    long v;
    try {
      v = Long.parseLong(s);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + " must be an integer in [" + min + ", " + max + "], got '" + s + "'");
    }
    if (v < min || v > max) {
      throw new IllegalArgumentException(key + " must be in [" + min + ", " + max + "], got " + v);
    }
    return v;
  }

  @Override
  public String toString() {
    return "engine " + (engineEnabled ? engineAddress + " deadline " + deadlineMillis + " ms, breaker "
        + breakerFailures + " failures / " + breakerOpenMillis + " ms" : "off (built-in rule only)")
        + ", executor " + executorMb + " MB, history " + historyLength + " x " + historyIntervalMillis + " ms, pad to "
        + padClusters + " clusters, " + secondsPerStep + " s per step, shape "
        + java.util.Arrays.toString(shapeCapacity) + java.util.Arrays.toString(shapeHetero) + ", job scale " + jobScale
        + (loadMaxAgeMillis > 0 ? ", load copy at most " + loadMaxAgeMillis + " ms old" : ", load read per decision");
  }
}
