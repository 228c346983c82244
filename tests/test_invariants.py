"""Property: whatever the policy answers, the engine never assigns beyond capacity or outstanding counts."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from policy_engine.engine import Engine
from policy_engine.policy import SCHEDULE, Policy, create
from policy_engine.types import (
    ANY,
    Ask,
    Assignment,
    ClusterSummary,
    Locality,
    LocalityRequest,
    Node,
    Resource,
    ScheduleDecision,
    ScheduleObservation,
)

HOSTS = ["n1", "n2", "n3", "n4"]
RACKS = ["/r1", "/r2"]


class Reckless(Policy):
    """Asks for random, often impossible, placements: the engine must cut them down."""

    name = "reckless"
    capabilities = frozenset({SCHEDULE})

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def schedule(self, obs):
        ids = [a.ask_id for a in obs.asks] + ["ghost"]
        return ScheduleDecision([Assignment(self.rng.choice(ids), self.rng.randint(-2, 50),
                                            self.rng.choice(list(Locality))) for _ in range(self.rng.randint(0, 8))])


resources = st.builds(lambda m, v, g: Resource(m, v, {"yarn.io/gpu": g} if g else {}),
                      st.integers(0, 16384), st.integers(0, 16), st.integers(0, 2))
container = st.builds(lambda m, v, g: Resource(m, v, {"yarn.io/gpu": g} if g else {}),
                      st.integers(1, 4096), st.integers(0, 4), st.integers(0, 1))


@st.composite
def asks(draw, i):
    total = draw(st.integers(0, 30))
    names = draw(st.lists(st.sampled_from(HOSTS + RACKS + [ANY]), unique=True, max_size=5))
    loc = tuple(LocalityRequest(n, draw(st.integers(0, 30)), draw(st.booleans())) for n in names)
    return Ask(ask_id=f"a{i}", application_id=f"app{draw(st.integers(0, 3))}", priority=draw(st.integers(0, 30)),
               allocation_request_id=i, resource=draw(container), num_containers=total, locality=loc,
               submit_time_ms=draw(st.integers(0, 10)), relax_locality=draw(st.booleans()))


@st.composite
def observations(draw):
    host = draw(st.sampled_from(HOSTS))
    total = draw(resources)
    free = Resource(draw(st.integers(0, total.memory_mb)), draw(st.integers(0, total.vcores)),
                    {k: draw(st.integers(0, v)) for k, v in total.extra.items()})
    n = draw(st.integers(0, 6))
    return ScheduleObservation(
        node=Node(f"{host}:1", host, RACKS[HOSTS.index(host) % 2], total, free),
        asks=[draw(asks(i)) for i in range(n)],
        cluster=ClusterSummary(num_nodes=draw(st.integers(0, 8))))


def check(obs: ScheduleObservation, decision: ScheduleDecision) -> None:
    by_id = {a.ask_id: a for a in obs.asks}
    used = Resource()
    per_ask: dict[str, int] = {}
    for a in decision.assignments:
        assert a.count > 0 and a.ask_id in by_id
        ask = by_id[a.ask_id]
        per_ask[a.ask_id] = per_ask.get(a.ask_id, 0) + a.count
        used = Resource(used.memory_mb + ask.resource.memory_mb * a.count, used.vcores + ask.resource.vcores * a.count,
                        {k: used.extra.get(k, 0) + ask.resource.extra.get(k, 0) * a.count
                         for k in set(used.extra) | set(ask.resource.extra)})
        if a.locality in (Locality.NODE_LOCAL, Locality.CACHE_LOCAL):
            assert ask.locality_count(obs.node.host) > 0
        else:  # relax_locality=false on the node's rack entry: only nodes asked for by name
            rack = [lr for lr in ask.locality if lr.resource_name == obs.node.rack]
            assert not rack or rack[0].relax_locality
    assert used.memory_mb <= obs.node.unallocated.memory_mb
    assert used.vcores <= obs.node.unallocated.vcores
    for k, v in used.extra.items():
        assert v <= obs.node.unallocated.extra.get(k, 0)
    for ask_id, n in per_ask.items():
        ask = by_id[ask_id]
        assert n <= ask.num_containers
        any_entry = [lr for lr in ask.locality if lr.resource_name == ANY]
        if any_entry:
            assert n <= any_entry[0].num_containers


@settings(max_examples=300, deadline=None)
@given(observations(), st.sampled_from(["fifo", "delay", "reckless"]), st.integers(0, 1000))
def test_no_assignment_exceeds_capacity_or_remaining_count(obs, name, seed):
    options = {"node_locality_delay": 1} if name == "delay" else {}
    policy = Reckless(seed) if name == "reckless" else create(name, **options)
    engine = Engine(policy)
    for _ in range(3):  # repeated heartbeats move the delay counters
        check(obs, engine.schedule(obs))
