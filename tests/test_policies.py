"""FIFO and Delay scheduling on hand-built heartbeats, through the Engine (opportunity counts, clipping)."""

from __future__ import annotations

import pytest
from heartbeats import map_ask, node, observe

from policy_engine.engine import Engine
from policy_engine.policy import UnknownPolicy, available, create
from policy_engine.types import Locality


def placed(decision):
    return [(a.ask_id, a.count, a.locality) for a in decision.assignments]


def test_registry_lists_builtin_policies_and_rejects_unknown():
    names = [s.name for s in available()]
    assert "fifo" in names and "delay" in names
    with pytest.raises(UnknownPolicy, match="registered policies: .*fifo"):
        create("no-such-policy")
    with pytest.raises(ValueError, match="takes no model"):
        create("fifo", model="x.safetensors")


def test_fifo_prefers_node_local_then_rack_then_off_switch():
    engine = Engine(create("fifo"))
    # 1 container wants n1, 2 want rack /r1, 5 in all; the node has room for 4.
    ask = map_ask("a", "app1", hosts={"n1": 1}, racks={"/r1": 3}, total=5)
    d = engine.schedule(observe(node("n1", free_gb=4), [ask]))
    assert placed(d) == [("a", 1, Locality.NODE_LOCAL), ("a", 2, Locality.RACK_LOCAL), ("a", 1, Locality.OFF_SWITCH)]


def test_fifo_serves_applications_in_submit_order():
    engine = Engine(create("fifo"))
    late = map_ask("late", "app2", hosts={"n1": 4}, racks={"/r1": 4}, total=4, submit=200)
    early = map_ask("early", "app1", hosts={}, racks={}, total=3, submit=100)
    d = engine.schedule(observe(node("n1", free_gb=4), [late, early]))
    # the early application takes 3 containers anywhere before the later one gets its node-local one
    assert placed(d) == [("early", 3, Locality.OFF_SWITCH), ("late", 1, Locality.NODE_LOCAL)]


def test_fifo_respects_priority_within_an_application():
    engine = Engine(create("fifo"))
    reduces = map_ask("r", "app1", hosts={}, racks={}, total=2, priority=10)
    maps = map_ask("m", "app1", hosts={}, racks={}, total=2, priority=20)
    d = engine.schedule(observe(node("n1", free_gb=3), [maps, reduces]))
    assert placed(d) == [("r", 2, Locality.OFF_SWITCH), ("m", 1, Locality.OFF_SWITCH)]


def test_cache_local_is_reported_when_a_cached_replica_is_on_the_node():
    engine = Engine(create("fifo"))
    ask = map_ask("a", "app1", hosts={"n1": 1, "n2": 1}, racks={"/r1": 2}, total=2, cached_on=("n1",))
    assert placed(engine.schedule(observe(node("n1"), [ask]))) [0] == ("a", 1, Locality.CACHE_LOCAL)
    assert placed(engine.schedule(observe(node("n2"), [ask])))[0] == ("a", 1, Locality.NODE_LOCAL)


def test_delay_waits_node_locality_delay_heartbeats_before_rack_local():
    # 20 containers: the off-switch wait, min(nodes, 20 * wait factor), is the cluster size, so only the
    # rack delay can let it go.
    engine = Engine(create("delay", node_locality_delay=3))
    ask = lambda: map_ask("a", "app1", hosts={"n9": 20}, racks={"/r1": 20}, total=20)
    decisions = [engine.schedule(observe(node("n1"), [ask()], num_nodes=10)) for _ in range(5)]
    # opportunities 1, 2, 3 are not > 3: wait; the 4th heartbeat goes rack-local
    assert [placed(d) for d in decisions[:3]] == [[], [], []]
    assert placed(decisions[3]) == [("a", 8, Locality.RACK_LOCAL)]
    # the rack-local assignment reset the count: the next heartbeat waits again
    assert placed(decisions[4]) == []
    assert engine.opportunities._counts[ask().key] == 1


def test_delay_node_local_is_immediate_and_resets_the_count():
    engine = Engine(create("delay", node_locality_delay=3))
    ask = lambda: map_ask("a", "app1", hosts={"n1": 2, "n9": 18}, racks={"/r1": 20}, total=20)
    assert placed(engine.schedule(observe(node("n2"), [ask()], num_nodes=10))) == []
    assert placed(engine.schedule(observe(node("n2"), [ask()], num_nodes=10))) == []
    assert engine.opportunities._counts[ask().key] == 2
    d = engine.schedule(observe(node("n1", free_gb=2), [ask()], num_nodes=10))
    assert placed(d) == [("a", 2, Locality.NODE_LOCAL)]
    assert engine.opportunities._counts[ask().key] == 0


