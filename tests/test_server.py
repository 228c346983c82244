"""The engine behind a real `policy-engine serve` process, over loopback gRPC."""

from __future__ import annotations

import math
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2
from heartbeats import map_ask, node, observe

from policy_engine import PROTOCOL_VERSION
from policy_engine.codec import encode_schedule
from policy_engine.engine import Engine
from policy_engine.metrics_scrape import Metrics
from policy_engine.policy import create
from policy_engine.proto import SERVICE_NAME, pb
from policy_engine.types import Locality


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def fifo(engine_factory):
    return engine_factory("fifo")


def heartbeat(i: int):
    asks = [map_ask("a", "app1", hosts={"n1": 2}, racks={"/r1": 2}, total=3, submit=1),
            map_ask("b", "app2", hosts={}, racks={}, total=4, submit=2)]
    return observe(node("n1" if i % 2 else "n3", rack="/r1" if i % 2 else "/r2", free_gb=4), asks,
                   request_id=f"hb-{i}")


def test_health_is_serving_and_info_names_policy(fifo):
    assert fifo.client.health() == "SERVING"
    assert fifo.client.health(service="") == "SERVING"
    info = fifo.client.info()
    assert info.protocol_version == PROTOCOL_VERSION
    assert info.policy == "fifo"
    assert set(info.capabilities) == {"schedule", "schedule-batch", "report"}


def test_remote_decisions_equal_in_process_decisions(fifo):
    local = Engine(create("fifo"))
    for i in range(6):
        remote = fifo.client.schedule(encode_schedule(heartbeat(i)))
        mine = local.schedule(heartbeat(i))
        assert remote.request_id == f"hb-{i}"
        assert remote.policy == "fifo" and remote.decision_id
        assert [(a.ask_id, a.count, a.locality) for a in remote.assignments] == [
            (a.ask_id, a.count, int(a.locality)) for a in mine.assignments]


def test_stream_answers_in_order_with_distinct_decision_ids(fifo):
    reqs = [encode_schedule(heartbeat(i)) for i in range(50)]
    resps = list(fifo.client.schedule_stream(reqs, timeout=10))
    assert [r.request_id for r in resps] == [f"hb-{i}" for i in range(50)]
    assert len({r.decision_id for r in resps}) == 50
    assert all(sum(a.count for a in r.assignments) == 4 for r in resps)  # 4 GB free, 1 GB containers


def _code(call):
    with pytest.raises(grpc.RpcError) as ei:
        call()
    return ei.value.code(), ei.value.details()


@pytest.mark.parametrize("mutate, message", [
    (lambda r: r.ClearField("node"), "node: missing"),
    (lambda r: setattr(r.node, "node_id", ""), "node.node_id: empty"),
    (lambda r: r.asks.add().CopyFrom(r.asks[0]), "duplicate id 'a'"),
    (lambda r: setattr(r.asks[0].resource, "memory_mb", -5), "asks[0].resource: negative"),
    (lambda r: setattr(r.asks[0].resource, "memory_mb", 0) or setattr(r.asks[0].resource, "vcores", 0),
     "container resource is zero"),
    (lambda r: setattr(r.asks[1], "num_containers", -1), "asks[1].num_containers"),
    (lambda r: setattr(r.asks[0], "ask_id", ""), "asks[0].ask_id: empty"),
    (lambda r: r.asks[0].locality.add(resource_name="", num_containers=1), "resource_name: empty"),
    (lambda r: setattr(r.asks[0].job, "category", 42), "unknown job category 42"),
])
def test_malformed_schedule_is_invalid_argument(fifo, mutate, message):
    req = encode_schedule(heartbeat(1))
    mutate(req)
    code, details = _code(lambda: fifo.client.schedule(req))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert message in details


