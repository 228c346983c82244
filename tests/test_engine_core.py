"""Engine core: learning off the decision path (bounded queue, drops counted, saves in the learner's thread),
decisions unchanged by learning, explicit state, event dataclasses and the protocol boundary."""

from __future__ import annotations

import ast
import re
import threading
from pathlib import Path

import pytest

from clqlmrs_heartbeats import map_job, node, observe
from emulator.drivers import Driver, InProcessDriver
from emulator.scenario import get_scenario
from policy_engine import artifact
from policy_engine.codec import decode_route, encode_route
from policy_engine.engine import Engine, EngineMetrics
from policy_engine.learning import LearningLoop
from policy_engine.metrics_scrape import Metrics
from policy_engine.policy import SCHEDULING_OPPORTUNITIES, available, create
from policy_engine.types import (
    Assignment,
    ClusterState,
    ContainerStarted,
    JobFinished,
    Locality,
    RouteJob,
    RouteObservation,
    RouteSequence,
    ScheduleDecision,
)

REPO = Path(__file__).resolve().parent.parent


class BlockedLearner:
    """A learner that holds its thread until released: the engine must not wait for it."""

    def __init__(self):
        self.release = threading.Event()
        self.entered = threading.Event()
        self.decisions: list = []
        self.reports: list = []
        self.errors = 0
        self.closed = False

    def on_decision(self, trace):
        self.entered.set()
        self.release.wait(30)
        self.decisions.append(trace)

    def on_events(self, events):
        self.reports.append(events)

    def publish(self):
        pass

    def maybe_save(self):
        pass

    def close(self):
        self.closed = True


def test_full_queue_drops_and_counts_and_never_blocks_the_producer():
    learner = BlockedLearner()
    loop = LearningLoop(learner, capacity=3, threaded=True)
    assert loop.decision("t0")
    assert learner.entered.wait(10)          # the learner thread is now stuck inside "t0"
    accepted = [loop.decision(f"t{i}") for i in range(1, 8)]   # returns at once although nothing is consumed
    assert accepted == [True, True, True, False, False, False, False]
    assert not loop.events([JobFinished(job_id="a")]) and loop.dropped == {"decision": 4, "report": 1}
    learner.release.set()
    assert loop.flush(10)
    assert learner.decisions == ["t0", "t1", "t2", "t3"]   # what was queued is learned, in order
    loop.close()
    assert learner.closed


def test_engine_counts_drops_in_its_metrics_and_decides_while_the_learner_is_stuck():
    policy = create("clqlmrs", epsilon=0.0)
    metrics = EngineMetrics()
    engine = Engine(policy, metrics, learning="thread", queue_capacity=2)
    learner = BlockedLearner()
    engine.learner = learner
    engine.learning = LearningLoop(learner, 2, threaded=True, on_drop=engine._count_drop)
    job = map_job("app1", [(["n1", "n2"], [])] * 2)
    decisions = [engine.schedule(observe(node("n1", ts=0), [job]))]
    assert learner.entered.wait(10)  # the learner is stuck in the first decision; 2 more fit the queue
    decisions += [engine.schedule(observe(node("n1", ts=t), [job])) for t in range(1, 6)]
    assert all(sum(a.count for a in d.assignments) == 2 for d in decisions)
    assert metrics.registry.get_sample_value("yarnrl_learner_dropped_total", {"kind": "decision"}) == 3
    engine.bind_metrics()
    assert metrics.registry.get_sample_value("yarnrl_learner_queue") == 2
    learner.release.set()
    engine.close()


class ThreadedDriver(Driver):
    """An engine with its learner in a thread, as `policy-engine serve` runs it, called the way the server does:
    a Report returns once the learner has taken its events in."""

    mode = "threaded"

    def __init__(self, policy):
        self.engine = Engine(policy, learning="thread")
        self.engine.attach_learner()

    def schedule(self, obs):
        return self.engine.schedule(obs)

    def report(self, events):
        done = threading.Event()
        n = self.engine.report(events, done.set)
        assert done.wait(30)
        return n

    def close(self):
        self.engine.close()


