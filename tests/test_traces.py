"""Trace adapters (scenario family `trace`): SLS JSON, SYNTH and Rumen example traces run on the node-heartbeat
emulator; bad files end in one line naming the field."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import emulator.cli
from emulator.drivers import InProcessDriver
from emulator.scenario import get_scenario
from emulator.yarn.traces import TraceError, read_nodes, read_trace
from policy_engine.command import DEBUG_ENV, CommandExit
from policy_engine.features.locality import ReadLocality
from policy_engine.policy import create
from policy_engine.types import ContainerFinished, ContainerStarted, Locality

DATA = Path(__file__).parent / "data"
SLS, SYNTH, RUMEN, NODES = (DATA / n for n in ("sls-small.json", "synth-small.json", "rumen-small.json",
                                               "sls-nodes.json"))


def test_sls_trace_is_read_with_hosts_racks_and_durations():
    t = read_trace(SLS, "sls")
    assert [j.job_id for j in t.jobs] == ["job_1", "job_2", "job_3", "job_4"]
    assert [j.submit_ms for j in t.jobs] == [0, 4000, 8000, 12000]
    assert all(len(j.maps) == 6 and len(j.reduces) == 2 for j in t.jobs)
    raw = json.JSONDecoder().raw_decode(SLS.read_text())[0]["job.tasks"][0]
    assert t.jobs[0].maps[0].duration_ms == raw["container.end.ms"] - raw["container.start.ms"]
    assert t.jobs[0].maps[0].hosts == (raw["container.host"].rsplit("/", 1)[1],)
    racks = {n.host: n.rack for n in t.nodes}
    assert racks["node1"] == "/rack1" and racks["node2"] == "/rack2"


def test_rumen_trace_takes_preferred_locations_and_the_successful_attempt():
    t = read_trace(RUMEN, "rumen")
    assert len(t.jobs) == 3 and all(len(j.maps) == 5 and len(j.reduces) == 1 for j in t.jobs)
    raw = json.JSONDecoder().raw_decode(RUMEN.read_text())[0]["mapTasks"][0]
    assert t.jobs[0].maps[0].hosts == tuple(loc["layers"][1] for loc in raw["preferredLocations"])
    a = raw["attempts"][0]
    assert t.jobs[0].maps[0].duration_ms == a["finishTime"] - a["startTime"]


def test_synth_is_seeded_and_follows_its_description():
    a, b, c = read_trace(SYNTH, "synth", 0), read_trace(SYNTH, "synth", 0), read_trace(SYNTH, "synth", 1)
    shape = lambda t: [(j.submit_ms, len(j.maps), len(j.reduces), j.user) for j in t.jobs]  # noqa: E731
    assert shape(a) == shape(b) and shape(a) != shape(c)
    assert len(a.jobs) == 6 and len(a.nodes) == 6
    assert {n.rack for n in a.nodes} == {"/rack1", "/rack2"}
    assert all(0 <= j.submit_ms <= 60_000 for j in a.jobs)
    assert {j.user for j in a.jobs} <= {"alice", "bob"}


def test_nodes_file_sets_racks_and_memory():
    nodes = read_nodes(NODES)
    assert [(n.host, n.rack, n.memory_mb) for n in nodes][:2] == [("node1", "/rack1", 0), ("node3", "/rack1", 0)]
    assert {n.memory_mb for n in nodes if n.rack == "/rack2"} == {6144}


@pytest.mark.parametrize("fmt,path", [("sls", SLS), ("synth", SYNTH), ("rumen", RUMEN)])
def test_every_trace_runs_to_completion_with_its_durations(fmt, path):
    scenario = get_scenario("trace", path=str(path), format=fmt, nodes=str(NODES) if fmt == "sls" else None)
    sim = scenario.simulation(0)
    trace = scenario.trace(0)
    driver = InProcessDriver(create("delay"))
    events = []
    while sim.advance():
        events += sim.take_events()
        sim.apply(driver.schedule(sim.observe()))
    events += sim.take_events()
    assert sim.done
    assert sim.map_states.sum() == sum(len(j.maps) for j in trace.jobs)
    assert Counter(e.kind for e in events)["job_finished"] == len(trace.jobs)
    # A map read disk-local runs exactly its trace duration; reduces run theirs.
    durations = Counter(t.duration_ms for j in trace.jobs for t in j.maps)
    locality = {e.container_id: e.locality for e in events if isinstance(e, ContainerStarted)}
    local = [e.runtime_ms for e in events if isinstance(e, ContainerFinished)
             and locality[e.container_id] == Locality.NODE_LOCAL]
    assert local and not Counter(local) - durations
    reduces = Counter(t.duration_ms for j in trace.jobs for t in j.reduces)
    ran = Counter(e.runtime_ms for e in events if isinstance(e, ContainerFinished)
                  and locality[e.container_id] == Locality.UNSPECIFIED)
    assert ran == reduces
    m = sim.metrics()
    assert 0 < m["local_task_rate"] <= 1 and m["makespan_s"] > 0
    assert int(ReadLocality.DL) == 1  # the state the trace's durations are taken at


def test_done_when_command_prints_metrics():
    out = subprocess.run([sys.executable, "-m", "emulator.cli", "run", "--scenario", "trace", "--param",
                          "format=synth", "--param", f"path={SYNTH}", "--policy", "delay", "--json", "--no-progress"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    metrics = result["policies"]["delay"]
    assert set(metrics) >= {"local_task_rate", "job_time_s", "makespan_s"}
    assert result["params"]["jobs"] == 6 and result["params"]["format"] == "synth"


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _sls_job(**task_over):
    task = {"container.host": "/rack1/node1", "container.start.ms": 0, "container.end.ms": 1000,
            "container.type": "map"}
    task.update(task_over)
    task = {k: v for k, v in task.items() if v is not None}
    return {"job.id": "job_9", "job.start.ms": 0, "job.tasks": [task]}


BAD = [
    ("sls", json.dumps(_sls_job(**{"container.end.ms": None})), "job 0 \\(job_9\\) task 0: field 'container.end.ms' "
                                                                "missing"),
    ("sls", json.dumps(_sls_job(**{"container.end.ms": -5})), "field 'container.end.ms' \\(-5\\) is before"),
    ("sls", json.dumps(_sls_job(**{"container.type": "shuffle"})), "field 'container.type' is 'shuffle'"),
    ("sls", json.dumps({"job.id": "j", "job.tasks": []}), "field 'job.start.ms' missing"),
    ("sls", json.dumps(_sls_job(**{"container.start.ms": "soon"})), "field 'container.start.ms' is not a number"),
    ("sls", "{ not json", "not JSON at line 1"),
    ("sls", "", "empty"),
    ("rumen", json.dumps({"submitTime": 0, "mapTasks": []}), "field 'jobID' missing"),
    ("rumen", json.dumps({"jobID": "j", "submitTime": 0, "mapTasks": [{"startTime": 0, "finishTime": 5,
                                                                        "preferredLocations": [{"layers": []}]}]}),
     "preferredLocations\\[0\\]: field 'layers'"),
    ("synth", json.dumps({"workloads": []}), "field 'num_jobs' missing"),
    ("synth", json.dumps({"num_jobs": 2, "workloads": [{"job_classes": [{"tasks": [{"type": "map", "count": {}}]}]}]}),
     "tasks\\[0\\] count: field 'val' missing"),
    ("synth", json.dumps({"num_jobs": 2, "workloads": [{"job_classes": [{"tasks": [
        {"type": "map", "count": {"val": 2}, "time": {"val": 1}}]}], "time_distribution": [
        {"time": 0, "weight": 0}]}]}), "field 'time_distribution' has no positive weight"),
]


@pytest.mark.parametrize("fmt,text,message", BAD, ids=[f"{f}-{i}" for i, (f, _, _) in enumerate(BAD)])
def test_bad_traces_name_the_field(tmp_path, fmt, text, message):
    path = _write(tmp_path, "bad.json", text)
    with pytest.raises(TraceError, match=message):
        read_trace(path, fmt, 0)


def test_bad_nodes_files_and_hosts_outside_them(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(DEBUG_ENV, raising=False)  # the one-line error, not the traceback
    dup = _write(tmp_path, "dup.json", json.dumps({"rack": "r1", "nodes": [{"node": "a"}, {"node": "a"}]}))
    with pytest.raises(TraceError, match="field 'node' names 'a' twice"):
        read_nodes(dup)
    few = _write(tmp_path, "few.json", json.dumps({"rack": "r1", "nodes": [{"node": "node1"}, {"node": "node2"}]}))
    with pytest.raises(TraceError, match="names host 'node\\d', which the nodes file"):
        read_trace(SLS, "sls", nodes=few)
    # through the CLI: one line, exit 1, naming the file and field
    bad = _write(tmp_path, "bad.json", json.dumps(_sls_job(**{"container.end.ms": None})))
    run = ["run", "--scenario", "trace", "--policy", "fifo", "--no-progress", "--param"]
    for argv, code, message in (
            ([*run, "format=sls", "--param", f"path={bad}"], 1, "bad.json: job 0 \\(job_9\\) task 0: field "
                                                               "'container.end.ms' missing"),
            ([*run, "format=csv", "--param", f"path={bad}"], 2, "format must be one of sls, synth, rumen"),
            ([*run, "format=sls"], 2, "needs --param path=FILE"),
            ([*run, "format=sls", "--param", f"path={SLS}", "--param", f"nodes={tmp_path}/none.json"], 1,
             "nodes file .*none.json: cannot read")):
        with pytest.raises(CommandExit) as e:
            emulator.cli.main(argv)
        assert e.value.code == code and re.search(message, str(e.value)) and "\n" not in str(e.value)


# ---------------------------------------------------------------- multi-cluster job tables

JOBS_CSV = DATA / "cluster-jobs.csv"


def test_job_table_routes_every_job_and_parquet_equals_csv(tmp_path):
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from emulator.multicluster.sim import MultiClusterSim  # noqa: F401  (the family's simulator)
    from policy_engine.types import JobFinished

    parquet = tmp_path / "jobs.parquet"
    pq.write_table(pacsv.read_csv(JOBS_CSV), parquet)
    results = {}
    for path in (JOBS_CSV, parquet):
        scenario = get_scenario("multicluster-trace", path=str(path))
        assert scenario.n_jobs == 40
        finished = []

        class Recorder(InProcessDriver):
            def report(self, events):
                finished.extend(e for e in events if isinstance(e, JobFinished))
                return super().report(events)

        with Recorder(create("sf-e")) as driver:
            results[path.suffix] = scenario.run_episode(driver, 0)
        assert len({e.job_id for e in finished}) == 40  # every job of the table ran to its end
    assert results[".csv"] == results[".parquet"]
    with InProcessDriver(create("random")) as driver:
        rnd = get_scenario("multicluster-trace", path=str(JOBS_CSV)).run_episode(driver, 0)
    assert rnd["tmdl"] >= results[".csv"]["tmdl"]


@pytest.mark.parametrize("text,message", [
    ("submit_time,executors\n1,5\n", "column 'duration' missing"),
    ("submit_time,executors,duration\n1,-5,3\n", "row 0: column 'executors' is -5, not a non-negative"),
    ("submit_time,executors,duration\n1,5,0\n", "row 0: column 'duration' must be at least 1"),
    ("submit_time,executors,duration,category\n1,5,3,batch\n", "row 0: column 'category' is 'batch'"),
    ("submit_time,executors,duration\n1,5000,3\n", "requests 5000 executors, more than the largest cluster"),
])
def test_bad_job_tables_name_the_column(tmp_path, text, message):
    path = _write(tmp_path, "jobs.csv", text)
    with pytest.raises((TraceError, ValueError), match=message):
        get_scenario("multicluster-trace", path=path)
