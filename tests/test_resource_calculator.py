"""The RM's resource calculator, honoured by every fit in the engine (issue 23).

YARN's DefaultResourceCalculator (FifoScheduler always, CapacityScheduler by default) compares memory only: a node
of 4,096 MB and 4 vcores takes 8 containers of 512 MB and 1 vcore. The plugin says which calculator the RM uses in
ClusterSummary.resource_calculator; a request without it (an older plugin) keeps the old rule, memory and vcores.
"""

from __future__ import annotations

import pytest
from heartbeats import map_ask, node

from policy_engine.codec import ScheduleDecoder, decode_schedule, encode_schedule
from policy_engine.engine import Engine, clip_schedule
from policy_engine.policy import create
from policy_engine.proto import pb
from policy_engine.types import (
    Assignment,
    Calculator,
    ClusterSummary,
    Locality,
    Resource,
    ScheduleDecision,
    ScheduleObservation,
)


def request(calculator: Calculator | None, free_vcores: int = 4) -> bytes:
    """A 4,096 MB / 4-vcore node (the container cluster's default NodeManager) and 16 maps of 512 MB, 1 vcore."""
    n = node("n1", mem_gb=4, vcores=4, free_vcores=free_vcores)
    ask = map_ask("a", "app1", hosts={}, racks={}, total=16)
    ask.resource = Resource(512, 1)
    cluster = ClusterSummary(num_nodes=4, num_racks=1, total=Resource(16384, 16), unallocated=Resource(16384, 16))
    if calculator is not None:
        cluster.calculator = calculator
    return encode_schedule(ScheduleObservation(node=n, asks=[ask], cluster=cluster, request_id="r1")).SerializeToString()


def observations(data: bytes) -> list[ScheduleObservation]:
    """The same request through the full decoder and the server's caching fast path (twice: the cached tail)."""
    decoder = ScheduleDecoder()
    return [decode_schedule(pb.ScheduleRequest.FromString(data)), decoder.decode(data), decoder.decode(data)]


@pytest.mark.parametrize("calculator, expected", [
    (Calculator.MEMORY, 8),        # DefaultResourceCalculator: as many as YARN places
    (Calculator.DOMINANT, 4),      # DominantResourceCalculator: vcores count
    (None, 4),                     # an older plugin: memory and vcores, as before
    (Calculator.UNSPECIFIED, 4),
])
@pytest.mark.parametrize("policy", ["fifo", "delay", "acl", "clqlmrs"])
def test_policies_place_as_many_as_the_calculator_allows(calculator, expected, policy):
    for obs in observations(request(calculator)):
        assert obs.cluster.calculator == (calculator or Calculator.UNSPECIFIED)
        decision = Engine(create(policy)).schedule(obs)
        assert sum(a.count for a in decision.assignments) == expected, (policy, calculator)


def test_a_node_without_vcores_left_still_takes_containers_by_memory():
    # YARN reports negative unallocated vcores on such a node; the engine reads it as none free
    for obs in observations(request(Calculator.MEMORY, free_vcores=-4)):
        assert sum(a.count for a in Engine(create("fifo")).schedule(obs).assignments) == 8
    for obs in observations(request(None, free_vcores=-4)):
        assert Engine(create("fifo")).schedule(obs).assignments == []


@pytest.mark.parametrize("calculator, kept", [(Calculator.MEMORY, 8), (Calculator.DOMINANT, 4), (None, 4)])
def test_the_engine_clip_uses_the_calculator(calculator, kept):
    obs = observations(request(calculator))[0]
    decision, cut = clip_schedule(obs, ScheduleDecision([Assignment("a", 10, Locality.OFF_SWITCH)]))
    assert sum(a.count for a in decision.assignments) == kept
    assert cut == 10 - kept


def test_unknown_calculator_reads_as_unspecified():
    req = pb.ScheduleRequest.FromString(request(Calculator.MEMORY))
    req.cluster.resource_calculator = 7  # a newer plugin's kind
    obs = decode_schedule(req)
    assert obs.cluster.calculator == Calculator.UNSPECIFIED
    assert sum(a.count for a in Engine(create("fifo")).schedule(obs).assignments) == 4


def test_the_calculator_is_not_carried_into_shared_asks():
    """Asks are cached by their bytes and shared between requests: the calculator lives on the free resource."""
    decoder = ScheduleDecoder()
    memory = decoder.decode(request(Calculator.MEMORY))
    both = decoder.decode(request(None))
    assert memory.asks[0] is both.asks[0]
    assert memory.asks[0].resource.max_copies_in(memory.node.unallocated) == 8
    assert both.asks[0].resource.max_copies_in(both.node.unallocated) == 4


def test_fit_rule_by_calculator():
    free = Resource(4096, 1, {"gpu": 0})
    ask = Resource(1024, 2, {"gpu": 1})
    assert ask.max_copies_in(free) == 0 and not ask.fits_in(free)
    free.compared = int(Calculator.MEMORY)
    assert ask.max_copies_in(free) == 4 and ask.fits_in(free, 4) and not ask.fits_in(free, 5)
    left = free.minus(ask, 3)
    assert left.compared == int(Calculator.MEMORY) and ask.max_copies_in(left) == 1
    free.compared = int(Calculator.DOMINANT)
    assert ask.max_copies_in(free) == 0
    assert Resource(1024, 1) == Resource(1024, 1, {}, int(Calculator.MEMORY))  # not part of equality