def test_learning_in_a_thread_gives_the_decisions_of_inline_learning():
    """The learner publishes after each Report, so a thread-backed learner (serving) and an inline one (the
    emulator) yield the same decisions, while exploration and learning both happen."""
    scenario = get_scenario("locality-sort", maps=10, jobs=2, interarrival_s=0, cache_gb=4)
    inline = InProcessDriver(create("clqlmrs", epsilon=0.3))
    threaded = ThreadedDriver(create("clqlmrs", epsilon=0.3))
    try:
        for seed in range(2):
            assert scenario.run_episode(threaded, seed) == scenario.run_episode(inline, seed)
    finally:
        threaded.close()
    assert inline.engine.learner.updates == threaded.engine.learner.updates > 0


def test_decisions_with_learning_on_are_the_policys_own_decisions():
    """Between Reports the learner changes nothing a decision reads: with learning on, every decision equals what
    a frozen policy on the same table decides, however many decisions the learner has queued."""
    learning = create("clqlmrs", epsilon=0.0)
    frozen = create("clqlmrs", learn=False)
    engine_on, engine_off = Engine(learning, learning="thread"), Engine(frozen)
    engine_on.attach_learner()
    jobs = [map_job("app1", [(["n2", "n4"], [])] * 3, submit=0), map_job("app2", [(["n1", "n3"], ["n1"])] * 2, 1)]
    for t in range(40):
        n = node(f"n{1 + t % 4}", ts=t)
        assert engine_on.schedule(observe(n, jobs, f"r{t}")) == engine_off.schedule(observe(n, jobs, f"r{t}"))
    engine_on.close()


def test_saves_run_in_the_learners_thread_and_never_run_git(tmp_path, monkeypatch):
    path = tmp_path / "q.safetensors"
    policy = create("clqlmrs", save_to=str(path), epsilon=0.0, save_every_s=0)
    engine = Engine(policy, learning="thread")
    learner = engine.attach_learner()
    threads = []
    real_save = policy.model.save

    def save(*a, **k):
        threads.append(threading.current_thread().name)
        return real_save(*a, **k)

    monkeypatch.setattr(policy.model, "save", save)

    def no_git(*a, **k):
        raise AssertionError("code_version ran git after start")

    monkeypatch.setattr(artifact.subprocess, "run", no_git)
    engine.schedule(observe(node("n1", free_gb=2), [map_job("app2", [(["n1", "n2"], ["n1"])] * 2)]))
    done = threading.Event()
    engine.report([ContainerStarted("c1", "app2", "n1:8041", locality=Locality.CACHE_LOCAL),
                   JobFinished(job_id="app2")], done.set)
    assert done.wait(30)
    engine.close()
    assert threads and all(name.startswith("learner-") for name in threads[:-1]), threads
    assert path.exists() and learner.updates > 0 and learner.errors == 0


def test_route_sequence_travels_in_its_own_fields_and_older_ids_still_work():
    obs = RouteObservation([RouteJob("j")], [ClusterState(1, 10, 10, 10, 5)], request_id="opaque",
                           sequence=RouteSequence("episode-7", 12))
    back = decode_route(encode_route(obs))
    assert back.sequence == RouteSequence("episode-7", 12) and back.request_id == "opaque"
    legacy = encode_route(RouteObservation([RouteJob("j")], [ClusterState(1, 10, 10, 10, 5)], request_id="ep:3"))
    assert not legacy.HasField("sequence") and decode_route(legacy).sequence is None
    engine = Engine(create("rr"))
    o = decode_route(legacy)
    engine.route(o)
    assert o.sequence == RouteSequence("ep", 3)  # the engine's fallback for callers without the field


def test_policies_that_read_opportunity_counts_declare_it():
    """The engine keeps missed-opportunity counts only for policies that declare reading them."""
    for s in available():
        policy = create(s.name, **({"model": None} if s.model == "optional" else {})) if s.model != "required" \
            else None
        if policy is None:
            continue
        source = Path(__import__(type(policy).__module__, fromlist=["x"]).__file__).read_text()
        uses = "scheduling_opportunities" in source and "policy.py" not in type(policy).__module__
        if uses or s.name in ("delay", "acl", "clqlmrs"):
            assert SCHEDULING_OPPORTUNITIES in policy.reads, s.name
    assert Engine(create("fifo")).opportunities is None
    assert Engine(create("delay")).opportunities is not None


