"""The batched Schedule path (ScheduleBatch, policy_engine.batch): same decisions as one call per heartbeat, fewer
calls; bad input refused where it is."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from batch_drive import drive_batched, drive_single, scenario
from policy_engine.batch import (
    MAX_BATCH_NODES,
    BatchScheduler,
    decode_batch,
    decode_batch_decision,
    encode_batch,
    encode_batch_decision_bytes,
)
from policy_engine.codec import MAX_ASKS
from policy_engine.engine import Engine
from policy_engine.policy import SCHEDULE, create, policies_for
from policy_engine.proto import pb
from policy_engine.types import Ask, ClusterSummary, LocalityRequest, Node, Resource

ROOT = Path(__file__).resolve().parent.parent
CLQLMRS_MODEL = ROOT / "models" / "clqlmrs-mini.safetensors"

# Every policy that decides on node heartbeats of a YARN cluster (the DeepRM-family ones read job slots of a
# one-pool cluster and are driven through the batched path by the emulator test below), and CLQLMRS with the
# shipped learned table (exploration off) as well as learning from scratch (exploration on, drawn per observation).
POLICIES = [(name, {}) for name in policies_for(SCHEDULE, "locality")] + [
    ("clqlmrs", {"model": str(CLQLMRS_MODEL), "learn": False})]


def make(name: str, options: dict):
    options = dict(options)
    model = options.pop("model", None)
    return create(name, model=model, **options)


@pytest.mark.parametrize("name,options", POLICIES, ids=[p[0] + ("-model" if p[1] else "") for p in POLICIES])
@pytest.mark.parametrize("seed", [0, 1])
def test_batched_placements_equal_per_heartbeat_placements(name, options, seed):
    """The same ordered heartbeats (6 rounds over 24 nodes in 4 racks, applications arriving every round, a
    partition of 4 nodes for seed 1), the RM booking every answer: one ScheduleRequest per heartbeat and
    ScheduleBatch calls of 1, 5, 8 and 24 nodes place the same containers on the same nodes at the same levels.
    Exact equality, no bound needed: a batch decides its nodes in order, each on the asks its predecessors left."""
    cluster, hbs, arrivals = scenario(seed, 6, partitioned=4 if seed else 0)
    engine = Engine(make(name, options))
    single = drive_single(engine, cluster, hbs, arrivals)
    assert len(single) >= 30  # enough placements (at every level) to tell policies apart
    assert {p[3] for p in single} >= {2, 4}  # node-local and off-switch at least
    for size in (1, 5, 8, 24):
        batched_engine = Engine(make(name, options))
        batched = drive_batched(batched_engine, cluster, hbs, arrivals, size)
        assert batched == single, f"{name}: batches of {size} placed differently"
        if engine.opportunities is not None:  # the missed-opportunity counts (BatchOpportunities), in LRU order
            assert list(batched_engine.opportunities._counts.items()) == list(engine.opportunities._counts.items())
    # the same with each ask's entries inside the ask instead of the batch's locality table
    assert drive_batched(Engine(make(name, options)), cluster, hbs, arrivals, 8, columnar=False) == single
    # and with view caches so small that they are cleared all the time
    assert drive_batched(Engine(make(name, options)), cluster, hbs, arrivals, 8, max_views=10) == single


@pytest.mark.parametrize("name", ["sjf", "sjf-holdback", "packer"])
def test_deeprm_family_on_a_plugin_cluster_batched_equals_per_heartbeat(name):
    """On a YARN cluster the DeepRM-family policies decide on DeepRM's view of each heartbeat, which keeps asks in
    its job slots and copies them: a batch must give them plain asks, not the live "*"-count views the other
    policies share (CI's fuzz run crashed on that), and place what one call per heartbeat places."""
    cluster, hbs, arrivals = scenario(0, 6)
    single = drive_single(Engine(create(name)), cluster, hbs, arrivals)
    assert len(single) >= 20
    for size in (1, 8, 24):
        assert drive_batched(Engine(create(name)), cluster, hbs, arrivals, size) == single


def test_delay_counts_missed_opportunities_per_node_of_a_batch():
    """Delay waits `node_locality_delay` heartbeats: with delay 3, an ask named only on h0 is offered three other
    nodes of one batch without going off-switch, and goes off-switch on the fourth, as with four single calls."""
    nodes = [Node(f"h{i}:1", f"h{i}", "/r1", Resource(8192, 8), Resource(8192, 8)) for i in range(1, 6)]
    ask = Ask("a", "application_1_0001", priority=1, resource=Resource(1024, 1), num_containers=2,
              locality=(LocalityRequest("h0", 2), LocalityRequest("/r0", 2)), submit_time_ms=1, locality_names=2)
    engine = Engine(create("delay", node_locality_delay=3, rack_locality_additional_delay=0))
    d = BatchScheduler(engine).decide(decode_batch(encode_batch(nodes, [ask], ClusterSummary(10, 2))))
    assert [sum(a.count for a in r.assignments) for r in d.results] == [0, 0, 0, 2, 0]
    assert d.results[3].assignments[0].locality == 4  # off-switch, after 3 missed opportunities


def test_one_answer_never_hands_a_container_to_two_nodes():
    """Ten empty nodes, one ask of 7 containers that each node could take whole: 7 in all, on the first nodes."""
    nodes = [Node(f"h{i}:1", f"h{i}", "/r1", Resource(65536, 64), Resource(65536, 64)) for i in range(10)]
    asks = [Ask("a", "application_1_0001", resource=Resource(1024, 1), num_containers=7, submit_time_ms=1)]
    for policy in ("fifo", "delay", "acl", "clqlmrs"):
        d = BatchScheduler(Engine(create(policy))).decide(decode_batch(encode_batch(nodes, asks, ClusterSummary())))
        counts = [sum(a.count for a in r.assignments) for r in d.results]
        assert sum(counts) == 7, (policy, counts)


def test_nodes_without_room_are_answered_without_a_policy_call():
    nodes = [Node(f"h{i}:1", f"h{i}", "/r1", Resource(8192, 8), Resource(512 if i % 2 else 4096, 8))
             for i in range(6)]
    asks = [Ask("a", "application_1_0001", resource=Resource(1024, 1), num_containers=100, submit_time_ms=1)]
    from policy_engine.engine import EngineMetrics

    engine = Engine(create("fifo"), EngineMetrics())
    d = BatchScheduler(engine).decide(decode_batch(encode_batch(nodes, asks, ClusterSummary())))
    assert d.idle_nodes == 3
    assert [sum(a.count for a in r.assignments) for r in d.results] == [4, 0, 4, 0, 4, 0]
    assert all(r.decision_id for r in d.results)
    # every answered node is a decision on the engine's counter, as the plugin counts it (EngineDecisions)
    assert engine.metrics.registry.get_sample_value("yarnrl_decisions_total",
                                                    {"rpc": "schedule", "policy": "fifo"}) == 6


def test_large_batch_hands_the_loop_back_between_slices():
    nodes = [Node(f"h{i}:1", f"h{i}", "/r1", Resource(8192, 8), Resource(4096, 4)) for i in range(50)]
    asks = [Ask("a", "application_1_0001", resource=Resource(1024, 1), num_containers=1000, submit_time_ms=1)]
    steps = BatchScheduler(Engine(create("fifo"))).steps(decode_batch(encode_batch(nodes, asks, ClusterSummary())),
                                                         yield_every_s=0.0)
    yields = 0
    try:
        while True:
            next(steps)
            yields += 1
    except StopIteration as stop:
        decision = stop.value
    assert yields == 50 and len(decision.results) == 50


def test_malformed_node_and_ask_are_refused_alone():
    nodes = [Node(f"h{i}:1", f"h{i}", "/r1", Resource(8192, 8), Resource(4096, 4)) for i in range(3)]
    asks = [Ask("good", "application_1_0001", resource=Resource(1024, 1), num_containers=5, submit_time_ms=1),
            Ask("bad", "application_1_0002", resource=Resource(1024, 1), num_containers=5, submit_time_ms=2)]
    req = encode_batch(nodes, asks, ClusterSummary())
    req.nodes[1].node_id = ""                   # malformed node
    req.nodes[2].total.memory_mb = -1           # another
    req.asks[1].resource.memory_mb = -5         # malformed ask
    d = BatchScheduler(Engine(create("fifo"))).decide(decode_batch(req))
    assert [sum(a.count for a in r.assignments) for r in d.results] == [4, 0, 0]
    assert d.results[1].refusal.startswith("nodes[1] (node_id '')") and "node_id" in d.results[1].refusal
    assert "nodes[2] (node_id 'h2:1')" in d.results[2].refusal and "node.total" in d.results[2].refusal
    assert [(i, a) for i, a, _ in d.refused_asks] == [(1, "bad")] and "asks[1]" in d.refused_asks[0][2]
    assert all(a.ask_id == "good" for a in d.results[0].assignments)


def test_entries_of_a_refused_ask_never_go_to_another_ask():
    """Found by benchmarks/fuzz.py: with one ask refused by its own fields and another by a bad table entry, the
    first one's table entries were mapped to the last valid ask (numpy's index -1)."""
    nodes = [Node("h1:1", "h1", "/r1", Resource(8192, 8), Resource(8192, 8))]
    asks = [Ask("bad", "application_1_0001", resource=Resource(1024, 1), num_containers=5, submit_time_ms=1,
                locality=(LocalityRequest("h1", 5),)),
            Ask("alsobad", "application_1_0002", resource=Resource(1024, 1), num_containers=5, submit_time_ms=2,
                locality=(LocalityRequest("h9", 5),)),
            Ask("good", "application_1_0003", resource=Resource(1024, 1), num_containers=3, submit_time_ms=3,
                relax_locality=False, locality=(LocalityRequest("h2", 3),))]
    req = encode_batch(nodes, asks, ClusterSummary())
    req.asks[0].num_containers = -1                    # refused by its own fields
    req.locality.num_containers[1] = -4                # "alsobad": refused by its table entry
    d = BatchScheduler(Engine(create("fifo"))).decide(decode_batch(req))
    assert [(i, a) for i, a, _ in d.refused_asks] == [(0, "bad"), (1, "alsobad")]
    assert d.results[0].assignments == []  # "good" keeps to h2: h1's entry of "bad" is not its own


def test_duplicate_node_in_one_batch_is_refused():
    n = Node("h1:1", "h1", "/r1", Resource(8192, 8), Resource(4096, 4))
    asks = [Ask("a", "application_1_0001", resource=Resource(1024, 1), num_containers=50, submit_time_ms=1)]
    d = BatchScheduler(Engine(create("fifo"))).decide(decode_batch(encode_batch([n, n], asks, ClusterSummary())))
    assert d.results[0].assignments and not d.results[0].refusal
    assert "already node 0" in d.results[1].refusal


def test_response_bytes_equal_protobuf():
    nodes = [Node(f"h{i}:1", f"h{i}", "/r1", Resource(8192, 8), Resource(4096, 4)) for i in range(4)]
    asks = [Ask("a", "application_1_0001", resource=Resource(1024, 1), num_containers=6, submit_time_ms=1),
            Ask("b", "application_1_0002", resource=Resource(-1, 1), num_containers=6, submit_time_ms=1)]
    req = encode_batch(nodes, asks[:1], ClusterSummary(), "batch-7", ["r0", "r1", "r2", "r3"])
    req.asks.add().CopyFrom(req.asks[0])
    req.asks[1].ask_id = "b"
    req.asks[1].resource.memory_mb = -1
    req.nodes[2].node_id = ""
    d = BatchScheduler(Engine(create("fifo"))).decide(decode_batch(req))
    raw = encode_batch_decision_bytes(d, "fifo", "v1")
    msg = pb.ScheduleBatchResponse(batch_id="batch-7", policy="fifo", model_version="v1")
    for r in d.results:
        m = msg.results.add(node_id=r.node_id, request_id=r.request_id, decision_id=r.decision_id)
        for a in r.assignments:
            m.assignments.add(ask_id=a.ask_id, count=a.count, locality=int(a.locality))
        if r.refusal:
            m.refusal.code, m.refusal.message = 3, r.refusal
    for i, ask_id, message in d.refused_asks:
        msg.refused_asks.add(index=i, ask_id=ask_id, refusal=pb.ScheduleBatchRefusal(code=3, message=message))
    assert raw == msg.SerializeToString()
    back = decode_batch_decision(pb.ScheduleBatchResponse.FromString(raw))
    assert back.results == d.results and back.refused_asks == d.refused_asks


# ---------------------------------------------------------------- over gRPC


@pytest.fixture(scope="module")
def delay_engine(engine_factory):
    return engine_factory("delay")


def test_grpc_batches_equal_in_process_single_calls(delay_engine):
    cluster, hbs, arrivals = scenario(3, 4, partitioned=4)
    single = drive_single(Engine(create("delay")), cluster, hbs, arrivals)
    remote = drive_batched(None, cluster, hbs, arrivals, 8, remote=delay_engine.client)
    assert remote == single and len(single) >= 20


def test_info_says_the_engine_speaks_batches(delay_engine):
    info = delay_engine.client.info()
    assert "schedule-batch" in info.capabilities and "schedule" in info.capabilities
    assert info.max_batch_nodes == MAX_BATCH_NODES and info.max_batch_asks == MAX_ASKS


def test_batch_past_the_limit_is_refused_whole_and_the_server_survives(delay_engine):
    req = pb.ScheduleBatchRequest()
    for i in range(MAX_BATCH_NODES + 1):
        req.nodes.add(node_id=f"h{i}:1")
    with pytest.raises(grpc.RpcError) as e:
        delay_engine.client.schedule_batch(req, timeout=30)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"{MAX_BATCH_NODES + 1} nodes exceed the limit of {MAX_BATCH_NODES}" in e.value.details()
    with pytest.raises(grpc.RpcError) as e:
        raw_call = delay_engine.client.channel.unary_unary("/yarnrl.v1.PolicyEngine/ScheduleBatch")
        raw_call(b"\x12\xff", timeout=5)  # a node field whose length runs past the message
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "ScheduleBatchRequest" in e.value.details()
    assert delay_engine.client.health() == "SERVING"


def test_grpc_malformed_node_is_refused_alone(delay_engine):
    nodes = [Node(f"h{i}:1", f"h{i}", "/r1", Resource(8192, 8), Resource(4096, 4)) for i in range(3)]
    asks = [Ask("a", "application_1_0001", resource=Resource(1024, 1), num_containers=50, submit_time_ms=1)]
    req = encode_batch(nodes, asks, ClusterSummary(3, 1))
    req.nodes[1].unallocated.extra["yarn.io/gpu"] = 1
    req.nodes[1].total.memory_mb = -3
    resp = delay_engine.client.schedule_batch(req)
    assert [r.HasField("refusal") for r in resp.results] == [False, True, False]
    assert resp.results[1].refusal.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert "nodes[1] (node_id 'h1:1')" in resp.results[1].refusal.message
    assert sum(a.count for a in resp.results[0].assignments) == 4


# ---------------------------------------------------------------- the emulator drives the batched path


@pytest.mark.parametrize("scenario,params,policy", [
    ("locality-wordcount", {"maps": 12, "jobs": 2, "interarrival_s": 3}, "delay"),
    ("locality-wordcount", {"maps": 12, "jobs": 2, "interarrival_s": 3}, "clqlmrs"),
    ("deeprm", {"load": 0.75, "simu_len": 30}, "packer"),
])
def test_emulator_batched_equals_per_heartbeat_in_process_and_over_grpc(scenario, params, policy):
    from emulator.drivers import make_driver
    from emulator.scenario import get_scenario

    sc = get_scenario(scenario, **params)
    with make_driver(policy) as single:
        expected = [sc.run_episode(single, seed) for seed in (0, 1)]
    with make_driver(policy, batched=True) as local:
        assert local.mode == "in-process batched"
        assert [sc.run_episode(local, seed) for seed in (0, 1)] == expected
    if policy == "delay":  # one engine process is enough to show gRPC == in-process
        with make_driver(policy, remote="spawn", batched=True) as remote:
            assert remote.mode == "remote batched"
            assert [sc.run_episode(remote, seed) for seed in (0, 1)] == expected


def test_with_a_decision_log_every_node_gets_its_own_views(tmp_path):
    """A decision log writes observations after their decision, so the batched path then hands each node fresh
    views (no shared or live counts): the same placements, and every node's observation logged as it was seen."""
    pytest.importorskip("pyarrow")
    cluster, hbs, arrivals = scenario(2, 4, partitioned=4)
    single = drive_single(Engine(create("delay")), cluster, hbs, arrivals)
    engine = Engine(create("delay"))
    engine.attach_decision_log(tmp_path / "log", threaded=False)
    assert drive_batched(engine, cluster, hbs, arrivals, 8) == single
    engine.close()
    import pyarrow.parquet as pq

    logged = [r for f in sorted((tmp_path / "log").rglob("*.parquet")) for r in pq.read_table(f).to_pylist()
              if r["rpc"] == "schedule"]
    assert len(logged) >= 40  # the nodes decided by the policy (of 96; idle ones are answered without it)
    assert sum(r["containers"] for r in logged) == sum(p[2] for p in single)


def test_a_large_batch_does_not_hold_up_other_calls(delay_engine):
    """The engine decides a batch in slices and answers other calls in between: a health check sent while a
    3,000-node batch is being decided comes back before the batch's answer."""
    import asyncio

    nodes = [Node(f"h{i}:1", f"h{i}", f"/r{i // 40}", Resource(8192, 8), Resource(4096, 4)) for i in range(3000)]
    asks = [Ask(f"a{j}", f"application_1_{j:04d}", resource=Resource(1024, 1), num_containers=100_000,
                submit_time_ms=j) for j in range(20)]
    data = encode_batch(nodes, asks, ClusterSummary(3000, 75)).SerializeToString()

    async def race():
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        async with grpc.aio.insecure_channel(delay_engine.target) as channel:
            batch_call = channel.unary_unary("/yarnrl.v1.PolicyEngine/ScheduleBatch")
            order = []

            async def batch():
                resp = await batch_call(data, timeout=120)
                order.append("batch")
                return resp

            async def health():
                await asyncio.sleep(0.05)  # the batch is in the engine by then
                await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=60)
                order.append("health")

            resp, _ = await asyncio.gather(batch(), health())
            return order, pb.ScheduleBatchResponse.FromString(resp)

    order, resp = asyncio.run(race())
    assert order == ["health", "batch"]
    assert len(resp.results) == 3000 and sum(a.count for r in resp.results for a in r.assignments) == 3000 * 4


