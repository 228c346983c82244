package org.yarnrl.yarn;

import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.util.resource.DefaultResourceCalculator;
import org.apache.hadoop.yarn.util.resource.DominantResourceCalculator;
import org.apache.hadoop.yarn.util.resource.ResourceCalculator;
import org.apache.hadoop.yarn.util.resource.Resources;
import org.yarnrl.v1.ResourceCalculatorKind;

/**
 * The plugin's one rule for "does this ask fit this node": the RM's own {@link ResourceCalculator} (FifoScheduler's
 * DefaultResourceCalculator, memory only; CapacityScheduler's configured one,
 * {@code yarn.scheduler.capacity.resource-calculator}). Every check of an engine answer, every container the plugin
 * places and the node gate before an engine call go through here, and the engine is told the same rule
 * ({@link #kind}, ClusterSummary.resource_calculator), so it places neither fewer containers on a node than YARN
 * would nor more than YARN allows.
 */
final class ResourceFit {
  private ResourceFit() {}

  /** What the engine is told about the calculator: memory only, dominant (all types), or not known. */
  static ResourceCalculatorKind kind(ResourceCalculator rc) {
    if (rc instanceof DominantResourceCalculator) {
      return ResourceCalculatorKind.RESOURCE_CALCULATOR_DOMINANT;
    }
    if (rc instanceof DefaultResourceCalculator) {
      return ResourceCalculatorKind.RESOURCE_CALCULATOR_MEMORY;
    }
    // another calculator: the engine keeps its old rule (memory and vcores); the plugin still checks with rc
    return ResourceCalculatorKind.RESOURCE_CALCULATOR_UNSPECIFIED;
  }

  /** Whether {@code count} containers of {@code ask} fit into {@code free} by the calculator. */
  static boolean fits(ResourceCalculator rc, Resource ask, int count, Resource free) {
    Resource need = count == 1 ? ask : Resources.multiply(ask, count);
    return Resources.fitsIn(rc, need, free);
  }

  /** How many containers of {@code ask} fit into {@code free} by the calculator (0 when none). */
  static long copies(ResourceCalculator rc, Resource ask, Resource free) {
    return Math.max(0, rc.computeAvailableContainers(free, ask));
  }
}