def _imports(path: Path) -> set[str]:
    mods = set()
    for node_ in ast.walk(ast.parse(path.read_text())):
        if isinstance(node_, ast.ImportFrom) and node_.module:
            mods.add(node_.module)
        elif isinstance(node_, ast.Import):
            mods.update(a.name for a in node_.names)
    return mods


def test_only_the_server_client_and_codec_touch_protobuf():
    allowed = {"policy_engine/server.py", "policy_engine/client.py", "policy_engine/codec.py",
               "policy_engine/proto.py", "policy_engine/batch.py"}  # batch.py: the batched path's codec too
    offenders = []
    for path in [*(REPO / "policy_engine").rglob("*.py"), *(REPO / "emulator").rglob("*.py"),
                 *(REPO / "algorithms").rglob("*.py")]:
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith("policy_engine/_generated") or rel in allowed:
            continue
        if any(m == "policy_engine.proto" or m.startswith("policy_engine._generated") for m in _imports(path)) \
                or re.search(r"WhichOneof\(", path.read_text()):
            offenders.append(rel)
    assert offenders == []


def test_the_engine_side_never_imports_the_emulator():
    """The layers: policy_engine and every family's served side (algorithms/<family>/policy.py and what it imports
    from its family) import nothing of the emulator, so the engine image runs without it."""
    import subprocess
    import sys as _sys

    code = ("import sys, policy_engine.policy as p, policy_engine.server, policy_engine.engine; p.available(); "
            "print(sorted(m for m in sys.modules if m == 'emulator' or m.startswith(('emulator.', 'torch', "
            "'gymnasium', 'pettingzoo'))))")
    out = subprocess.run([_sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]", out.stdout
    served = [p.relative_to(REPO).as_posix() for p in (REPO / "algorithms").glob("*/policy.py")]
    assert len(served) == 5, served  # one per paper
    # and it is the registry's import that brings them in: every family's policies are registered
    from policy_engine.policy import available
    assert {"clqlmrs", "deeprm-pg", "sjf", "packer", "greedy", "bdl", "rl-fc", "rl-lsfc"} <= {s.name for s in available()}


def test_clqlmrs_policy_and_learner_depend_on_the_model_not_on_each_other():
    pkg = REPO / "algorithms" / "clqlmrs"
    policy_imports, learner_imports = _imports(pkg / "policy.py"), _imports(pkg / "learner.py")
    assert "algorithms.clqlmrs.learner" not in policy_imports
    assert "algorithms.clqlmrs.policy" not in learner_imports
    assert "algorithms.clqlmrs.model" in policy_imports and "algorithms.clqlmrs.model" in learner_imports
    # defaults are defined once: no other module of the package or the trainer has the paper's gamma or decay in
    # its code (docstrings may quote them)
    for path in pkg.glob("*.py"):  # the served side and the emulator's trainer (train.py, train_from_log.py)
        if path.name != "config.py":
            numbers = {n.value for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant)}
            assert not numbers & {0.999, 0.95, 1024, 32}, path.name


def test_schedule_decoder_equals_the_full_decode_and_names_the_same_errors():
    """The server's hot path (serialized request, asks decoded once and recognised by their bytes) gives the same
    observation as decode_schedule, and refuses what it refuses with the same message."""
    from engine_throughput import heartbeat

    from policy_engine.codec import InvalidRequest, ScheduleDecoder, decode_schedule, encode_schedule

    decoder = ScheduleDecoder()
    for i in range(40):
        req = heartbeat(i, asks=1 + i % 7)
        assert decoder.decode(req.SerializeToString()) == decode_schedule(req)
    assert decoder.hits > decoder.misses > 0  # asks repeat between heartbeats: decoded once
    cached = observe(node("n1"), [map_job("app1", [(["n1", "n2"], ["n1"])] * 3)], "with-blocks")
    req = encode_schedule(cached)
    assert decoder.decode(req.SerializeToString()) == decode_schedule(req)

    def refused(req) -> str:
        with pytest.raises(InvalidRequest) as full:
            decode_schedule(req)
        with pytest.raises(InvalidRequest) as fast:
            decoder.decode(req.SerializeToString())
        assert str(fast.value) == str(full.value)
        return str(fast.value)

    bad = heartbeat(1)
    bad.asks[3].ask_id = bad.asks[2].ask_id
    assert "asks[3].ask_id: duplicate" in refused(bad)
    bad = heartbeat(2)
    bad.asks[5].num_containers = -1
    assert "asks[5].num_containers" in refused(bad)
    bad = heartbeat(3)
    bad.ClearField("node")
    assert "node: missing" in refused(bad)
    with pytest.raises(InvalidRequest, match="not a yarnrl.v1.ScheduleRequest"):
        decoder.decode(b"\x12\xff\xff\xff")


