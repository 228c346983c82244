"""The plugin sends each ask with only the locality entries of the heartbeat's node (its host and its rack) plus
`locality_names`, the whole ask's count of hosts and racks (yarn_plugin Snapshots.Builder): a 5,000-node cluster's
MapReduce asks name hundreds of hosts each, and sending them all with every heartbeat was the plugin's scale limit.
Every policy that schedules on heartbeats must decide exactly as it would with the whole list."""

from __future__ import annotations

import random

import pytest

from policy_engine.codec import InvalidRequest, decode_schedule, encode_schedule
from policy_engine.engine import Engine
from policy_engine.locality import AskOnNode
from policy_engine.policy import SCHEDULE, create, policies_for
from policy_engine.types import (
    ANY,
    Ask,
    ClusterSummary,
    LocalityRequest,
    Node,
    Resource,
    ScheduleObservation,
)

RACKS = 4
PER_RACK = 6
NODES = [Node(f"h{i}:8041", f"h{i}", f"/rack{i // PER_RACK}", Resource(16384, 16), Resource(16384, 16))
         for i in range(RACKS * PER_RACK)]
CLUSTER = ClusterSummary(len(NODES), RACKS, Resource(16384 * len(NODES), 16 * len(NODES)),
                         Resource(8192 * len(NODES), 8 * len(NODES)))


def whole_asks(rng: random.Random) -> list[Ask]:
    """Map-like asks naming several hosts and their racks (some racks forbid relaxing, one ask keeps to its racks),
    and one ANY-only ask, as YARN holds them."""
    asks = []
    for i in range(6):
        pending = rng.randint(2, 9)
        hosts = rng.sample(NODES, rng.randint(1, 8))
        entries = {n.host: LocalityRequest(n.host, rng.randint(1, pending)) for n in hosts}
        for n in hosts:
            relax = rng.random() > 0.2
            entries[n.rack] = LocalityRequest(n.rack, rng.randint(0 if not relax else 1, pending), relax)
        asks.append(Ask(f"app{i}/1/0", f"application_1_{i:04d}", priority=1, resource=Resource(1024, 1),
                        num_containers=pending, locality=tuple(entries.values()), submit_time_ms=1000 + i,
                        relax_locality=i != 3))
    asks.append(Ask("app9/20/0", "application_1_0009", priority=20, resource=Resource(2048, 1), num_containers=4,
                    submit_time_ms=999))
    return asks


def on_node(ask: Ask, node: Node) -> Ask:
    """The ask as the plugin sends it for this node (Snapshots.Builder)."""
    kept = tuple(lr for lr in ask.locality
                 if (lr.resource_name == node.host and lr.num_containers > 0)
                 or (lr.resource_name == node.rack and (lr.num_containers > 0 or not lr.relax_locality)))
    names = len({lr.resource_name for lr in ask.locality} - {ANY})
    return Ask(ask.ask_id, ask.application_id, ask.attempt_id, ask.queue, ask.user, ask.priority,
               ask.allocation_request_id, ask.resource, ask.num_containers, kept, ask.submit_time_ms, ask.job,
               ask.relax_locality, locality_names=names)


def heartbeats(seed: int, steps: int):
    """(whole observation, the plugin's observation over the wire) for a sequence of node heartbeats."""
    rng = random.Random(seed)
    asks = whole_asks(rng)
    for step in range(steps):
        node = NODES[rng.randrange(len(NODES))]
        free = Resource(1024 * rng.randint(0, 12), rng.randint(0, 12))
        node = Node(node.node_id, node.host, node.rack, node.total, free)
        whole = ScheduleObservation(node, list(asks), CLUSTER, f"r{step}")
        sent = ScheduleObservation(node, [on_node(a, node) for a in asks], CLUSTER, f"r{step}")
        yield whole, decode_schedule(encode_schedule(sent))


def decisions(policy: str, observations) -> list[list[tuple[str, int, int]]]:
    engine = Engine(create(policy))
    out = []
    for obs in observations:
        d = engine.schedule(obs)
        out.append([(a.ask_id, a.count, int(a.locality)) for a in d.assignments])
    return out


LOCALITY_POLICIES = policies_for(SCHEDULE, "locality")


def test_the_policies_that_schedule_on_heartbeats_are_covered():
    assert {"fifo", "delay", "clqlmrs", "acl"} <= set(LOCALITY_POLICIES)


@pytest.mark.parametrize("policy", LOCALITY_POLICIES)
def test_a_policy_decides_the_same_on_the_nodes_entries_as_on_the_whole_list(policy):
    pairs = list(heartbeats(seed=7, steps=300))
    whole = decisions(policy, [w for w, _ in pairs])
    sent = decisions(policy, [s for _, s in pairs])
    assert sum(len(d) for d in whole) > 50  # the heartbeats place containers: the comparison says something
    assert sent == whole


def test_without_the_names_count_the_delay_policy_would_go_off_switch_too_early():
    """locality_names is what keeps CapacityScheduler's off-switch wait: dropping it changes delay's decisions."""
    pairs = list(heartbeats(seed=7, steps=300))
    stripped = []
    for _, s in pairs:
        asks = [Ask(a.ask_id, a.application_id, a.attempt_id, a.queue, a.user, a.priority, a.allocation_request_id,
                    a.resource, a.num_containers, a.locality, a.submit_time_ms, a.job, a.relax_locality)
                for a in s.asks]
        stripped.append(ScheduleObservation(s.node, asks, s.cluster, s.request_id))
    assert decisions("delay", stripped) != decisions("delay", [w for w, _ in pairs])


def test_an_ask_far_from_the_node_still_counts_its_places():
    ask = whole_asks(random.Random(3))[0]
    far = next(n for n in NODES if all(lr.resource_name not in (n.host, n.rack) for lr in ask.locality))
    sent = decode_schedule(encode_schedule(ScheduleObservation(far, [on_node(ask, far)], CLUSTER, "r"))).asks[0]
    assert sent.locality == ()
    assert sent.names_places and ask.names_places
    assert sent.unique_locations == ask.unique_locations == len({lr.resource_name for lr in ask.locality}) + 1
    view_sent, view_whole = AskOnNode(sent, far), AskOnNode(ask, far)
    assert (view_sent.host, view_sent.rack, view_sent.any) == (view_whole.host, view_whole.rack, view_whole.any)
    assert view_sent.best_levels() == view_whole.best_levels()


def test_a_negative_names_count_is_refused():
    obs = ScheduleObservation(NODES[0], [Ask("a", "application_1_0001", resource=Resource(1024, 1),
                                             num_containers=1)], CLUSTER, "r")
    req = encode_schedule(obs)
    req.asks[0].locality_names = -1
    with pytest.raises(InvalidRequest, match=r"asks\[0\]\.locality_names: -1"):
        decode_schedule(req)
