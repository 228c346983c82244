"""emulator calibrate: the fit recovers a synthetic run set's known time model; bad input is refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from emulator.calibration import (CalibrationError, check_decision_log, fit, load_calibration, load_points,
                                  predict, synthetic_results)
from emulator.cli import main
from emulator.scenario import get_scenario
from emulator.yarn.timing import TIME_MODEL_VERSION, SharedLink, TimeModel
from policy_engine.command import CommandExit

TRUTH = TimeModel(am_startup_s=7, task_startup_s=4, commit_s=7, cpu_factor=6, link_efficiency=0.7,
                  shaped_transfers=True, output_replication=2)
EXPERIMENTS = {"wordcount-4mb": {"maps": 32, "blocks_per_node": [8, 8, 8, 8]},
               "sort-8mb": {"maps": 8, "blocks_per_node": [2, 2, 2, 2]},
               "wordcount-16mb": {"maps": 8, "blocks_per_node": [2, 2, 2, 2]}}


def write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """Delay's runs of three experiments measured in the emulator with TRUTH (the fit's own episode seeds, so that
    TRUTH reproduces them exactly)."""
    doc = synthetic_results(TRUTH, EXPERIMENTS, policies=("delay",), runs=3, seed0=7000)
    return write(tmp_path_factory.mktemp("syn"), "real_locality-synthetic.json", doc)


def test_fit_recovers_the_known_time_model(synthetic):
    points, shape, _ = load_points([synthetic])
    assert shape["worker_egress_mbit"] == 5.0 and len(points) == 3
    result = fit(points, shaped=True, episodes=3, max_nfev=60)
    t = result["times"]
    # what one wave of maps and a reduce determine: the link's efficiency, and the fixed part of a job's critical
    # path (AM start-up + commit + a map's and a reduce's start-up); the split between them is the prior's
    assert t.link_efficiency == pytest.approx(TRUTH.link_efficiency, rel=0.05)
    fixed = t.am_startup_s + t.commit_s + 3 * t.task_startup_s
    assert fixed == pytest.approx(TRUTH.am_startup_s + TRUTH.commit_s + 3 * TRUTH.task_startup_s, rel=0.10)
    for p in points:
        r = predict(p, t, episodes=3)
        assert r["job_time_s"] == pytest.approx(np.mean(p.job_time_s), rel=0.04)
        assert r["makespan_s"] == pytest.approx(np.mean(p.makespan_s), rel=0.04)
    # and the start values were far from it: the fit moved
    start = predict(points[1], TimeModel(am_startup_s=4, commit_s=4, task_startup_s=3, cpu_factor=3,
                                         link_efficiency=0.8, shaped_transfers=True, output_replication=2), 3)
    assert abs(start["job_time_s"] / np.mean(points[1].job_time_s) - 1) > 0.10


def test_shaped_link_is_shared_by_its_transfers():
    ends = {}
    link = SharedLink(1.0)  # 1 MB/s
    link.add(0, 2.0, lambda t: ends.__setitem__("a", t))
    assert ends["a"] == pytest.approx(2000)
    link.add(1000, 2.0, lambda t: ends.__setitem__("b", t))  # a has 1 MB left: both at 0.5 MB/s until a ends
    assert ends["a"] == pytest.approx(3000) and ends["b"] == pytest.approx(4000)


def test_calibrated_emulator_charges_startup_commit_and_link():
    params = dict(nodes=4, racks=2, node_memory_mb=4096, replication=1, map_memory_mb=512, maps=8, block_mb=4,
                  cache_gb=0.0, am_cache_aware=False, heartbeat_ms=500, jobs=1, interarrival_s=3.0, reduces=1,
                  remote_read_mb_s=0.6, layout="8,0,0,0")
    from emulator.drivers import InProcessDriver
    from policy_engine.policy import create

    def job_time(times):
        return get_scenario("locality-sort", **params, times=times).run_episode(InProcessDriver(create("fifo")),
                                                                                 seed=1)["job_time_s"]

    base = TimeModel(shaped_transfers=True, output_replication=2)
    slow = TimeModel(am_startup_s=10, commit_s=5, shaped_transfers=True, output_replication=2)
    assert job_time(slow) - job_time(base) == pytest.approx(15, abs=1.0)
    # a slower link: every map read from worker 1 and the output's second replica take longer
    assert job_time(TimeModel(link_efficiency=0.5, shaped_transfers=True, output_replication=2)) > job_time(base) + 20


# ---------------------------------------------------------------------------------------------- refusals


def test_too_few_runs_is_refused(tmp_path):
    doc = synthetic_results(TRUTH, {"wordcount-4mb": EXPERIMENTS["wordcount-4mb"]}, policies=("delay",), runs=2)
    path = write(tmp_path, "few.json", doc)
    with pytest.raises(CalibrationError, match=r"^too few runs: 2 policy runs in few.json; .* at least 6$"):
        load_points([path])


def test_runs_of_another_cluster_shape_are_refused(tmp_path):
    a = synthetic_results(TRUTH, {"wordcount-4mb": EXPERIMENTS["wordcount-4mb"]}, runs=2)
    b = synthetic_results(TRUTH, {"wordcount-4mb": EXPERIMENTS["wordcount-4mb"]}, runs=2, egress_mbit=20.0)
    with pytest.raises(CalibrationError, match="another cluster shape: a.json#wordcount-4mb and b.json#wordcount-4mb "
                                               "differ in worker_egress_mbit 5.0 vs 20.0"):
        load_points([write(tmp_path, "a.json", a), write(tmp_path, "b.json", b)])


def test_runs_on_throttled_disks_are_their_own_shape_and_carry_the_disk_rate(tmp_path):
    plain = synthetic_results(TRUTH, {"wordcount-4mb": EXPERIMENTS["wordcount-4mb"]}, runs=3)
    throttled = synthetic_results(TRUTH, {"wordcount-4mb": EXPERIMENTS["wordcount-4mb"]}, runs=3)
    throttled["worker_disk_read_mbps"] = 2.0
    with pytest.raises(CalibrationError, match="differ in worker_disk_read_mbps None vs 2.0"):
        load_points([write(tmp_path, "a.json", plain), write(tmp_path, "b.json", throttled)])
    points, shape, _ = load_points([write(tmp_path, "b.json", throttled)])
    assert shape["worker_disk_read_mbps"] == 2.0
    assert all(p.params["disk_read_mb_s"] == pytest.approx(2.0) for p in points)   # 2 MiB/s, the emulator's MB
    points, _, _ = load_points([write(tmp_path, "a.json", plain)])
    assert all("disk_read_mb_s" not in p.params for p in points)


def test_a_throttled_disk_slows_disk_reads_and_not_cached_ones():
    from emulator.yarn.workloads import APPS, READ_MB_S, map_runtime_s

    app, b = APPS["wordcount"], 4 * 1024 * 1024
    cl, dl, crl, drl, no = range(5)
    slow = {s: float(map_runtime_s(app, b, s, disk_read_mb_s=0.5) - map_runtime_s(app, b, s)) for s in range(5)}
    assert slow[cl] == 0 and slow[crl] == 0                                  # cached replicas: memory
    for s in (dl, drl, no):
        assert slow[s] == pytest.approx(4 / 0.5 - 4 / READ_MB_S[s])         # 4 MB at 0.5 MB/s instead
    # calibrated model: the same cap, on top of the link's (a remote disk read takes the slower of the two)
    rates = TimeModel(link_efficiency=1.0).read_rates(link_mb_s=0.3, disk_mb_s=0.5)
    assert rates[cl] == READ_MB_S[cl] and rates[dl] == 0.5 and rates[crl] == 0.3 and rates[drl] == 0.3
    params = dict(nodes=4, racks=2, node_memory_mb=4096, replication=1, map_memory_mb=512, maps=8, block_mb=4,
                  cache_gb=0.0, am_cache_aware=False, heartbeat_ms=500, jobs=1, interarrival_s=3.0, reduces=1,
                  layout="2,2,2,2")
    from emulator.drivers import InProcessDriver
    from policy_engine.policy import create

    def job_time(**extra):
        return get_scenario("locality-wordcount", **params, **extra).run_episode(
            InProcessDriver(create("delay")), seed=1)["job_time_s"]

    # Delay reads all 8 blocks disk-locally, 2 per node at once: one wave of maps about 8 s longer at 0.5 MB/s
    # (times the tasks' noise, ended on 500 ms heartbeats)
    assert job_time(disk_read_mb_s=0.5) - job_time() == pytest.approx(8 - 4 / READ_MB_S[dl], abs=1.5)
    with pytest.raises(ValueError, match="disk_read_mb_s must be a positive number"):
        get_scenario("locality-wordcount", disk_read_mb_s=0)


@pytest.fixture(scope="module")
def fifo_log(tmp_path_factory):
    log = tmp_path_factory.mktemp("log")
    assert main(["run", "--scenario", "locality-wordcount", "--policy", "fifo", "--episodes", "1", "--no-progress",
                 "--param", "jobs=1", "--decision-log", str(log)]) == 0
    return log


def test_decision_log_of_other_runs_is_refused(tmp_path, fifo_log):
    delay_only = synthetic_results(TRUTH, {"wordcount-4mb": EXPERIMENTS["wordcount-4mb"]}, policies=("delay",),
                                   runs=6)
    path = write(tmp_path, "delay.json", delay_only)
    points, _, _ = load_points([path])
    with pytest.raises(CalibrationError, match="does not match the results: it has decisions of fifo, which the "
                                               "results do not run"):
        check_decision_log(fifo_log, points, [path])
    fifo = synthetic_results(TRUTH, {"wordcount-4mb": EXPERIMENTS["wordcount-4mb"]}, policies=("fifo",), runs=6)
    fifo["experiments"]["wordcount-4mb"]["policies"]["fifo"]["plugin"]["engine_decisions"] = 100_000
    path = write(tmp_path, "fifo.json", fifo)
    with pytest.raises(CalibrationError, match=r"does not match the results: \d+ fifo decisions logged, the plugin "
                                               r"counted 100000"):
        check_decision_log(fifo_log, load_points([path])[0], [path])


def _calibration_file(tmp_path, **changes):
    doc = {"format": "yarnrl-calibration", "time_model_version": TIME_MODEL_VERSION, "code_version": "0.0+other",
           "times": TRUTH.to_dict(), "scenario_params": {"nodes": 4, "racks": 2, "node_memory_mb": 4096,
                                                         "heartbeat_ms": 500, "replication": 1,
                                                         "remote_read_mb_s": 0.596}, **changes}
    return write(tmp_path, "cal.json", doc)


def test_calibration_of_another_version_is_refused_or_warned(tmp_path):
    with pytest.raises(CalibrationError, match="time-model version 0, this emulator's is"):
        load_calibration(_calibration_file(tmp_path, time_model_version=0))
    warnings = []
    doc = load_calibration(_calibration_file(tmp_path), warn=warnings.append)
    assert doc["time_model"] == TRUTH
    assert len(warnings) == 1 and "code version 0.0+other" in warnings[0]


def test_scenario_and_env_take_a_calibration(tmp_path):
    path = _calibration_file(tmp_path)
    scenario = get_scenario("locality-wordcount", calibration=str(path), maps=8, block_mb=4, jobs=2)
    assert scenario.times == TRUTH
    assert len(scenario.cluster.node_memory_mb) == 4 and scenario.cluster.heartbeat_ms == 500
    assert scenario.workload.remote_read_mb_s == pytest.approx(0.596)
    from emulator.envs.locality import LocalityEnv

    env = LocalityEnv(calibration=str(path), maps=8, block_mb=4, jobs=1)
    obs, _ = env.reset(seed=0)
    assert env.sim.times == TRUTH and obs.shape == env.observation_space.shape


def test_cli_calibrate_writes_a_file_and_refuses_in_one_line(tmp_path, synthetic, capsys):
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--runs", str(synthetic), "--out", str(out), "--episodes", "1",
                 "--max-evaluations", "6", "--json", "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["runs"] == 9 and "link_efficiency" in summary["fitted"]
    doc = json.loads(out.read_text())
    assert doc["sources"][0]["sha256"] and len(doc["residuals"]) == 3 and doc["code_version"]
    assert main(["run", "--scenario", "locality-sort", "--policy", "delay", "--episodes", "1", "--no-progress",
                 "--calibration", str(out), "--param", "maps=8", "--param", "block_mb=4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["policies"]
    few = write(tmp_path, "few.json", synthetic_results(TRUTH, {"sort-8mb": EXPERIMENTS["sort-8mb"]}, runs=1))
    with pytest.raises(CommandExit) as e:
        main(["calibrate", "--runs", str(few), "--out", str(tmp_path / "x.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 1 and len(err) == 1 and "too few runs" in err[0]
    with pytest.raises(CommandExit) as e:
        main(["run", "--scenario", "deeprm", "--policy", "sjf", "--calibration", str(out)])
    assert e.value.code == 2 and "--calibration is for the locality-* scenarios" in capsys.readouterr().err


def test_real_locality_prints_the_calibrated_prediction_beside_the_measured(tmp_path, synthetic):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "real_locality", Path(__file__).resolve().parent.parent / "benchmarks" / "real_locality.py")
    real_locality = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(real_locality)
    points, shape, _ = load_points([synthetic])
    cal = {"format": "yarnrl-calibration", "time_model_version": TIME_MODEL_VERSION, "code_version": "x",
           "times": TRUTH.to_dict(), "shape": shape, "scenario_params": {}}
    path = write(tmp_path, "cal.json", cal)
    text = real_locality.calibrated_report(synthetic, path, episodes=3)
    rows = [line for line in text.splitlines() if line.startswith("| synthetic#")]
    assert len(rows) == 3 and all("| delay | 3 |" in r for r in rows)
    assert all("+0%" in r for r in rows)  # TRUTH reproduces its own runs on the fit's seeds
    other = write(tmp_path, "other.json", {**cal, "shape": {**shape, "worker_egress_mbit": 20.0}})
    assert real_locality.calibrated_report(synthetic, other) == (
        "calibrated emulator: not shown (other.json is for another cluster shape: worker_egress_mbit 5.0 vs 20.0)")


def test_measured_phases_pin_the_am_start_up_and_commit(tmp_path):
    """With the history files' phases (emulator.jobhistory) the AM start-up and commit are measured, not fitted, and
    the maps' run time joins the objective: the fit then recovers every constant, where job times alone leave the
    split between start-up and compute to the prior (test_fit_recovers_the_known_time_model)."""
    doc = synthetic_results(TRUTH, EXPERIMENTS, policies=("delay",), runs=3, seed0=7000, phases=True)
    points, _, _ = load_points([write(tmp_path, "real_locality-phases.json", doc)])
    assert all(len(p.phases) == 3 for p in points)
    result = fit(points, shaped=True, episodes=3, max_nfev=60)
    t = result["times"]
    assert "job_overhead_s" not in result["fitted"]
    assert result["measured"]["runs"] == 9
    assert (t.am_startup_s, t.commit_s) == (TRUTH.am_startup_s, TRUTH.commit_s)
    assert t.task_startup_s == pytest.approx(TRUTH.task_startup_s, rel=0.05)
    assert t.cpu_factor == pytest.approx(TRUTH.cpu_factor, rel=0.05)
    assert t.link_efficiency == pytest.approx(TRUTH.link_efficiency, rel=0.05)
    # one point without phases: back to the fitted sum, split by AM_SHARE
    doc["experiments"]["sort-8mb"]["policies"]["delay"]["per_run"][0].pop("phases")
    for r in doc["experiments"]["sort-8mb"]["policies"]["delay"]["per_run"]:
        r.pop("phases", None)
    points, _, _ = load_points([write(tmp_path, "real_locality-some.json", doc)])
    from emulator.calibration import measured_overheads
    assert measured_overheads(points) is None
