"""The contract: observations survive encode → bytes → decode unchanged, in both directions."""

from __future__ import annotations

import numpy as np
import pytest

from policy_engine.codec import (
    InvalidRequest,
    decode_route,
    decode_route_decision,
    decode_schedule,
    decode_schedule_decision,
    encode_route,
    encode_route_decision,
    encode_schedule,
    encode_schedule_decision,
)
from policy_engine.proto import pb
from policy_engine.types import (
    Ask,
    Assignment,
    BlockInfo,
    ClusterDemand,
    ClusterState,
    ClusterSummary,
    Container,
    JobCategory,
    JobMetadata,
    Locality,
    LocalityRequest,
    Node,
    Resource,
    RouteDecision,
    RouteJob,
    RouteObservation,
    ScheduleDecision,
    ScheduleObservation,
    Utilization,
)


def full_schedule_observation() -> ScheduleObservation:
    node = Node(node_id="dn3:45454", host="dn3", rack="/rack2", total=Resource(8192, 8, {"yarn.io/gpu": 2}),
                unallocated=Resource(3072, 5, {"yarn.io/gpu": 1}),
                running=(Container("container_1_0001_01_000002", "application_1_0001", Resource(1024, 1), 100, 50),),
                utilization=Utilization(2.5, 4000, 5000), timestamp_ms=1_700_000_000_000)
    job = JobMetadata(category=JobCategory.TIME_CRITICAL, deadline_ms=1_700_000_060_000, expected_runtime_ms=9000,
                      input_block_ids=("blk_1", "blk_2"),
                      input_blocks=(BlockInfo("blk_1", 134217728, ("dn1", "dn3", "dn4"), ("dn3",),
                                              ("/rack1", "/rack2", "/rack2")),),
                      input_paths=("/user/bench/in",), tags={"yarnrl.category": "time-critical"})
    ask = Ask(ask_id="appattempt_1_0001_000001/20/0", application_id="application_1_0001", attempt_id=1,
              queue="root.default", user="alice", priority=20, allocation_request_id=7, resource=Resource(1024, 1),
              num_containers=3, locality=(LocalityRequest("dn3", 2), LocalityRequest("/rack2", 3, False)),
              submit_time_ms=1_699_999_999_000, job=job, relax_locality=True)
    return ScheduleObservation(node=node, asks=[ask], request_id="hb-42",
                               cluster=ClusterSummary(6, 2, Resource(49152, 48), Resource(20000, 20)))


def test_schedule_observation_round_trip_through_bytes():
    obs = full_schedule_observation()
    wire = encode_schedule(obs).SerializeToString()
    back = decode_schedule(pb.ScheduleRequest.FromString(wire))
    assert back == obs


def test_schedule_decision_round_trip():
    d = ScheduleDecision([Assignment("a", 2, Locality.CACHE_LOCAL), Assignment("b", 1, Locality.OFF_SWITCH)])
    resp = pb.ScheduleResponse.FromString(encode_schedule_decision(d, "hb", "x-1", "fifo", "v1").SerializeToString())
    assert (resp.request_id, resp.decision_id, resp.policy, resp.model_version) == ("hb", "x-1", "fifo", "v1")
    assert decode_schedule_decision(resp) == d


def full_route_observation() -> RouteObservation:
    jobs = [RouteJob(job_id=f"j{i}", category=JobCategory(1 + i % 3),
                     request_distribution=np.array([30] * 8 + [60] * 2, dtype=np.int64), executor_runtime=4.0,
                     deadline=6.0, duration=40.0, executions=5, submit_time=12.0, expected_hetero_factor=80.0,
                     hetero_sensitivity=3,
                     per_cluster=(ClusterDemand(0, np.arange(10, dtype=np.int64), 3.5, 5.0),
                                  ClusterDemand(1, np.arange(10, 20, dtype=np.int64), 2.5, 4.0)))
            for i in range(3)]
    clusters = [ClusterState(cluster_id=c, capacity=800 + c, max_capacity=1000 + c, current_capacity=900 + c,
                             available=100 + c, hetero_factor=70.0 + c,
                             occupation_history=np.linspace(0, 1, 105, dtype=np.float32), missed_deadlines=c,
                             queued_jobs=2 * c, elastic=bool(c)) for c in range(2)]
    return RouteObservation(jobs=jobs, clusters=clusters, time=17.0, request_id="r-3")


def _route_equal(a: RouteObservation, b: RouteObservation) -> None:
    assert (a.time, a.request_id, len(a.jobs), len(a.clusters)) == (b.time, b.request_id, len(b.jobs), len(b.clusters))
    for x, y in zip(a.jobs, b.jobs):
        for f in ("job_id", "category", "executor_runtime", "deadline", "duration", "executions", "submit_time",
                  "expected_hetero_factor", "hetero_sensitivity"):
            assert getattr(x, f) == getattr(y, f), f
        np.testing.assert_array_equal(x.request_distribution, y.request_distribution)
        for p, q in zip(x.per_cluster, y.per_cluster):
            assert (p.cluster_id, p.standard_runtime, p.deadline) == (q.cluster_id, q.standard_runtime, q.deadline)
            np.testing.assert_array_equal(p.request_distribution, q.request_distribution)
    for x, y in zip(a.clusters, b.clusters):
        for f in ("cluster_id", "capacity", "max_capacity", "current_capacity", "available", "hetero_factor",
                  "missed_deadlines", "queued_jobs", "elastic"):
            assert getattr(x, f) == getattr(y, f), f
        np.testing.assert_allclose(x.occupation_history, y.occupation_history)


def test_route_observation_round_trip_through_bytes():
    obs = full_route_observation()
    back = decode_route(pb.RouteRequest.FromString(encode_route(obs).SerializeToString()))
    _route_equal(obs, back)


def test_route_decision_round_trip_names_the_job():
    obs = full_route_observation()
    resp = encode_route_decision(RouteDecision(2, 1), obs, "d-1", "sf-e", "")
    assert resp.job_id == "j2" and resp.cluster_id == 1
    assert decode_route_decision(pb.RouteResponse.FromString(resp.SerializeToString())) == RouteDecision(2, 1)


@pytest.mark.parametrize("mutate, message", [
    (lambda r: r.ClearField("jobs"), "jobs: empty"),
    (lambda r: r.ClearField("clusters"), "clusters: empty"),
    (lambda r: r.clusters.add(cluster_id=0), "duplicate id 0"),
    (lambda r: setattr(r.jobs[0], "deadline", float("inf")), "jobs[0].deadline: not a finite number"),
    (lambda r: setattr(r.jobs[0].per_cluster[0], "cluster_id", 9), "unknown cluster 9"),
    (lambda r: r.jobs[0].request_distribution.__setitem__(0, -1), "negative executor count"),
    (lambda r: setattr(r.clusters[0], "available", -1), "negative capacity"),
])
def test_malformed_route_requests_name_the_field(mutate, message):
    req = encode_route(full_route_observation())
    mutate(req)
    with pytest.raises(InvalidRequest, match=message.replace("[", r"\[").replace("]", r"\]")):
        decode_route(req)


def test_unknown_fields_from_a_newer_peer_are_ignored():
    # A newer plugin may send fields this engine does not know: protobuf keeps them, decoding still works.
    wire = encode_schedule(full_schedule_observation()).SerializeToString()
    extra = wire + bytes([0xF8, 0x3F, 0x01])  # field 1023, varint 1
    assert decode_schedule(pb.ScheduleRequest.FromString(extra)) == full_schedule_observation()