def test_asks_are_cut_from_the_request_bytes_as_protobuf_writes_them():
    from policy_engine.batch import split_batch_asks

    nodes = [Node("h1:1", "h1", "/r1", Resource(8192, 8), Resource(4096, 4))]
    asks = [Ask(f"a{j}", "application_1_0001", resource=Resource(1024, 1), num_containers=3 + j, submit_time_ms=1,
                locality=(LocalityRequest("h1", 1),)) for j in range(3)]
    req = encode_batch(nodes, asks, ClusterSummary(1, 1), "b", ["r"])
    assert split_batch_asks(req.SerializeToString()) == [a.SerializeToString() for a in req.asks]
    assert split_batch_asks(b"\x08\x01") is None and split_batch_asks(b"\x1a\x05ab") is None


@pytest.mark.parametrize("calculator,expected", [(1, 4), (2, 0)])
def test_fits_follow_the_rms_calculator_as_in_a_single_heartbeat(calculator, expected):
    """ClusterSummary.resource_calculator holds for every node of a batch: memory only (DefaultResourceCalculator)
    fits four 1 GB / 1 vcore containers on a node with 4 GB and no vcore free; DominantResourceCalculator none."""
    from policy_engine.codec import decode_schedule, encode_schedule
    from policy_engine.types import ScheduleObservation

    node = Node("h1:1", "h1", "/r1", Resource(8192, 8), Resource(4096, 0))
    asks = [Ask("a", "application_1_0001", resource=Resource(1024, 1), num_containers=10, submit_time_ms=1)]
    req = encode_batch([node], asks, ClusterSummary(1, 1))
    req.cluster.resource_calculator = calculator
    d = BatchScheduler(Engine(create("fifo"))).decide(decode_batch(req))
    single = encode_schedule(ScheduleObservation(node, asks, ClusterSummary(1, 1)))
    single.cluster.resource_calculator = calculator
    one = Engine(create("fifo")).schedule(decode_schedule(single))
    assert sum(a.count for a in d.results[0].assignments) == expected == sum(a.count for a in one.assignments)


