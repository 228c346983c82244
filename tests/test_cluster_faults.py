"""benchmarks/cluster_faults.py without a cluster: how the JMX samples of one fault case become its figures (time
to fallback, to UNREACHABLE, back to SERVING, to the engine's next decision, the last native heartbeat), the
per-case aggregate against the fault-free run, and the command line. The fault cases themselves run on the
container cluster in tests/cluster/test_docker_cluster.py."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

import cluster_faults as cf  # noqa: E402

ZERO = {k: 0 for k in cf.COUNTERS}


def jmx(t_health="SERVING", breaker="CLOSED", **counts):
    return {**ZERO, **counts, "EngineHealth": f"engine:50051={t_health}", "BreakerState": breaker}


def test_pause_case_figures_from_samples():
    before = jmx(Fallbacks=1, FallbacksTimeout=1, EngineDecisions=10, NativeContainers=2, EngineContainers=5)
    samples = [
        cf.Sample(100.0, jmx(Fallbacks=1, EngineDecisions=10)),
        cf.Sample(101.5, jmx("UNREACHABLE", Fallbacks=1, EngineDecisions=10)),            # health check: 1.5 s
        cf.Sample(103.0, jmx("UNREACHABLE", "OPEN", Fallbacks=3, EngineDecisions=10)),    # first fallback: 3 s
        cf.Sample(110.0, jmx("UNREACHABLE", "OPEN", Fallbacks=5, EngineDecisions=10)),    # recovery at 110
        cf.Sample(111.0, jmx("SERVING", "OPEN", Fallbacks=6, EngineDecisions=10)),        # one more native heartbeat
        cf.Sample(112.5, jmx("SERVING", "CLOSED", Fallbacks=6, EngineDecisions=12)),      # engine decides again
        cf.Sample(120.0, jmx("SERVING", "CLOSED", Fallbacks=7, EngineDecisions=20)),      # a later timeout (load)
    ]
    at_recovery = jmx(Fallbacks=5, EngineDecisions=10)
    after = jmx(Fallbacks=7, FallbacksTimeout=4, FallbacksBreakerOpen=3, EngineDecisions=20, NativeContainers=6,
                EngineContainers=9)
    r = cf.summarize(samples, 100.0, 110.0, before, at_recovery, after)
    assert (r["fault_s"], r["fallback_s"], r["unhealthy_s"]) == (10.0, 3.0, 1.5)
    assert (r["serving_s"], r["breaker_closed_s"], r["engine_s"], r["last_native_s"]) == (1.0, 2.5, 2.5, 1.0)
    assert r["fallbacks"] == {"timeout": 3, "unavailable": 0, "error": 0, "invalid_answer": 0, "breaker_open": 3,
                              "wait_heartbeats": 0, "wait_time": 0}
    assert (r["fallbacks_during_fault"], r["fallbacks_after_engine_back"]) == (4, 1)
    assert (r["native_containers"], r["engine_containers"], r["engine_decisions"]) == (4, 4, 10)
    assert r["over_allocated"] == [] and r["node_samples"] == 7


def test_no_fallback_and_no_engine_decision_read_as_none():
    before = jmx(Fallbacks=2, EngineDecisions=4)
    samples = [cf.Sample(50.0, jmx(Fallbacks=2, EngineDecisions=4)),
               cf.Sample(60.0, jmx(Fallbacks=2, EngineDecisions=4), over_allocated=["worker3"])]
    r = cf.summarize(samples, 50.0, 55.0, before, before, before)
    assert r["fallback_s"] is None and r["unhealthy_s"] is None and r["engine_s"] is None
    assert r["last_native_s"] == 0.0 and r["fallbacks_after_engine_back"] is None
    assert r["serving_s"] == 5.0  # SERVING throughout: the first sample after the recovery
    assert r["over_allocated"] == ["worker3"]


def test_vcores_beyond_a_node_count_as_over_allocation_only_without_native_scheduling():
    # YARN's FIFO (the native fallback) counts memory only: 8 x 512 MB on a 4096 MB / 4 vcore node is its own doing
    samples = [cf.Sample(1.0, jmx(), vcores_over=["worker4"]), cf.Sample(2.0, jmx(), over_allocated=["worker1"])]
    native = cf.summarize(samples, 1.0, 1.5, jmx(), jmx(), jmx(NativeContainers=8))
    assert native["over_allocated"] == ["worker1"] and native["vcores_overcommitted"] == ["worker4"]
    engine_only = cf.summarize(samples, 1.0, 1.5, jmx(), jmx(), jmx(EngineContainers=8))
    assert engine_only["over_allocated"] == ["worker1", "worker4"]


def test_a_fallback_after_the_recovery_is_not_the_time_to_fallback():
    # the fault never made the plugin fall back (the job asked nothing during it); a fallback later is not its own
    before = jmx(Fallbacks=0)
    samples = [cf.Sample(10.0, jmx(Fallbacks=0)), cf.Sample(30.0, jmx(Fallbacks=1))]
    r = cf.summarize(samples, 10.0, 20.0, before, before, jmx(Fallbacks=1))
    assert r["fallback_s"] is None and r["last_native_s"] == 10.0


def test_over_allocation_and_health_parsing():
    nodes = [{"nodeHostName": "worker1", "availMemoryMB": 512, "availableVirtualCores": 1},
             {"nodeHostName": "worker2", "availMemoryMB": -256, "availableVirtualCores": 2},
             {"nodeHostName": "worker3", "availMemoryMB": 0, "availableVirtualCores": -1}]
    assert cf.over_allocated(nodes) == ["worker2"]
    assert cf.vcores_overcommitted(nodes) == ["worker3"]
    assert cf.healthy("engine:50051=SERVING")
    assert not cf.healthy("engine:50051=UNREACHABLE")
    assert cf.healthy("a:1=SERVING,b:2=UNREACHABLE") and not cf.healthy("a:1=NOT_SERVING,b:2=SERVING")
    assert not cf.healthy("") and not cf.healthy(None)


def _run(case, job_s, fallback_s=None, **fallbacks):
    return {"case": case, "fault_s": 10.0, "fallback_s": fallback_s, "unhealthy_s": None, "serving_s": 1.0,
            "engine_s": 2.0, "last_native_s": 0.0, "job": {"succeeded": True, "job_s": job_s}, "probe": None,
            "fallbacks": {k: fallbacks.get(k, 0) for k in cf.REASONS}, "native_containers": 1,
            "engine_containers": 2, "over_allocated": []}


def test_aggregate_compares_job_time_with_the_fault_free_runs():
    runs = [_run("none", 40.0), _run("none", 60.0), _run("kill", 75.0, 3.0, unavailable=2),
            _run("kill", 75.0, 5.0, unavailable=1, breaker_open=4), _run("pause", 50.0, 2.0, timeout=3)]
    runs[-1]["probe"] = {"succeeded": False}
    agg = cf.aggregate(runs)
    assert list(agg) == ["none", "kill", "pause"]
    assert agg["none"]["job_s"] == {"mean": 50.0, "std": 10.0, "n": 2}
    assert agg["kill"]["job_vs_fault_free"] == 1.5 and agg["pause"]["job_vs_fault_free"] == 1.0
    assert agg["kill"]["fallback_s"] == {"mean": 4.0, "std": 1.0, "n": 2}
    assert agg["none"]["fallback_s"] == {"mean": None, "std": None, "n": 0}
    assert agg["kill"]["fallbacks"]["unavailable"] == 3 and agg["kill"]["fallbacks"]["breaker_open"] == 4
    assert agg["kill"]["all_succeeded"] and not agg["pause"]["all_succeeded"]  # a failed probe job fails the case
    table = cf.markdown(agg, (12.0, 14.5))
    assert "load average 12.0" in table and "| kill | 2 | 75.0 ± 0.0 | 1.5 |" in table
    assert "unavailable 3, breaker_open 4" in table


def test_job_commands_are_tagged_with_their_input():
    small = cf.job_command("small", "/in", "/out", "x.jar")
    assert "mapreduce.job.tags=yarnrl.input=/in/part-m-00000" in small and small[-2:] == ["/in/part-m-00000", "/out"]
    big = cf.job_command("hibench", "/in", "/out", "x.jar")
    assert "mapreduce.job.tags=yarnrl.input=/in" in big and "mapreduce.job.reduces=8" in big


@pytest.mark.parametrize("argv, message", [
    (["--cases", "kill,crash"], "--cases: choose from none, kill, pause, slow, invalid, waits, netcut"),
    (["--slow-ms", "0"], "--slow-ms must be in (0, 600000]"),
    (["--repeats", "0"], "--repeats must be >= 1"),
    (["--poll-s", "0"], "--poll-s > 0"),
])
def test_bad_options_are_refused_before_any_cluster_work(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        cf.main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_unknown_case_is_refused():
    with pytest.raises(ValueError, match="unknown case 'crash'"):
        cf.run_case(None, "crash")


def test_unknown_policy_is_refused_with_the_registered_names(capsys):
    with pytest.raises(SystemExit) as e:
        cf.main(["--policy", "no-such-policy"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--policy" in err and "fifo" in err


def test_proxy_cases_need_a_cluster_with_the_fault_proxy():
    class NoProxy:  # a cluster started without `--fault-proxy` (what docker_cluster/cluster.py says then)
        @property
        def proxy_control(self):
            from docker_cluster import cluster

            raise cluster.ClusterError("cluster 'x' has no fault proxy in front of its engine: start it with "
                                       "`docker_cluster/cluster.py up --fault-proxy` (ClusterSpec.fault_proxy)")

    from docker_cluster import cluster

    for case in cf.PROXY_CASES:
        with pytest.raises(cluster.ClusterError, match="up --fault-proxy"):
            cf.run_case(NoProxy(), case)


def test_every_fault_case_says_which_fallbacks_it_must_cause():
    assert set(cf.EXPECTED) == set(cf.CASES) - {"none"}
    assert cf.EXPECTED["invalid"] == ("FallbacksInvalidAnswer",) and cf.EXPECTED["slow"] == ("FallbacksTimeout",)
    assert cf.EXPECTED["waits"] == ("FallbacksWaitHeartbeats", "FallbacksWaitTime")  # issue 23: the wait cap
    # a health check answers through these three
    assert set(cf.UNHEALTHY) | {"slow", "invalid", "waits"} == set(cf.EXPECTED)
    assert all(k in cf.REASONS.values() for v in cf.EXPECTED.values() for k in v)


def test_plot_writes_a_png(tmp_path):
    runs = [_run("none", 40.0), _run("slow", 44.0, 2.0, timeout=3, breaker_open=2),
            _run("invalid", 41.0, 1.0, invalid_answer=3)]
    agg = cf.aggregate(runs)
    cf.plot(agg, tmp_path / "f.png", "test")
    assert (tmp_path / "f.png").stat().st_size > 10_000
    assert "invalid_answer 3" in cf.markdown(agg, (1.0, 2.0))
