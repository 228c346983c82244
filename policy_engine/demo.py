"""A scripted walk through node heartbeats, answered by a real engine over gRPC.

Two racks of two nodes. Application 1 wants four map containers whose input lives on node1 and node2 (rack1);
application 2, submitted later, wants two containers anywhere. Heartbeats arrive from rack2 first, so FIFO
places application 1 off its data at once, while Delay scheduling lets application 2 use rack2 and waits for
rack1's heartbeats to place application 1 node-locally. The script applies each answer to its own copy of the
cluster, as the ResourceManager would.
"""

from __future__ import annotations

from policy_engine.client import PolicyEngineClient
from policy_engine.types import (
    Ask,
    ClusterSummary,
    Locality,
    LocalityRequest,
    Node,
    Resource,
    ScheduleObservation,
)

NODES = [("node3", "/rack2"), ("node4", "/rack2"), ("node1", "/rack1"), ("node2", "/rack1")]
NODE_MEMORY_MB, NODE_VCORES = 2048, 2
CONTAINER = Resource(1024, 1)


def _asks(remaining: dict[str, int]) -> list[Ask]:
    asks = []
    if remaining["app1"] > 0:
        asks.append(Ask(
            ask_id="app1-maps", application_id="application_1_0001", priority=20, resource=CONTAINER,
            num_containers=remaining["app1"], submit_time_ms=1_000,
            locality=(LocalityRequest("node1", min(2, remaining["app1"])),
                      LocalityRequest("node2", min(2, remaining["app1"])),
                      LocalityRequest("/rack1", remaining["app1"])),
        ))
    if remaining["app2"] > 0:
        asks.append(Ask(ask_id="app2-any", application_id="application_1_0002", priority=20, resource=CONTAINER,
                        num_containers=remaining["app2"], submit_time_ms=2_000))
    return asks


def run_script(client: PolicyEngineClient, rounds: int = 2) -> list[dict]:
    """Drive `rounds` passes of heartbeats over the four nodes; return one row per placement."""
    remaining = {"app1": 4, "app2": 2}
    used = {name: 0 for name, _ in NODES}
    rows = []
    beat = 0
    for _ in range(rounds):
        for name, rack in NODES:
            beat += 1
            free = NODE_MEMORY_MB - used[name] * CONTAINER.memory_mb
            node = Node(node_id=f"{name}:8041", host=name, rack=rack, total=Resource(NODE_MEMORY_MB, NODE_VCORES),
                        unallocated=Resource(free, NODE_VCORES - used[name]), timestamp_ms=beat * 1000)
            obs = ScheduleObservation(node=node, asks=_asks(remaining), request_id=f"hb-{beat}",
                                      cluster=ClusterSummary(num_nodes=len(NODES), num_racks=2))
            decision = client.schedule_obs(obs)
            for a in decision.assignments:
                app = a.ask_id.split("-")[0]
                remaining[app] -= a.count
                used[name] += a.count
                rows.append({"heartbeat": beat, "node": name, "rack": rack, "ask": a.ask_id, "count": a.count,
                             "locality": Locality(a.locality).name.lower()})
            if not decision.assignments:
                rows.append({"heartbeat": beat, "node": name, "rack": rack, "ask": "-", "count": 0,
                             "locality": "waiting" if any(remaining.values()) else "done"})
    return rows