def test_delay_is_capped_by_cluster_size():
    engine = Engine(create("delay", node_locality_delay=40))
    ask = lambda: map_ask("a", "app1", hosts={"n9": 20}, racks={"/r1": 20}, total=20)
    got = [placed(engine.schedule(observe(node("n1", free_gb=1), [ask()], num_nodes=2))) for _ in range(3)]
    assert got == [[], [], [("a", 1, Locality.RACK_LOCAL)]]  # waits min(40, 2) = 2 opportunities


def test_delay_skipped_application_lets_the_next_one_run():
    engine = Engine(create("delay", node_locality_delay=5))
    waiting = map_ask("w", "app1", hosts={"n9": 10}, racks={"/r2": 10}, total=10, submit=1)
    anywhere = map_ask("x", "app2", hosts={}, racks={}, total=2, submit=2)
    d = engine.schedule(observe(node("n1"), [waiting, anywhere], num_nodes=10))
    assert placed(d) == [("x", 2, Locality.OFF_SWITCH)]


def test_delay_rack_locality_additional_delay():
    engine = Engine(create("delay", node_locality_delay=1, rack_locality_additional_delay=2))
    # the node is in /r2: rack-local impossible, off-switch after more than 1 + 2 opportunities
    ask = lambda: map_ask("a", "app1", hosts={"n9": 4}, racks={"/r1": 4}, total=4)
    got = [placed(engine.schedule(observe(node("n5", rack="/r2", free_gb=1), [ask()], num_nodes=10)))
           for _ in range(4)]
    assert got == [[], [], [], [("a", 1, Locality.OFF_SWITCH)]]
    # off-switch does not reset the count (CapacityScheduler): the next heartbeat may go off-switch again
    assert placed(engine.schedule(observe(node("n5", rack="/r2", free_gb=1), [ask()], num_nodes=10))) == [
        ("a", 1, Locality.OFF_SWITCH)]


def test_delay_full_node_is_not_an_opportunity():
    engine = Engine(create("delay", node_locality_delay=1))
    ask = lambda: map_ask("a", "app1", hosts={"n9": 4}, racks={"/r1": 4}, total=4)
    for _ in range(3):
        engine.schedule(observe(node("n1", free_gb=0), [ask()], num_nodes=10))
    assert engine.opportunities._counts[ask().key] == 0


def test_delay_rejects_bad_options():
    with pytest.raises(ValueError, match="node_locality_delay"):
        create("delay", node_locality_delay=-1)
    with pytest.raises(ValueError, match="rack_locality_additional_delay"):
        create("delay", rack_locality_additional_delay=-5)


def test_relax_locality_false_keeps_containers_on_named_hosts():
    engine = Engine(create("fifo"))
    ask = map_ask("a", "app1", hosts={"n1": 2}, racks={"/r1": 2}, total=2)
    ask.relax_locality = False
    assert placed(engine.schedule(observe(node("n2"), [ask]))) == [("a", 2, Locality.RACK_LOCAL)]
    assert placed(engine.schedule(observe(node("n7", rack="/r3"), [ask]))) == []


def _strict_rack(ask):
    """What AMRMClient sends for ContainerRequest(nodes, relaxLocality=false): the rack entry and ANY not relaxed."""
    from policy_engine.types import LocalityRequest

    ask.locality = tuple(LocalityRequest(lr.resource_name, lr.num_containers,
                                         lr.relax_locality if lr.resource_name.startswith("n") else False)
                         for lr in ask.locality)
    ask.relax_locality = False
    return ask


@pytest.mark.parametrize("name", ["fifo", "delay", "acl", "clqlmrs"])
def test_relax_locality_false_on_the_rack_entry_allows_only_the_named_hosts(name):
    options = {"node_locality_delay": 0} if name in ("delay", "acl") else {}
    engine = Engine(create(name, **options))
    ask = _strict_rack(map_ask("a", "app1", hosts={"n1": 2}, racks={"/r1": 2}, total=2))
    for _ in range(12):  # however long it has waited, no policy may go to another node of the rack
        assert placed(engine.schedule(observe(node("n2"), [ask]))) == []
        assert placed(engine.schedule(observe(node("n7", rack="/r3"), [ask]))) == []
    assert sum(a.count for a in engine.schedule(observe(node("n1"), [ask])).assignments) == 2


def test_clip_removes_rack_local_containers_against_a_strict_rack_entry():
    from policy_engine.engine import clip_schedule
    from policy_engine.types import Assignment, ScheduleDecision

    ask = _strict_rack(map_ask("a", "app1", hosts={"n1": 2}, racks={"/r1": 2}, total=2))
    decision, cut = clip_schedule(observe(node("n2"), [ask]), ScheduleDecision([Assignment("a", 2,
                                                                                          Locality.RACK_LOCAL)]))
    assert decision.assignments == [] and cut == 2
