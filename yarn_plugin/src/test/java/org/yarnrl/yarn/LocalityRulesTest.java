package org.yarnrl.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.NodeType;
import org.junit.jupiter.api.Test;

class LocalityRulesTest {
  private static ResourceRequest request(String name, int n, boolean relax) {
    return ResourceRequest.newInstance(Priority.newInstance(20), name, Resource.newInstance(512, 1), n, relax);
  }

  /** What AMRMClient sends for ContainerRequest(nodes=[h1], relaxLocality=false): rack and ANY not relaxed. */
  private static Map<String, ResourceRequest> strictOnH1() {
    Map<String, ResourceRequest> m = new LinkedHashMap<>();
    m.put("h1", request("h1", 2, true));
    m.put("/rack1", request("/rack1", 2, false));
    m.put(ResourceRequest.ANY, request(ResourceRequest.ANY, 2, false));
    return m;
  }

  @Test
  void relaxedAsksGoNodeThenRackThenOffSwitch() {
    assertEquals(NodeType.NODE_LOCAL, LocalityRules.allowed(3, 1, 2, true, true, true));
    assertEquals(NodeType.RACK_LOCAL, LocalityRules.allowed(3, 0, 2, true, true, true));
    assertEquals(NodeType.OFF_SWITCH, LocalityRules.allowed(3, 0, 0, null, true, true));
    assertEquals(NodeType.OFF_SWITCH, LocalityRules.allowed(3, 0, 0, null, true, false));
    assertNull(LocalityRules.allowed(0, 1, 1, true, true, true), "nothing outstanding");
  }

  @Test
  void aStrictRackEntryAllowsOnlyTheNodesAskedForByName() {
    Map<String, ResourceRequest> strict = strictOnH1();
    assertEquals(NodeType.NODE_LOCAL, LocalityRules.allowed(strict, 2, 2, 2, "/rack1"));
    // h2 is in /rack1 but not asked for: neither rack-local nor off-switch
    assertNull(LocalityRules.allowed(strict, 2, 0, 2, "/rack1"));
    // h3 in /rack2: the ANY request is not relaxed and /rack2 has no request
    assertNull(LocalityRules.allowed(strict, 2, 0, 0, "/rack2"));
  }

  @Test
  void aStrictRackEntryWithRelaxedAnyStillKeepsItsRackToNamedNodes() {
    Map<String, ResourceRequest> m = strictOnH1();
    m.put(ResourceRequest.ANY, request(ResourceRequest.ANY, 2, true));
    assertNull(LocalityRules.allowed(m, 2, 0, 2, "/rack1"));
    assertEquals(NodeType.OFF_SWITCH, LocalityRules.allowed(m, 2, 0, 0, "/rack2"));
  }
}
