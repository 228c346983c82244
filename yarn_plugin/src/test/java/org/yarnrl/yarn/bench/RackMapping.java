package org.yarnrl.yarn.bench;

import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.net.DNSToSwitchMapping;

/**
 * Rack of a simulated host {@code hNNNNN}: {@code /rack-K} with {@code K = NNNNN / nodesPerRack}, so the scale
 * benchmark's ResourceManager sees racks (locality asks, rack-local fallbacks) without a topology script.
 */
public final class RackMapping implements DNSToSwitchMapping {
  /** Set by {@link SchedulerScale} before the ResourceManager starts (one cluster per JVM). */
  static volatile int nodesPerRack = 40;

  static String hostName(int index) {
    return String.format("h%05d", index);
  }

  static int hostIndex(String host) {
    int colon = host.indexOf(':');
    return Integer.parseInt(colon < 0 ? host.substring(1) : host.substring(1, colon));
  }

  static String rackOf(int index) {
    return "/rack-" + (index / nodesPerRack);
  }

  @Override
  public List<String> resolve(List<String> names) {
    List<String> racks = new ArrayList<>(names.size());
    for (String name : names) {
      try {
        racks.add(rackOf(hostIndex(name)));
      } catch (RuntimeException e) {
        racks.add("/default-rack"); // not one of ours (e.g. localhost)
      }
    }
    return racks;
  }

  @Override
  public void reloadCachedMappings() {}

  @Override
  public void reloadCachedMappings(List<String> names) {}
}
