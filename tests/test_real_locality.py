"""benchmarks/real_locality.py's container-cluster side without a cluster: what a `hadoop jar` run in the client
container yields (map counters, the job's times), and how an engine's options reach the engine container. The runs
themselves need Docker and minutes of a real cluster (`real_locality.py --cluster docker`)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

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

    class Cluster:  # records what DockerEngine asks docker/cluster.py for
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
