"""benchmarks/real_locality.py's container-cluster side without a cluster: what a `hadoop jar` run in the client
container yields (map counters, the job's times), and how an engine's options reach the engine container. The runs
themselves need Docker and minutes of a real cluster (`real_locality.py --cluster docker`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

import real_locality as rl  # noqa: E402

# the tail of a real `hadoop jar ... wordcount` client output (Hadoop 3.5.0, trimmed)
OUTPUT = """\
2026-11-23 23:01:02,345 INFO mapreduce.Job: Running job: job_1763938800000_0007
2026-11-23 23:01:40,001 INFO mapreduce.Job:  map 100% reduce 100%
2026-11-23 23:01:41,002 INFO mapreduce.Job: Job job_1763938800000_0007 completed successfully
2026-11-23 23:01:41,100 INFO mapreduce.Job: Counters: 54
\tJob Counters
\t\tLaunched map tasks=8
\t\tLaunched reduce tasks=1
\t\tData-local map tasks=5
\t\tRack-local map tasks=3
\t\tTotal time spent by all maps in occupied slots (ms)=41234
"""


def test_a_client_run_gives_the_map_counters_and_the_resource_managers_job_times():
    asked = []

    def app_times(app):
        asked.append(app)
        return {"startedTime": 1_000_000, "finishedTime": 1_038_500}

    r = rl.docker_job_result(0, OUTPUT, 999_000, 1_041_000, app_times)
    assert asked == ["application_1763938800000_0007"]
    assert (r["succeeded"], r["TOTAL_LAUNCHED_MAPS"], r["DATA_LOCAL_MAPS"], r["RACK_LOCAL_MAPS"],
            r["OTHER_LOCAL_MAPS"]) == (True, 8, 5, 3, 0)
    assert (r["submit_ms"], r["finish_ms"], r["seconds"]) == (1_000_000, 1_038_500, 38.5)
    # the ResourceManager does not answer: the client's wall clock
    r = rl.docker_job_result(0, OUTPUT, 999_000, 1_041_000, lambda app: None)
    assert r["seconds"] == 42.0
    # a failed job is not a success whatever it printed, and keeps its last lines for the report
    r = rl.docker_job_result(1, OUTPUT + "Exception in thread main\n", 0, 5_000)
    assert not r["succeeded"] and "Exception" in r["output"]
    assert rl.summarize_run([rl.docker_job_result(0, OUTPUT, 0, 1, lambda a: None)])["local_task_rate"] == 5 / 8


def test_engine_options_become_container_arguments_and_mounts(tmp_path):
    calls = []

    class Cluster:  # records what DockerEngine asks docker_cluster/cluster.py for
        def start_engine(self, policy, settings, args=None, volumes=None):
            calls.append((policy, settings, args, volumes))

    model = tmp_path / "models" / "q.safetensors"
    state = tmp_path / "work" / "online.safetensors"
    rl.DockerEngine(Cluster(), "clqlmrs", ["--model", str(model), "--set", "max_wait=2", "--set",
                                           f"save_to={state}"], tmp_path)
    policy, settings, args, volumes = calls[0]
    assert policy == "clqlmrs" and args == ["--model", "/models/q.safetensors"]
    assert settings == ["max_wait=2", "save_to=/state/online.safetensors"]
    assert volumes == {str(model.parent.resolve()): ("/models", "ro"), str(state.parent.resolve()): ("/state", "rw")}


def test_the_plugin_builds_output_goes_to_stderr_not_stdout(tmp_path, monkeypatch, capfd):
    """Maven (3.9, even with -B -q) writes colour-reset codes to stdout; a benchmark run with --json on a fresh
    checkout builds the plugin first, and those bytes once prefixed its JSON line. The build's output must go to
    stderr. A stand-in `mvn` on PATH writes to stdout the way Maven does."""
    fake = tmp_path / "mvn"
    fake.write_text("#!/bin/sh\nprintf '\\033[0m\\033[0m'\necho 'BUILD SUCCESS'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monkeypatch.setattr(rl, "_stale", lambda test_class: True)
    rl.build_plugin()
    out, err = capfd.readouterr()
    assert "\033" not in out and "BUILD SUCCESS" not in out
    assert out.splitlines()[-1].startswith("building the plugin:")  # the benchmark's own progress line stays
    assert "\033[0m\033[0mBUILD SUCCESS" in err


# ------------------------------------------------------------------------------------------ the shaped cluster
from docker_cluster import cluster as docker_cluster  # noqa: E402  (docker_cluster/cluster.py)


def test_worker_egress_shaping_is_a_token_bucket_on_eth0_and_its_removal():
    cmd = docker_cluster.egress_shaping_command(10)
    assert cmd == ["tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", "10mbit", "burst", "16384",
                   "latency", "200ms"]
    # burst: 10 ms at the rate once that is above 16 KB (1 Gbit/s: 1.25 MB)
    assert docker_cluster.egress_shaping_command(1000)[10] == "1250000"
    assert docker_cluster.egress_shaping_command(2.5)[8] == "2.5mbit"
    assert docker_cluster.egress_shaping_command(None) == ["tc", "qdisc", "del", "dev", "eth0", "root"]
    for bad in (0, -5, float("nan"), float("inf"), "10"):
        try:
            docker_cluster.egress_shaping_command(bad)
        except ValueError as e:
            assert "Mbit/s" in str(e)
        else:
            raise AssertionError(f"{bad!r} accepted")
    # what `tc qdisc show` prints back is read as the rate in force
    assert docker_cluster.parse_tbf_rate_mbit("qdisc tbf 8001: root refcnt 3 rate 20Mbit burst 25000b lat 200ms") == 20
    assert docker_cluster.parse_tbf_rate_mbit("qdisc tbf 8001: root refcnt 3 rate 1Gbit burst 1250000b") == 1000
    assert docker_cluster.parse_tbf_rate_mbit("qdisc tbf 8001: root rate 500Kbit burst 16Kb") == 0.5
    assert docker_cluster.parse_tbf_rate_mbit("qdisc noqueue 0: root refcnt 2") is None


def test_the_cluster_cli_takes_a_worker_egress_rate_and_rejects_a_bad_one(capsys):
    assert docker_cluster.main(["up", "--worker-egress-mbit", "-1", "--name", "never-started"]) == 1
    assert "Mbit/s" in capsys.readouterr().err
    try:
        docker_cluster.main(["shape"])  # a rate or --off is required
    except SystemExit as e:
        assert e.code == 2
    else:
        raise AssertionError("shape without a rate accepted")


def test_sizes_replication_and_egress_shape_the_input_and_the_emulators_prediction():
    assert rl.size_bytes("wordcount", "tiny", 8) == 32_000
    assert rl.size_bytes("wordcount", "8mb", 8) == 8 * 8 * rl.MB
    assert rl.size_bytes("terasort", "1mb", 4) == 4 * rl.MB // 100  # TeraSort's amount is rows of 100 bytes
    for bad in ("huge", "8gb", "mb"):
        try:
            rl.size_bytes("sort", bad, 8)
        except ValueError as e:
            assert "<N>mb" in str(e)
        else:
            raise AssertionError(f"{bad!r} accepted")
    plain = rl.emulator_params("wordcount", 8, 0.5, 2, 3.0, 500)
    assert plain["replication"] == 2 and "remote_read_mb_s" not in plain
    shaped = rl.emulator_params("wordcount", 8, 0.5, 2, 3.0, 500, replication=1, egress_mbit=10,
                                block_bytes=8 * rl.MB)
    assert shaped["replication"] == 1
    # 10 Mbit/s = 1.19 MB/s for an 8 MB block; the emulator's 32 MB block reads 4x as fast, the same seconds
    assert abs(shaped["remote_read_mb_s"] - 10e6 / 8 / rl.MB * 4) < 1e-3
    with pytest.raises(SystemExit):
        rl.main(["--cluster", "mini", "--worker-egress-mbit", "10"])
    with pytest.raises(SystemExit):
        rl.main(["--cluster", "docker", "--replication", "5"])
    with pytest.raises(SystemExit):
        rl.main(["--cluster", "docker", "--sizes", "big"])


def test_the_emulator_charges_remote_reads_at_the_shaped_rate_and_local_ones_not():
    from emulator.drivers import InProcessDriver
    from emulator.scenario import get_scenario
    from emulator.yarn.workloads import APPS, map_runtime_s
    from policy_engine.policy import create

    app, block = APPS["wordcount"], 32 * rl.MB
    free = map_runtime_s(app, block, [0, 1, 2, 3, 4])
    capped = map_runtime_s(app, block, [0, 1, 2, 3, 4], remote_read_mb_s=2.0)
    assert np.allclose(free[:2], capped[:2])  # cache-local and disk-local: unchanged
    assert np.allclose(capped[2:] - free[2:], [32 / 2.0 - 32 / r for r in (400.0, 100.0, 60.0)])
    params = rl.emulator_params("wordcount", 8, 0.0, 2, 3.0, 500, replication=1, egress_mbit=10,
                                block_bytes=8 * rl.MB)
    sc = get_scenario("locality-wordcount", **params)
    fifo = sc.run_episode(InProcessDriver(create("fifo")), seed=3)
    delay = sc.run_episode(InProcessDriver(create("delay")), seed=3)
    # replication 1 on 4 nodes: FIFO reads most blocks remotely and pays for it; Delay waits for the data
    assert fifo["local_task_rate"] < 0.6 < delay["local_task_rate"]
    assert fifo["job_time_s"] > delay["job_time_s"] + 2.0
    with pytest.raises(ValueError, match="remote_read_mb_s"):
        get_scenario("locality-wordcount", remote_read_mb_s=0)


def test_a_run_cut_short_is_reported_from_its_partial_json(tmp_path):
    run = {"local_task_rate": 0.5, "cache_locality": 0.0, "job_time_s": 100.0, "makespan_s": 120.0,
           "data_local_maps": 8, "rack_local_maps": 6, "off_switch_maps": 2, "load_average": 40.2,
           "plugin": {"engine_containers": 16, "native_containers": 4, "fallbacks": 5, "fallbacks_timeout": 4,
                      "fallbacks_error": 1},
           "engine_errors": {'{code="INVALID_ARGUMENT",rpc="schedule"}': 1}}
    doc = {"cluster": "docker", "runs": 3, "jobs": 2, "maps": 8, "cached_share": 0.5, "replication": 1,
           "worker_egress_mbit": 10.0, "seed": 1, "clqlmrs_model": None, "partial": True,
           "in_progress": {"wordcount-8mb": {"fifo": [run, {**run, "local_task_rate": 0.25, "job_time_s": 200.0}],
                                             "delay": []}}}
    path = tmp_path / "partial.json"
    path.write_text(rl.json.dumps(doc))
    text = rl.partial_report(path, episodes=1)
    row = next(line for line in text.splitlines() if line.startswith("| fifo"))
    assert "| 2 | 0.38 ± 0.12 [" in row and "| 150.0 ± 50.0 [" in row and "32 / 8, 10 (8, 2)" in row  # counters summed over runs
    assert "INVALID_ARGUMENT 2" in row and "| 16 / 12 / 4 |" in row and "| 40, 40 |" in row
    assert "| delay | 0 | not run" in text and "replication 1" in text and "10.0 Mbit/s" in text


def test_an_input_on_one_worker_is_written_again_until_the_workers_hold_within_one_block(monkeypatch):
    """spread_input against a lab whose NameNode places each rewritten block on a seeded random worker: the input
    the generator left on worker1 ends within one block per worker, and only rewrites of files on the fullest
    worker follow the first full rewrite."""
    hosts = ["worker1", "worker2", "worker3", "worker4"]
    files = [f"/in/part-{i}" for i in range(8)]

    class Lab(rl.DockerLab):
        def __init__(self):
            self.place = {f: "worker1" for f in files}  # the generator's maps all ran on worker1
            self.rng = np.random.default_rng(3)
            self.calls: list[list[str]] = []

        def nodeRacks(self):
            return '{"worker1": "/r1", "worker2": "/r1", "worker3": "/r2", "worker4": "/r2"}'

        def rewriteFromClient(self, fs, replication):
            assert replication == 1
            self.calls.append(list(fs))
            for f in fs:
                self.place[f] = hosts[int(self.rng.integers(4))]

    lab = Lab()
    monkeypatch.setattr(rl, "block_hosts", lambda _lab, f: [{"hosts": [lab.place[f]], "cached": []}])
    monkeypatch.setattr(rl, "log", lambda msg: None)
    counts = rl.spread_input(lab, files, 1)
    assert sum(counts.values()) == 8 and max(counts.values()) - min(counts.values()) <= 1
    assert lab.calls[0] == files and all(len(c) == 1 for c in lab.calls[1:])
    layout = {f: [{"hosts": [h]}] for f, h in zip(files, ["worker1"] * 5 + ["worker2"] * 3)}
    assert rl.file_to_respread(layout, hosts) == files[4]  # the last file on the fullest worker
    even = {f: [{"hosts": [h]}] for f, h in zip(files, hosts * 2)}
    assert rl.file_to_respread(even, hosts) is None


def test_shadow_mode_reads_the_engines_and_yarns_locality_mix_from_the_engines_metrics():
    """--mode shadow: the comparison comes from the engine's own yarnrl_shadow_* metrics (a real EngineMetrics
    registry fed by the ShadowRecorder, exposed as /metrics text), summed over runs and turned into shares."""
    from prometheus_client import generate_latest

    from policy_engine.engine import EngineMetrics
    from policy_engine.shadow import ShadowRecorder
    from policy_engine.types import Assignment, ContainerStarted, Locality, ScheduleDecision

    metrics = EngineMetrics()
    rec = ShadowRecorder(metrics)
    rec.decided("d1", None, ScheduleDecision([Assignment("a1", 2, Locality.NODE_LOCAL),
                                              Assignment("a2", 1, Locality.CACHE_LOCAL)]))
    rec.decided("d2", None, ScheduleDecision([]))  # the engine would have waited on this heartbeat
    rec.observe(ContainerStarted(decision_id="d1", ask_id="a1", locality=Locality.NODE_LOCAL))
    rec.observe(ContainerStarted(decision_id="d2", ask_id="a3", locality=Locality.OFF_SWITCH))
    rec.observe(ContainerStarted(decision_id="", ask_id="a4", locality=Locality.OFF_SWITCH))  # not shadowed
    mix = rl.shadow_mix(generate_latest(metrics.registry).decode())
    assert mix == {"decisions": 2, "engine": {"node_local": 2, "cache_local": 1},
                   "yarn": {"node_local": 1, "off_switch": 1}, "placements": {"agree": 1, "differ": 1}}
    both = rl.add_counts(mix, mix)
    assert both["decisions"] == 4 and both["engine"] == {"node_local": 4, "cache_local": 2}
    assert rl.mix_shares(both["engine"]) == {"total": 6, "cache_local": 0.333, "node_local": 0.667}
    assert rl.mix_shares({}) == {"total": 0}


def test_shadow_mode_needs_the_container_cluster(capsys):
    with pytest.raises(SystemExit):
        rl.main(["--mode", "shadow"])
    assert "--mode shadow runs on the container cluster: it needs --cluster docker" in capsys.readouterr().err


# ------------------------------------------------------------------- cache locality that costs something (issue 27)
def test_worker_disk_read_throttle_is_dockers_device_read_bps_in_mb_per_second():
    assert docker_cluster.disk_read_throttle(2, "/dev/vda") == [{"Path": "/dev/vda", "Rate": 2 * rl.MB}]
    assert docker_cluster.disk_read_throttle(0.5, "/dev/sdb") == [{"Path": "/dev/sdb", "Rate": rl.MB // 2}]
    for bad in (0, -1, float("nan"), float("inf"), "2"):
        with pytest.raises(ValueError, match="MB/s"):
            docker_cluster.disk_read_throttle(bad, "/dev/vda")
    for bad in (-1, 1.5, "8"):
        with pytest.raises(ValueError, match="whole number of MB"):
            docker_cluster.check_dn_cache_mb(bad)
    # what the kernel applies, read back from the worker's cgroup: v1 read_bps_device, v2 io.max
    assert docker_cluster.parse_read_bps("254:0 2097152\n8:0 1048576\n") == {"254:0": 2 * rl.MB, "8:0": rl.MB}
    assert docker_cluster.parse_read_bps("254:0 rbps=1048576 wbps=max riops=max wiops=max\n") == {"254:0": rl.MB}
    assert docker_cluster.parse_read_bps("254:0 rbps=max wbps=4096 riops=max wiops=max\n") == {}
    assert docker_cluster.parse_read_bps("") == {}


def _unconnected_cluster(**spec) -> "docker_cluster.Cluster":
    """A Cluster whose start-up options can be read without a Docker engine (no client, a fixed subnet)."""
    cl = object.__new__(docker_cluster.Cluster)
    cl.spec, cl.client, cl.subnet_prefix = docker_cluster.ClusterSpec(**spec), None, "172.29.99"
    return cl


def test_the_disk_throttle_and_cache_budget_reach_the_workers_and_their_datanodes():
    plain = _unconnected_cluster()
    env = plain._env("worker1")
    # nothing changes by default: the 8 MB cache of before, no drop-behind, no throttle
    assert env["YARNRL_DN_CACHE_BYTES"] == str(8 * rl.MB) and env["YARNRL_DN_DROP_BEHIND_READS"] == "false"
    assert plain._worker_host_config() == {}
    throttled = _unconnected_cluster(worker_disk_read_mbps=2, worker_disk_device="/dev/vdb", dn_cache_mb=64)
    env = throttled._env("worker2")
    assert env["YARNRL_DN_CACHE_BYTES"] == str(64 * rl.MB) and env["YARNRL_DN_DROP_BEHIND_READS"] == "true"
    assert throttled._worker_host_config() == {"device_read_bps": [{"Path": "/dev/vdb", "Rate": 2 * rl.MB}]}
    # the image's templates and entry point use exactly these variables
    conf = (ROOT / "docker" / "hadoop" / "conf" / "hdfs-site.xml.in").read_text()
    assert "<value>${YARNRL_DN_CACHE_BYTES}</value>" in conf
    assert ("<name>dfs.datanode.drop.cache.behind.reads</name><value>${YARNRL_DN_DROP_BEHIND_READS}</value>"
            in conf)
    assert "<name>dfs.datanode.transferTo.allowed</name><value>${YARNRL_DN_TRANSFER_TO}</value>" in conf
    import xml.dom.minidom

    for template in (ROOT / "docker" / "hadoop" / "conf").glob("*.xml.in"):  # a stray "--" in a comment kills a daemon
        xml.dom.minidom.parseString(template.read_text())
    daemon = (ROOT / "docker" / "hadoop" / "bin" / "yarnrl-daemon").read_text()
    assert "YARNRL_DN_FADVISE=$YARNRL_DN_DROP_BEHIND_READS" in daemon
    assert "--add-modules jdk.incubator.foreign" in daemon and "--add-opens java.base/java.io=ALL-UNNAMED" in daemon


def test_the_cluster_cli_rejects_a_bad_disk_rate_or_cache_before_booting(capsys):
    assert docker_cluster.main(["up", "--worker-disk-read-mbps", "0", "--name", "never-started"]) == 1
    assert "MB/s" in capsys.readouterr().err
    assert docker_cluster.main(["up", "--dn-cache-mb", "-8", "--name", "never-started"]) == 1
    assert "whole number of MB" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        docker_cluster.main(["throttle"])  # a rate or --off is required
    assert e.value.code == 2


def test_real_locality_takes_the_disk_throttle_and_cache_budget_for_the_container_cluster_only(capsys, tmp_path):
    for argv, said in ((["--cluster", "mini", "--worker-disk-read-mbps", "2"], "need --cluster docker"),
                       (["--cluster", "mini", "--dn-cache-mb", "64"], "need --cluster docker"),
                       (["--cluster", "docker", "--worker-disk-read-mbps", "-2"], "positive number"),
                       (["--cluster", "docker", "--dn-cache-mb", "-1"], "0 or more")):
        with pytest.raises(SystemExit):
            rl.main(argv)
        assert said in capsys.readouterr().err
    # a partial report takes the cache budget the run recorded (files of 16 MB fit 64 MB, not the 8 MB of before)
    run = {"local_task_rate": 1.0, "cache_locality": 0.5, "job_time_s": 60.0, "makespan_s": 70.0,
           "data_local_maps": 8, "rack_local_maps": 0, "off_switch_maps": 0, "plugin": {}, "engine_errors": {},
           "load_average": 3.0}
    doc = {"cluster": "docker", "runs": 1, "jobs": 2, "maps": 8, "cached_share": 0.5, "replication": 1,
           "worker_egress_mbit": 5.0, "seed": 1, "clqlmrs_model": None, "partial": True,
           "block_bytes": {"wordcount-16mb": 16 * rl.MB},
           "in_progress": {"wordcount-16mb": {"fifo": [run]}}}
    calls = []
    real = rl.emulator_params

    def spy(workload, maps, cached_share, *a, **k):
        calls.append(cached_share)
        return real(workload, maps, cached_share, *a, **k)

    rl.emulator_params = spy
    try:
        for budget, share in ((None, 0.0), (64 * rl.MB, 0.5)):
            path = tmp_path / f"partial-{budget}.json"
            path.write_text(rl.json.dumps({**doc, **({"dn_cache_bytes": budget} if budget else {})}))
            rl.partial_report(path, episodes=1)
            assert calls[-1] == share
    finally:
        rl.emulator_params = real
