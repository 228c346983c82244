"""`emulator train --algo clqlmrs --from-log DIR`: SARSA over a decision log's transitions, compared with the
online-learned table."""

from __future__ import annotations

import json

import pytest

import emulator.cli
from algorithms.clqlmrs.train_from_log import logged_steps
from algorithms.clqlmrs.encoding import PLACE, WAIT
from algorithms.clqlmrs.policy import ClqlmrsPolicy
from policy_engine.command import CommandExit
from policy_engine.decision_log import decode_observation, read_decisions

SCENARIO = ["--scenario", "locality-wordcount", "--param", "jobs=3", "--param", "maps=8", "--no-progress"]


def last_json(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("fromlog")
    log = root / "log"
    assert emulator.cli.main(["compare", *SCENARIO, "--policies", "delay,fifo", "--episodes", "3",
                              "--decision-log", str(log), "--json"]) == 0
    assert emulator.cli.main(["train", *SCENARIO, "--algo", "clqlmrs", "--episodes", "2", "--out",
                              str(root / "online"), "--set", "eval_episodes=1"]) == 0
    return root, log


def test_logged_steps_follow_the_logged_decision(runs):
    _, log = runs
    policy = ClqlmrsPolicy(learn=False)
    rows = [r for r in read_decisions(log).to_pylist() if r["policy"] == "delay"]
    places = waits = 0
    for row in rows:
        assigned = {}
        for a in row["assignments"]:
            assigned[a["ask_id"]] = assigned.get(a["ask_id"], 0) + a["count"]
        steps = logged_steps(policy, decode_observation(row), assigned)
        maps = {a["ask_id"]: n for a_id, n in assigned.items() for a in row["asks"]
                if a["ask_id"] == a_id and a_id.endswith("/map")}
        assert sum(s.action == PLACE for s in steps) == sum(maps.values())
        places += sum(s.action == PLACE for s in steps)
        waits += sum(s.action == WAIT for s in steps)
    assert places > 0 and waits > 0  # Delay placed maps and also let heartbeats pass


def test_from_log_learns_a_table_and_compares_it_with_the_online_one(runs, tmp_path, capsys):
    root, log = runs
    argv = ["train", *SCENARIO, "--algo", "clqlmrs", "--from-log", str(log), "--episodes", "2", "--set",
            "eval_episodes=1", "--compare-model", str(root / "online" / "clqlmrs.safetensors")]
    assert emulator.cli.main([*argv, "--out", str(tmp_path / "a")]) == 0
    r = last_json(capsys)
    assert r["updates"] > 0 and r["transitions_per_pass"] > 0
    assert 0 <= r["eval"]["local_task_rate"] <= 1
    c = r["compared_with"]
    assert c["states_both_visited"] > 0 and 0.0 <= c["greedy_agreement"] <= 1.0
    assert 0 <= c["eval"]["local_task_rate"] <= 1
    learned = ClqlmrsPolicy(r["model"], learn=False)
    visited = learned.table.visits.sum(axis=1) > 0
    assert visited.any() and (learned.table.q[~visited] == 0).all() and (learned.table.q[visited] != 0).any()
    # reproducible: the same log and seed give the same table
    assert emulator.cli.main([*argv, "--out", str(tmp_path / "b")]) == 0
    assert last_json(capsys)["checksum"] == r["checksum"]


def test_from_log_refuses_what_it_cannot_do(runs, tmp_path):
    _, log = runs
    base = ["train", *SCENARIO, "--out", str(tmp_path / "x")]
    for argv, code, message in (
            (["train", "--scenario", "multicluster-uniform", "--algo", "rl-fc", "--out", str(tmp_path / "x"),
              "--from-log", str(log)], 2, "--from-log learns CLQLMRS"),
            ([*base, "--algo", "clqlmrs", "--from-log", str(tmp_path / "none")], 2, "is not a directory"),
            ([*base, "--algo", "clqlmrs", "--from-log", str(tmp_path)], 1, "no decisions-"),
            ([*base, "--algo", "clqlmrs", "--from-log", str(log), "--set", "mode=paper"], 2, "mode=abstract"),
            ([*base, "--algo", "clqlmrs", "--compare-model", str(log)], 2, "needs --from-log")):
        with pytest.raises(CommandExit) as e:
            emulator.cli.main(argv)
        assert e.value.code == code and message in str(e.value), str(e.value)
