"""The short fuzz run of `make test` (benchmarks/fuzz.py, issue 17) and the bugs the fuzzer found, pinned.

The run: atheris (coverage-guided) when installed, else the seeded mutation fuzzer, over the decoders and the
Engine, then random and mutated gRPC calls and raw HTTP/2 frames against real engines. Every input must get a
decision or INVALID_ARGUMENT (UNIMPLEMENTED for a call the policy does not make), nothing may crash or hang,
and the engines must answer valid calls afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from policy_engine.codec import InvalidRequest, ScheduleDecoder, decode_schedule_bytes
from policy_engine.engine import Engine
from policy_engine.policy import ObservationMismatch, create
from policy_engine.proto import pb

REPO = Path(__file__).resolve().parents[1]
FUZZ_SECONDS = 30


def test_short_fuzz_run_finds_no_crash(tmp_path):
    r = subprocess.run([sys.executable, str(REPO / "benchmarks" / "fuzz.py"), "--seconds", str(FUZZ_SECONDS),
                        "--wire-share", "0.4", "--seed", "1", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=FUZZ_SECONDS + 400)
    result = json.loads(r.stdout.strip().splitlines()[-1])
    details = json.dumps({k: result[k] for k in ("crashes", "unexpected_codes")}) + "\n" + json.dumps(
        [result["in_process"].get("crash_signatures"), result["wire"].get("crash_signatures")])[:3000]
    assert r.returncode == 0 and result["crashes"] == 0, details
    assert result["unexpected_codes"] == [] and set(result["distinct_codes"]) <= {"OK", "INVALID_ARGUMENT",
                                                                                  "UNIMPLEMENTED"}
    assert result["valid_call_after"] and result["wire"]["unanswered_probes"] == 0
    # enough inputs of every kind to mean something, even on a loaded machine
    assert result["in_process"]["inputs"] >= 500, result["in_process"]
    assert all(result["in_process"]["by_target"].get(t, 0) >= 50
               for t in ("schedule", "route", "report", "schedule_batch"))
    assert result["wire"]["inputs"] >= 30 and sum(result["wire"]["raw_connections"].values()) >= 5
    assert {"OK", "INVALID_ARGUMENT"} <= set(result["distinct_codes"])


# ---------------------------------------------------------------------------------------------------------------
# What the fuzzer found (each was an INTERNAL or UNKNOWN answer before its fix)

def test_a_corrupt_cluster_summary_is_invalid_on_the_fast_path_too():
    node = pb.NodeSnapshot(node_id="n1", host="n1", rack="/r1")
    good = pb.ScheduleRequest(request_id="r", node=node).SerializeToString()
    bad = good + b"\x22\x02\xff\xff"  # field 4 (cluster): two bytes that are not a ClusterSummary
    with pytest.raises(InvalidRequest):
        decode_schedule_bytes(bad)
    with pytest.raises(InvalidRequest):
        ScheduleDecoder().decode(bad)


@pytest.mark.parametrize("policy,manager", [("lf-e", True), ("rr", True), ("random", True), ("bdl", False)])
def test_a_route_request_of_the_other_kind_is_an_observation_mismatch(policy, manager):
    from policy_engine.types import ManagerView, RouteObservation

    engine = Engine(create(policy))
    obs = RouteObservation(jobs=[], clusters=[], time=0.0, request_id="x",
                           manager=ManagerView.__new__(ManagerView) if manager else None)
    with pytest.raises(ObservationMismatch):
        engine.route(obs)


def test_a_model_of_another_cluster_count_is_an_observation_mismatch():
    from corpus import load_corpus

    from policy_engine.codec import decode_route_bytes

    msg = next(g.route[0] for g in load_corpus() if g.scenario == "hetero-elastic-uniform")
    obs = decode_route_bytes(msg)
    engine = Engine(create("rl-fc", model=str(REPO / "models" / "rl-fc-uniform.safetensors")))
    obs.clusters = obs.clusters[:2]
    with pytest.raises(ObservationMismatch, match="trained for"):
        engine.route(obs)


@pytest.fixture(scope="module")
def lf_e(engine_factory):
    return engine_factory("lf-e")


@pytest.mark.parametrize("method", ["/yarnrl.v1.PolicyEngine/Route", "/yarnrl.v1.PolicyEngine/Report",
                                    "/yarnrl.v1.PolicyEngine/GetInfo", "/yarnrl.v1.PolicyEngine/Schedule",
                                    "/grpc.health.v1.Health/Check"])
def test_bytes_that_are_not_the_message_are_invalid_argument_on_every_method(lf_e, method):
    """gRPC's own answer to an undecodable request is UNKNOWN; the server's StrictDecoding makes it
    INVALID_ARGUMENT, for health checking too."""
    with grpc.insecure_channel(lf_e.target) as channel:
        with pytest.raises(grpc.RpcError) as e:
            channel.unary_unary(method)(b"\xff\xff\xff", timeout=10)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
    assert lf_e.client.health() == "SERVING"


@pytest.mark.parametrize("method", ["/yarnrl.v1.PolicyEngine/RouteStream",
                                    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"])
def test_a_stream_message_that_is_not_the_message_is_invalid_argument(lf_e, method):
    with grpc.insecure_channel(lf_e.target) as channel:
        with pytest.raises(grpc.RpcError) as e:
            list(channel.stream_stream(method)(iter([b"\xff\xff\xff"]), timeout=10))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()


def test_inputs_that_once_crashed_the_engine_now_get_an_answer():
    """Crash inputs the fuzzer saved (benchmarks/results/fuzz/crashes), replayed through the same harness: each
    must now be answered (a decision or INVALID_ARGUMENT)."""
    from corpus import load_corpus
    from fuzz import Harness

    harness = Harness(load_corpus(), None)
    inputs = sorted((REPO / "tests" / "data" / "fuzz-regressions").glob("*.bin"))
    assert inputs
    for path in inputs:
        assert harness.one(path.read_bytes()) in ("OK", "INVALID_ARGUMENT"), (path.name, harness.crashes)


def test_a_job_distribution_of_another_length_is_an_observation_mismatch():
    from corpus import load_corpus

    from policy_engine.codec import decode_route_bytes

    msg = pb.RouteRequest.FromString(next(g.route[0] for g in load_corpus() if g.scenario == "multicluster-uniform"))
    del msg.jobs[0].request_distribution[-1]
    engine = Engine(create("rl-fc", model=str(REPO / "models" / "rl-fc-uniform.safetensors")))
    with pytest.raises(ObservationMismatch, match="request distribution has 10 slots"):
        engine.route(decode_route_bytes(msg.SerializeToString()))