class _DelayWithoutShortcuts:
    """Delay deciding every ask through its full placement loop (no early stop, no waiting-ask shortcut)."""

    @staticmethod
    def make(**options):
        from policy_engine.policies.delay import DelayPolicy

        class Full(DelayPolicy):
            def _waits_here(self, *args) -> bool:
                return False

        return Full(**options)


@pytest.mark.parametrize("options", [{}, {"node_locality_delay": 2}, {"node_locality_delay": 1,
                                                                        "rack_locality_additional_delay": 3}])
def test_delay_shortcuts_decide_as_the_full_loop(options):
    """Delay skips an ask that can place nothing on the node (not named there, not waited long enough) without
    building its counts, and the batched path stops once the node's free memory is below every live ask's: the
    same placements, at every level, as the full loop, per heartbeat and batched."""
    cluster, hbs, arrivals = scenario(2, 6)
    full = drive_single(Engine(_DelayWithoutShortcuts.make(**options)), cluster, hbs, arrivals)
    assert len(full) >= 30 and {p[3] for p in full} >= {2, 4}
    assert drive_single(Engine(create("delay", **options)), cluster, hbs, arrivals) == full
    assert drive_batched(Engine(create("delay", **options)), cluster, hbs, arrivals, 8) == full


def test_an_ask_keeps_its_decoded_form_while_only_its_count_changes():
    """The plugin sends each ask's live count (and often a new headroom and name count) in every batch: the engine
    keeps the decoded ask (and so its node views) across such batches, reads the count from the message, and
    still refuses a count out of range."""
    nodes = [Node(f"h{i}:1", f"h{i}", "/r1", Resource(8192, 8), Resource(4096, 4)) for i in range(2)]
    ask = Ask("a", "application_1_0001", resource=Resource(1024, 1), num_containers=9, submit_time_ms=1,
              locality_names=3)
    scheduler = BatchScheduler(Engine(create("fifo")))

    def batch(count: int, headroom: int, names: int):
        req = encode_batch(nodes, [ask], ClusterSummary(), f"b{count}")
        req.asks[0].num_containers, req.asks[0].locality_names = count, names
        req.asks[0].user_headroom.memory_mb = headroom
        return scheduler.decode(req, req.SerializeToString())

    first, second = batch(9, 5000, 3), batch(5, 1000, 2)
    assert second.asks[0].ask is first.asks[0].ask  # decoded once
    assert (second.asks[0].any, second.asks[0].names) == (5, 2)
    assert [sum(a.count for a in r.assignments) for r in scheduler.decide(second).results] == [4, 1]
    third = batch(2, 1000, 2)
    assert [sum(a.count for a in r.assignments) for r in scheduler.decide(third).results] == [2, 0]
    refused = batch(-1, 1000, 2)
    assert refused.asks == [] and "asks[0]" in refused.ask_errors[0][2]
    other = encode_batch(nodes, [ask], ClusterSummary(), "other")
    other.asks[0].priority = 7  # a field of the ask itself: decoded anew
    assert scheduler.decode(other, other.SerializeToString()).asks[0].ask is not first.asks[0].ask
