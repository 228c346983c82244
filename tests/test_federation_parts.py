"""The federation's parts that need no containers: the sub-cluster settings docker_cluster/federation.py renders, the
invalid engine's Route answers, and benchmarks/federation.py's job mapping and metrics."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import grpc
import pytest

ROOT = Path(__file__).resolve().parents[1]

from docker_cluster import federation as docker_federation  # noqa: E402  (docker_cluster/federation.py)
from docker_cluster import invalid_engine  # noqa: E402  (docker_cluster/invalid_engine.py)


def _bench():
    spec = importlib.util.spec_from_file_location("federation_bench", ROOT / "benchmarks" / "federation.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_subcluster_settings():
    spec = docker_federation.FederationSpec(name="x", subcluster_ids=["SC5", "SC3"], sc_memory_mb=[4096, 2048])
    fed = docker_federation.Federation.__new__(docker_federation.Federation)
    fed.spec, fed.subnet_prefix = spec, "172.29.1"
    rm2 = fed._env("rm2")["YARNRL_YARN_EXTRA"]
    assert "<name>yarn.resourcemanager.cluster-id</name><value>SC3</value>" in rm2
    assert "<name>yarn.federation.state-store.heartbeat-interval-secs</name><value>1</value>" in rm2
    w = fed._env("sc2-worker1")
    assert w["YARNRL_RM_HOST"] == "rm2" and w["YARNRL_NM_MEMORY_MB"] == "2048"
    assert "<value>rm2</value><final>true</final>" in w["YARNRL_YARN_EXTRA"]
    assert "router:8050" in fed._env("client")["YARNRL_YARN_EXTRA"]
    assert fed._env("rm1")["YARNRL_ENGINE_ADDRESS"] == ""
    assert len(set(fed._ips().values())) == len(fed._ips())
    with pytest.raises(ValueError, match="at least 2"):
        docker_federation.FederationSpec(name="x", subclusters=1)
    with pytest.raises(ValueError, match="distinct"):
        docker_federation.FederationSpec(name="x", subcluster_ids=["SC1", "SC1"])


def test_amrmproxy_settings():
    """--amrmproxy: what every NodeManager, the client and the hosts files get (off by default: none of it)."""
    def fed_of(**kw):
        fed = docker_federation.Federation.__new__(docker_federation.Federation)
        fed.spec = docker_federation.FederationSpec(name="x", subcluster_ids=["SC5", "SC3"], **kw)
        fed.subnet_prefix = "172.29.1"
        return fed

    off = fed_of()
    assert "amrmproxy" not in off._env("sc1-worker1")["YARNRL_YARN_EXTRA"]
    assert "8049" not in off._env("client")["YARNRL_YARN_EXTRA"]
    assert "SC5" not in off._ips()
    fed = fed_of(amrmproxy=True, policy="maf")
    w = fed._env("sc2-worker1")["YARNRL_YARN_EXTRA"]
    for key, value in (("yarn.nodemanager.amrmproxy.enabled", "true"),
                       ("yarn.nodemanager.amrmproxy.interceptor-class.pipeline",
                        "org.apache.hadoop.yarn.server.nodemanager.amrmproxy.FederationInterceptor"),
                       ("yarn.resourcemanager.cluster-id", "SC3"), ("yarn.federation.non-ha.enabled", "true"),
                       ("yarn.federation.failover.enabled", "false"),
                       ("yarn.federation.policy-manager", "org.yarnrl.federation.RlPolicyManager"),
                       ("yarnrl.federation.amrmproxy.enabled", "true"),
                       ("yarnrl.federation.engine.address", "dsrap:50051"),  # maf serves the Router: a second engine
                       # not final, and named per sub-cluster (the unmanaged AMs' tokens): see _amrmproxy_props
                       ("yarn.resourcemanager.scheduler.address", "${yarn.resourcemanager.cluster-id}:8030")):
        assert f"<name>{key}</name><value>{value}</value></property>" in w, key
    assert "<value>localhost:8049</value>" in fed._env("client")["YARNRL_YARN_EXTRA"]
    ips = fed._ips()
    assert ips["SC5"] == ips["rm1"] and ips["SC3"] == ips["rm2"] and ips["dsrap"] not in (ips["engine"], ips["rm1"])
    shared = fed_of(amrmproxy=True, policy="sdl")
    assert shared.spec.amrmproxy_shares_engine
    assert "<value>engine:50051</value>" in shared._env("sc1-worker1")["YARNRL_YARN_EXTRA"]


def test_invalid_engine_never_names_a_candidate():
    from policy_engine.proto import pb, pb_grpc

    server, port = invalid_engine.build_server("127.0.0.1", 0)
    try:
        stub = pb_grpc.PolicyEngineStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        req = pb.RouteRequest(request_id="r", jobs=[pb.RouteJob(job_id="j")],
                              clusters=[pb.ClusterState(cluster_id=3), pb.ClusterState(cluster_id=5)])
        answers = [stub.Route(req, timeout=5) for _ in range(4)]
        for a in answers:
            assert a.cluster_id not in (3, 5) or a.job_index != 0
        assert {a.decision_id for a in answers} == {"invalid-route-cluster", "invalid-route-job"}
        assert "route" in stub.GetInfo(pb.GetInfoRequest(), timeout=5).capabilities
    finally:
        server.stop(0)


def test_stream_mapping_and_metrics():
    bench = _bench()
    args = SimpleNamespace(jobs=12, pattern="uniform", seed=3, arrival_seconds=0.5, task_seconds=0.25,
                           executors_per_map=120.0)
    w = bench.workload(args)
    jobs = bench.real_jobs(w, args, overhead_s=10.0)
    assert len(jobs) == 12
    for j, job in zip(range(12), jobs):
        assert 1 <= job["maps"] <= 3
        assert job["arrival_s"] == pytest.approx((float(w.arrival[j]) - float(min(w.arrival))) * 0.5)
        assert job["optimal_s"] == pytest.approx(job["map_s"] + 10.0)
        assert (job["deadline_s"] > 0) == (w.deadline[j] > 0)
        assert f"yarnrl.executors={job['maps']}" in job["tags"]
    rows = [{"index": 0, "category": "time-critical", "deadline_s": 30.0, "optimal_s": 20.0, "ar_s": 40.0,
             "final_status": "SUCCEEDED", "subcluster": "SC5"},
            {"index": 1, "category": "regular", "deadline_s": 0.0, "optimal_s": 20.0, "ar_s": 20.0,
             "final_status": "SUCCEEDED", "subcluster": "SC3"},
            {"index": 2, "category": "streaming", "deadline_s": 25.0, "optimal_s": 20.0, "ar_s": None,
             "final_status": "FAILED", "subcluster": "SC3"}]
    s = bench.summarise("maf", rows, {"SC5": [0.5, 0.7], "SC3": []}, {"EngineDecisions": 3}, 100.0)
    assert s["tmdl"] == 2                       # one late, one failed with a deadline
    assert s["ajdr"] == pytest.approx(50.0)     # (100 + 0) / 2
    assert s["ajer"] == pytest.approx(150.0)
    assert s["missed_per_category"] == {"regular": 0, "time-critical": 1, "streaming": 0}
    assert s["jobs_per_subcluster"] == {"SC5": 1, "SC3": 2}
    assert s["utilisation"] == {"SC5": pytest.approx(0.6), "SC3": None}
    assert bench.rank({"a": 3, "b": 1, "c": 3}) == ["b", "a", "c"]
    assert bench.rank_text({"a": 3, "b": 1, "c": 3}) == "b < a = c"
    # predicted a < b < c, a == d: pairs (a,b) (a,c) (b,c) (b,d) (c,d); real agrees on (a,c) and (b,c) only
    assert bench.pair_agreement({"a": 2, "b": 2, "c": 5, "d": 9}, {"a": 1, "b": 2, "c": 3, "d": 1}) == \
        {"ordered_pairs": 5, "agreeing": 2}
    assert bench.router_settings("rl-lsfc", SimpleNamespace(task_seconds=0.25, executors_per_map=120))[-1] == \
        "yarnrl.federation.history.length=105"


def test_resume_reuses_only_runs_of_the_same_stream(tmp_path):
    """--resume: the committed 40-job result (three policies) is reused by an invocation with its settings, and
    refused in one line when a setting, the federation's shape or a recorded job differs."""
    import json

    bench = _bench()
    done = ROOT / "benchmarks" / "results" / "federation" / "federation-uniform-40.json"
    old = json.loads(done.read_text())
    fed = old["federation"]
    args = SimpleNamespace(**{k: old["settings"][k] for k in ("pattern", "jobs", "seed", "arrival_seconds",
                                                               "task_seconds", "executors_per_map", "jvm_opts",
                                                               "job_timeout")},
                           router_cache_ttl=0, load_max_age_ms=0)
    runs, overhead = bench.load_resumable(done, args, fed, {})
    assert [r["policy"] for r in runs] == [r["policy"] for r in old["runs"]]
    assert overhead == old["overhead_s"]
    assert {r["fingerprint"] for r in runs} == {bench.fingerprint(vars(args), overhead, fed)}
    for change, why in (({"arrival_seconds": 3.5}, "arrival_seconds"), ({"load_max_age_ms": 1000}, "load_max_age_ms"),
                        ({"seed": 1}, "seed")):
        with pytest.raises(SystemExit, match=why):
            bench.load_resumable(done, SimpleNamespace(**{**vars(args), **change}), fed, {})
    with pytest.raises(SystemExit, match="federation"):
        bench.load_resumable(done, args, "SC1+SC2 (4096/4096 MB)", {})
    tampered = json.loads(done.read_text())
    tampered["runs"][1]["rows"][3]["deadline_s"] += 1.0
    (tmp_path / "t.json").write_text(json.dumps(tampered))
    with pytest.raises(SystemExit, match="job 3 is not the job"):
        bench.load_resumable(tmp_path / "t.json", args, fed, {})
    pred = dict(old["runs"][0]["prediction"], tmdl=old["runs"][0]["prediction"]["tmdl"] + 1)
    with pytest.raises(SystemExit, match="emulator now predicts"):
        bench.load_resumable(done, args, fed, {old["runs"][0]["policy"]: pred})
