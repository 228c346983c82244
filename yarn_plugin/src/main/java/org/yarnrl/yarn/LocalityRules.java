package org.yarnrl.yarn;

import java.util.Map;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.NodeType;

/**
 * Where one more container of an ask may go on a node, by YARN's counts and relaxLocality flags. The engine applies
 * the same rules before it answers (policy_engine/locality.py); the plugin re-checks every container with them, so
 * neither a policy bug nor a stale answer can place a container where the application said it must not go.
 *
 * <p>relaxLocality as {@link ResourceRequest#setRelaxLocality} defines it: false on a rack request means no container
 * goes to a node of that rack unless the node itself is asked for (no rack-local and no off-switch placement
 * there); false on ANY means only racks with a request of their own, or nodes asked for by name, get containers.
 * A node request's flag has nothing below it to relax and is ignored, as YARN ignores it.
 */
final class LocalityRules {
  private LocalityRules() {}

  /**
   * The level of one more container on this node, or null when none may go there.
   *
   * @param any the "*" outstanding count
   * @param host the node's outstanding count (0 when not asked for)
   * @param rack the node's rack's outstanding count (0 when not asked for)
   * @param rackRelax the rack request's relaxLocality, or null when the rack has no request
   * @param anyRelax the "*" request's relaxLocality
   * @param namesPlaces whether the ask has any node or rack request besides "*"
   */
  static NodeType allowed(int any, int host, int rack, Boolean rackRelax, boolean anyRelax, boolean namesPlaces) {
    if (any <= 0) {
      return null;
    }
    if (host > 0 && rack > 0) {
      return NodeType.NODE_LOCAL; // YARN's LocalityAppPlacementAllocator needs the rack asked for too
    }
    if (Boolean.FALSE.equals(rackRelax)) {
      return null; // only nodes of this rack asked for by name
    }
    if (rack > 0) {
      return NodeType.RACK_LOCAL;
    }
    if (namesPlaces && !anyRelax) {
      return null;
    }
    return NodeType.OFF_SWITCH;
  }

  /** {@link #allowed} from an ask's requests as YARN holds them (resource name to request). */
  static NodeType allowed(Map<String, ResourceRequest> requests, int any, int host, int rack, String rackName) {
    ResourceRequest anyRequest = requests == null ? null : requests.get(ResourceRequest.ANY);
    ResourceRequest rackRequest = requests == null ? null : requests.get(rackName);
    return allowed(any, host, rack, rackRequest == null ? null : rackRequest.getRelaxLocality(),
        anyRequest == null || anyRequest.getRelaxLocality(), requests != null && requests.size() > 1);
  }
}