def test_oversized_request_is_refused_and_server_survives(fifo):
    req = encode_schedule(heartbeat(1))
    template = req.asks[1]
    for i in range(10_001):
        a = req.asks.add()
        a.CopyFrom(template)
        a.ask_id = f"x{i}"
    code, details = _code(lambda: fifo.client.schedule(req, timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "exceed the limit" in details
    assert fifo.client.health() == "SERVING"


def test_route_with_nan_and_route_on_schedule_policy(fifo):
    req = pb.RouteRequest(jobs=[pb.RouteJob(job_id="j")],
                          clusters=[pb.ClusterState(cluster_id=0, capacity=10, occupation_history=[0.5, float("nan")])])
    code, details = _code(lambda: fifo.client.route(req))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "NaN" in details
    req.clusters[0].ClearField("occupation_history")
    code, details = _code(lambda: fifo.client.route(req))
    assert code == grpc.StatusCode.UNIMPLEMENTED and "does not route" in details


def test_bad_stream_message_fails_that_stream_only(fifo):
    good = encode_schedule(heartbeat(1))
    bad = encode_schedule(heartbeat(2))
    bad.ClearField("node")
    it = fifo.client.schedule_stream([good, bad, good], timeout=10)
    assert next(it).request_id == "hb-1"
    with pytest.raises(grpc.RpcError) as ei:
        next(it)
    assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "hb-2" in ei.value.details()
    assert fifo.client.schedule(good).request_id == "hb-1"


def test_report_counts_events_and_rejects_empty_event(fifo):
    ev = [pb.Event(timestamp_ms=1, container_finished=pb.ContainerFinished(container_id="c1", runtime_ms=5)),
          pb.Event(job_finished=pb.JobFinished(job_id="application_1_0001", succeeded=True))]
    assert fifo.client.report(ev) == 2
    code, details = _code(lambda: fifo.client.report([pb.Event(timestamp_ms=3)]))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "no event kind" in details


def test_deadline_is_enforced_against_a_stalled_engine(engine_factory):
    e = engine_factory("fifo")
    e.proc.send_signal(signal.SIGSTOP)  # the engine hangs, as a overloaded or wedged one would
    try:
        t0 = time.monotonic()
        code, _ = _code(lambda: e.client.schedule(encode_schedule(heartbeat(1)), timeout=0.2))
        elapsed = time.monotonic() - t0
    finally:
        e.proc.send_signal(signal.SIGCONT)
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert elapsed < 2.0
    assert e.client.schedule(encode_schedule(heartbeat(1))).request_id == "hb-1"  # and it recovers


def test_reflection_lists_the_service(fifo):
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    stub = reflection_pb2_grpc.ServerReflectionStub(fifo.client.channel)
    resp = next(stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                          timeout=5))
    names = {s.name for s in resp.list_services_response.service}
    assert SERVICE_NAME in names and "grpc.health.v1.Health" in names


def test_metrics_endpoint_and_graceful_sigterm(engine_factory):
    port = free_port()
    e = engine_factory("delay", "--metrics-port", str(port), "--set", "node_locality_delay=2")
    for i in range(3):
        e.client.schedule(encode_schedule(heartbeat(i)))
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    assert 'yarnrl_decisions_total{policy="delay",rpc="schedule"} 3.0' in body
    assert "yarnrl_decision_latency_seconds_bucket" in body
    assert 'yarnrl_assigned_containers_total{locality="off_switch"}' in body
    # the benchmarks' scraper (prometheus_client's parser) reads the same numbers
    m = Metrics.scrape(f"http://127.0.0.1:{port}/metrics")
    assert m.total("yarnrl_decisions_total") == 3 and m.total("yarnrl_decisions_total", rpc="route") == 0
    assert m.by_label("yarnrl_decisions_total", "policy") == {"delay": 3.0}
    buckets = m.buckets("yarnrl_decision_latency_seconds", rpc="schedule")
    assert buckets[-1] == (math.inf, 3.0) and all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:]))
    assert 0 < m.quantile("yarnrl_decision_latency_seconds", 0.5, rpc="schedule") <= buckets[-2][0]
    assert math.isnan(m.quantile("yarnrl_decision_latency_seconds", 0.5, rpc="route"))
    t0 = time.monotonic()
    assert e.stop(signal.SIGTERM) == 0
    assert time.monotonic() - t0 < 10