def test_schedule_decoder_reuses_repeated_asks_and_cluster_whatever_the_field_order():
    """Asks and cluster repeated after a new node are taken whole from the decoder's tail cache (same observation
    as decode_schedule, a fresh asks list each time); requests whose fields come in another order, or whose node
    is bad, take the other paths and give the same result or error."""
    from engine_throughput import heartbeat

    from policy_engine.codec import InvalidRequest, ScheduleDecoder, decode_schedule, parse_schedule_request

    decoder = ScheduleDecoder()
    seen = []
    for i in range(12):  # one set of asks, a different node and request id each time
        req = heartbeat(i)
        obs = decoder.decode(req.SerializeToString())
        assert obs == decode_schedule(req)
        seen.append(obs.asks)
    assert decoder.tail_hits == 11
    assert all(a is not b for a, b in zip(seen, seen[1:]))  # a policy may reorder its list in place
    changed = heartbeat(20)
    changed.asks[4].num_containers = 3  # one ask changed: its tail is new, the other asks come from the ask cache
    assert decoder.decode(changed.SerializeToString()) == decode_schedule(changed)
    assert decoder.tail_hits == 11

    # the same fields in another order (asks first, node last): split field by field, never from the tail cache
    req = heartbeat(5)
    parts = [pb_field(1, req.request_id.encode())] + [pb_field(3, a.SerializeToString()) for a in req.asks] + [
        pb_field(4, req.cluster.SerializeToString()), pb_field(2, req.node.SerializeToString())]
    data = b"".join(parts)
    assert decoder.decode(data) == decode_schedule(parse_schedule_request(data)) == decode_schedule(req)
    # a known tail behind a bad node is refused as the full decode refuses it
    bad = heartbeat(7)
    bad.node.node_id = ""
    with pytest.raises(InvalidRequest, match="node.node_id: empty"):
        decoder.decode(bad.SerializeToString())
    bad.node.node_id, bad.node.total.memory_mb = "dn1:8041", -5
    with pytest.raises(InvalidRequest, match="node.total: negative resource"):
        decoder.decode(bad.SerializeToString())


def test_a_node_overcommitted_in_a_dimension_yarn_does_not_count_is_decoded_with_none_free():
    """YARN's default resource calculator counts memory only: a 4-vcore NodeManager runs 5 containers of 1 vcore
    and the RM reports -1 vcores unallocated (seen on the container cluster: every such heartbeat was refused
    INVALID_ARGUMENT and fell back, the plugin's FallbacksError). The engine reads it as no vcores free, places
    nothing that needs one there, and keeps refusing a negative total or container."""
    from engine_throughput import heartbeat

    from policy_engine.codec import InvalidRequest, ScheduleDecoder, decode_schedule

    req = heartbeat(3)
    req.node.unallocated.memory_mb, req.node.unallocated.vcores = 1536, -1
    req.cluster.unallocated.vcores = -1
    req.node.unallocated.extra["gpu"] = -2
    for obs in (decode_schedule(req), ScheduleDecoder().decode(req.SerializeToString())):
        assert (obs.node.unallocated.memory_mb, obs.node.unallocated.vcores) == (1536, 0)
        assert obs.node.unallocated.extra == {"gpu": 0}
        assert obs.cluster.unallocated.vcores == 0
        decision = Engine(create("fifo")).schedule(obs)
        assert decision.assignments == []  # every ask needs a vcore: nothing fits
    req.node.unallocated.vcores = 4  # vcores free again: the same heartbeat is placed
    del req.node.unallocated.extra["gpu"]
    assert sum(a.count for a in Engine(create("fifo")).schedule(decode_schedule(req)).assignments) > 0
    bad = heartbeat(3)
    bad.cluster.total.vcores = -1
    with pytest.raises(InvalidRequest, match="cluster.total: negative resource"):
        decode_schedule(bad)


