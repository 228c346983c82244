"""`emulator replay` on decision logs recorded in-process and by a real `policy-engine serve` over gRPC."""

from __future__ import annotations

import json

import pyarrow.compute as pc
import pytest

import emulator.cli
from policy_engine.decision_log import read_decisions, read_events

RUN = ["run", "--scenario", "locality-wordcount", "--param", "jobs=3", "--param", "maps=8", "--episodes", "1",
       "--no-progress", "--json"]


def last_json(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """The same seeded episode under Delay, logged in-process and by a spawned `policy-engine serve`."""
    local = tmp_path_factory.mktemp("local")
    remote = tmp_path_factory.mktemp("remote")
    assert emulator.cli.main([*RUN, "--policy", "delay", "--decision-log", str(local)]) == 0
    assert emulator.cli.main([*RUN, "--policy", "delay", "--remote", "spawn", "--decision-log", str(remote),
                              "--log-rotate-mb", "0.01"]) == 0
    return local, remote


def assignments(directory):
    t = read_decisions(directory)
    return [(r["request_id"], [(a["ask_id"], a["count"], a["locality"]) for a in r["assignments"]])
            for r in t.select(["request_id", "assignments"]).to_pylist()]


def test_served_and_in_process_logs_hold_the_same_decisions(logs):
    local, remote = logs
    assert assignments(local) == assignments(remote)
    assert len(assignments(local)) > 5
    # the served engine's events are joined to its decisions as well
    ev = read_events(remote)
    started = ev.filter(pc.equal(ev["kind"], "container_started"))
    ids = set(read_decisions(remote).column("decision_id").to_pylist())
    assert started.num_rows > 0 and set(started.column("decision_id").to_pylist()) <= ids


@pytest.mark.parametrize("which", ["local", "remote"])
def test_replay_agrees_with_the_logged_policy_and_counts_locality(logs, which, capsys):
    directory = logs[0] if which == "local" else logs[1]
    assert emulator.cli.main(["replay", "--log", str(directory), "--policies", "fifo,delay,clqlmrs",
                              "--no-progress", "--json"]) == 0
    r = last_json(capsys)
    t = read_decisions(directory)
    assert r["decisions"] == t.num_rows and r["logged_policies"] == ["delay"]
    assert r["agreement"]["logged~delay"] == 1.0  # the same policy on the same observations decides the same
    assert r["agreement"]["logged~fifo"] < 1.0   # FIFO does not wait for locality: it differs somewhere
    assert r["differ_examples"]["logged~fifo"]
    logged_total = sum(a["count"] for row in t.column("assignments").to_pylist() for a in row)
    assert r["containers"]["logged"] == logged_total == sum(r["locality"]["logged"].values())
    assert r["locality"]["delay"] == r["locality"]["logged"]
    assert r["containers"]["fifo"] >= r["containers"]["delay"]  # no waiting: never fewer placements


def test_replay_table(logs, capsys):
    assert emulator.cli.main(["replay", "--log", str(logs[0]), "--policies", "fifo,delay", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "agreement" in out and "containers by locality level" in out and "node_local" in out


def test_route_log_is_written_and_replayed(tmp_path, capsys):
    log = tmp_path / "route"
    assert emulator.cli.main(["run", "--scenario", "multicluster-uniform", "--param", "jobs=15", "--episodes", "1",
                              "--policy", "sf-e", "--decision-log", str(log), "--no-progress", "--json"]) == 0
    capsys.readouterr()
    t = read_decisions(log)
    assert t.num_rows == 15 and set(t.column("rpc").to_pylist()) == {"route"}
    row = t.to_pylist()[0]
    assert row["jobs"] and row["clusters"] and row["route_cluster_id"] in {c["cluster_id"] for c in row["clusters"]}
    assert emulator.cli.main(["replay", "--log", str(log), "--policies", "sf-e,lf-e,random", "--no-progress",
                              "--json"]) == 0
    r = last_json(capsys)
    assert r["rpc"] == ["route"] and r["agreement"]["logged~sf-e"] == 1.0
    assert r["agreement"]["logged~random"] < 1.0 and r["locality"] == {}
