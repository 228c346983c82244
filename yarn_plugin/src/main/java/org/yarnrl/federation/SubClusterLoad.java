package org.yarnrl.federation;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A sub-cluster's load as its ResourceManager last wrote it to the federation state store: the
 * {@code capability} field of its SubClusterInfo is the RM's cluster metrics JSON
 * ({@code {"clusterMetrics":{"availableMB":..,"totalMB":..,...}}}). Only flat numeric fields are read, by name, so
 * the 3.4 and 3.5 layouts both parse; a field that is absent reads as -1 ({@link #known()} is false when memory is
 * unknown).
 */
final class SubClusterLoad {
  final long availableMb;
  final long totalMb;
  final long availableVcores;
  final long totalVcores;
  final long containersPending;
  final long appsPending;
  final long appsRunning;
  final long activeNodes;

  private SubClusterLoad(String json) {
    availableMb = field(json, "availableMB");
    totalMb = field(json, "totalMB");
    availableVcores = field(json, "availableVirtualCores");
    totalVcores = field(json, "totalVirtualCores");
    containersPending = field(json, "containersPending");
    appsPending = field(json, "appsPending");
    appsRunning = field(json, "appsRunning");
    activeNodes = field(json, "activeNodes");
  }

  static SubClusterLoad parse(String capabilityJson) {
    return new SubClusterLoad(capabilityJson == null ? "" : capabilityJson);
  }

  boolean known() {
    return availableMb >= 0 && totalMb > 0;
  }

  /** Share of memory in use, in [0, 1]; 1 when unknown (an unknown sub-cluster looks full, never attractive). */
  double occupation() {
    if (!known()) {
      return 1.0;
    }
    return Math.max(0.0, Math.min(1.0, 1.0 - (double) availableMb / totalMb));
  }

  private static final Pattern NUMBER = Pattern.compile("-?\\d+(?:\\.\\d+)?(?:[eE][-+]?\\d+)?");

  private static long field(String json, String name) {
    Matcher m = Pattern.compile("\"" + name + "\"\\s*:\\s*").matcher(json);
    if (!m.find()) {
      return -1;
    }
    Matcher n = NUMBER.matcher(json);
    if (!n.find(m.end()) || n.start() != m.end()) {
      return -1;
    }
    return (long) Double.parseDouble(n.group());
  }

  @Override
  public String toString() {
    return "availableMB=" + availableMb + " totalMB=" + totalMb + " vcores=" + availableVcores + "/" + totalVcores
        + " containersPending=" + containersPending + " appsPending=" + appsPending + " activeNodes=" + activeNodes;
  }
}