def pb_field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (tag, varint length, payload)."""
    from google.protobuf.internal.encoder import _VarintBytes

    return _VarintBytes(number << 3 | 2) + _VarintBytes(len(payload)) + payload


def test_schedule_responses_encoded_by_hand_are_the_bytes_protobuf_writes():
    from policy_engine.codec import encode_schedule_decision, encode_schedule_decision_bytes

    cases = [
        (ScheduleDecision([]), "", "", "fifo", ""),
        (ScheduleDecision([Assignment("app1/20/0", 2, Locality.NODE_LOCAL), Assignment("app1/20/0", 3,
                                                                                       Locality.RACK_LOCAL)]),
         "hb-1", "ab12-7", "fifo", "v1"),
        (ScheduleDecision([Assignment("é" * 100, 300, Locality.UNSPECIFIED), Assignment("x", 0, Locality.OFF_SWITCH),
                           Assignment("y", -1, Locality.CACHE_LOCAL)]), "r" * 200, "d" * 130, "clqlmrs",
         "sha256:" + "f" * 64),
    ]
    for decision, request_id, decision_id, policy, model in cases:
        assert encode_schedule_decision_bytes(decision, request_id, decision_id, policy, model) == \
            encode_schedule_decision(decision, request_id, decision_id, policy, model).SerializeToString()


def test_several_workers_only_for_stateless_policies(tmp_path):
    """`serve --workers N` shares the port between processes (SO_REUSEPORT) only when nothing per engine would
    split: opportunity counts (delay) or an online learner (clqlmrs) are refused with the reason."""
    import signal
    import socket
    import subprocess
    import sys as _sys

    from policy_engine.cli import start_engine_subprocess
    from policy_engine.waiting import retry
    from policy_engine.client import PolicyEngineClient
    from policy_engine.codec import encode_schedule

    for policy, reason in (("delay", "scheduling_opportunities"), ("clqlmrs", "learns online")):
        r = subprocess.run([_sys.executable, "-m", "policy_engine.cli", "serve", "--policy", policy, "--workers", "2",
                            "--port", "0"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and reason in r.stderr and "one worker" in r.stderr, r.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        metrics = s.getsockname()[1]
    proc, target = start_engine_subprocess("fifo", ["--workers", "2", "--metrics-port", str(metrics)])
    try:
        obs = observe(node("n1"), [map_job("app1", [(["n1", "n2"], [])] * 2)], "w")
        for _ in range(6):  # separate channels: separate connections, spread over the workers by the kernel
            with PolicyEngineClient(target, timeout=10) as client:
                client.wait_ready(30)
                assert sum(a.count for a in client.schedule(encode_schedule(obs)).assignments) == 2
        for port in (metrics, metrics + 1):  # both workers are up, each with its own metrics
            scraped = retry(lambda: Metrics.scrape(f"http://127.0.0.1:{port}/metrics", timeout=5), 20,
                            f"worker metrics on port {port}", interval_s=0.2)
            assert any(s.name.startswith("yarnrl_") for s in scraped.samples)  # the engine's own families
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0


def test_schedule_decoder_releases_asks_of_finished_applications():
    from heartbeats import map_ask, node, observe

    """The ask cache keeps two generations: asks of applications that stopped asking are released, so memory
    settles instead of growing until a count cap (found by benchmarks/soak.py under application churn)."""
    from policy_engine.codec import ScheduleDecoder, encode_schedule

    decoder = ScheduleDecoder(max_cached=1000, rotate_every=50)
    for gen in range(20):  # 20 generations of applications, each asking on 100 heartbeats
        asks = [map_ask(f"a{k}", f"app-{gen}-{k}", hosts={"n1": 1}, racks={"/r1": 1}, total=2) for k in range(5)]
        data = encode_schedule(observe(node("n1"), asks)).SerializeToString()
        for _ in range(100):
            assert len(decoder.decode(data).asks) == 5
        assert decoder.cached() <= 10  # this generation's asks, at most the last one's too
    assert decoder.hits > 50 * decoder.misses