def test_serve_refuses_bad_configuration():
    def run(*args):
        return subprocess.run([sys.executable, "-m", "policy_engine.cli", "serve", *args], capture_output=True,
                              text=True, timeout=60)
    r = run("--policy", "nope")
    assert r.returncode != 0 and "unknown policy 'nope'" in r.stderr and "fifo" in r.stderr
    r = run("--policy", "delay", "--set", "node_locality_delay=-3")
    assert r.returncode != 0 and "node_locality_delay must be >= 0" in r.stderr
    r = run("--policy", "fifo", "--model", "/nonexistent/model.safetensors")
    assert r.returncode != 0 and "does not exist" in r.stderr
    r = run("--policy", "delay", "--set", "no_such_option=1")
    assert r.returncode == 2 and "has no option no_such_option; valid options: node_locality_delay" in r.stderr


def test_health_proto_constant_matches():
    assert health_pb2.HealthCheckResponse.SERVING == 1


def test_info_reports_how_many_asks_carried_block_locations(engine_factory):
    import json

    e = engine_factory("fifo")
    with_blocks = map_ask("a", "app1", hosts={"n1": 1}, racks={"/r1": 1}, total=1, cached_on=("n1",))
    plain = map_ask("b", "app2", hosts={}, racks={}, total=1)
    e.client.schedule(encode_schedule(observe(node("n1"), [with_blocks, plain], request_id="x")))
    _, counters = e.client.info_counters()
    assert counters == {"asks_total": 2, "asks_with_blocks": 1}
    r = subprocess.run([sys.executable, "-m", "policy_engine.cli", "info", "--target", e.target, "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout.strip().splitlines()[-1])
    assert (d["asks_total"], d["asks_with_blocks"]) == (2, 1)


def test_warm_up_runs_the_decision_path_without_touching_engine_state():
    from policy_engine.server import warm_up, warm_up_observation

    for name in ("fifo", "delay", "acl", "clqlmrs"):
        policy = create(name)
        engine = Engine(policy, learning="inline")
        learner = engine.attach_learner()
        assert warm_up(policy) > 0
        assert engine.asks_seen == 0
        if learner is not None:
            assert learner.updates == 0 and not learner.jobs
        # the made-up heartbeat is one a policy can place on: the cached block's host gets a map container
        placed = {a.ask_id: a.locality for a in policy.schedule(warm_up_observation()).assignments}
        if name != "delay":
            assert placed.get("warm-up/20/0") == Locality.CACHE_LOCAL, name


def test_capacity_scheduler_fields_are_accepted_and_do_not_change_the_decision(fifo):
    # RlCapacityScheduler sends queue_path, user_headroom and partitions (fields 40-42); an engine whose policies do
    # not read them answers exactly as without them.
    for i in range(4):
        plain = encode_schedule(heartbeat(i))
        with_cs = pb.ScheduleRequest()
        with_cs.CopyFrom(plain)
        with_cs.node.partition = ""
        for a in with_cs.asks:
            a.queue_path = "root.analytics"
            a.user_headroom.memory_mb = 2048
            a.user_headroom.vcores = 2
            a.partition = ""
        with_cs.asks[0].partition = "gpu"  # a labelled ask on an unlabelled node: the plugin never sends it, but
        # an engine must still not fail on it
        got = fifo.client.schedule(with_cs)
        want = fifo.client.schedule(plain)
        assert got.request_id == want.request_id == f"hb-{i}"
        assert [(a.ask_id, a.count) for a in got.assignments] == [(a.ask_id, a.count) for a in want.assignments]
