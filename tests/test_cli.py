"""The command lines as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=timeout)


def test_policies_lists_one_line_each():
    r = run("policy_engine.cli", "policies")
    assert r.returncode == 0
    lines = r.stdout.strip().splitlines()
    assert any(l.startswith("fifo ") for l in lines) and any(l.startswith("delay ") for l in lines)
    j = json.loads(run("policy_engine.cli", "policies", "--json").stdout.strip().splitlines()[-1])
    assert {"fifo", "delay"} <= {p["name"] for p in j["policies"]}


def test_demo_drives_real_engines_and_delay_beats_fifo_on_locality():
    r = run("policy_engine.cli", "demo")
    assert r.returncode == 0, r.stderr
    assert "== policy fifo" in r.stdout and "== policy delay" in r.stdout
    summary = json.loads(r.stdout.strip().splitlines()[-1])["policies"]
    assert summary["fifo"]["containers"] == summary["delay"]["containers"] == 6
    assert summary["delay"]["node_local"] > summary["fifo"]["node_local"]


def test_info_against_an_engine_that_is_not_there():
    r = run("policy_engine.cli", "info", "--target", "127.0.0.1:1", "--timeout", "0.5")
    assert r.returncode != 0 and ("UNAVAILABLE" in r.stderr or "DEADLINE_EXCEEDED" in r.stderr)


def test_help_explains_commands():
    r = run("policy_engine.cli", "serve", "--help")
    assert r.returncode == 0 and "--metrics-port" in r.stdout and "loopback" in r.stdout
    r = run("emulator.cli", "--help")
    assert r.returncode == 0 and "compare" in r.stdout and "train" in r.stdout


def test_emulator_unknown_scenario_lists_valid_ones():
    r = run("emulator.cli", "run", "--scenario", "no-such", "--policy", "fifo")
    assert r.returncode != 0 and "unknown scenario 'no-such'; valid scenarios:" in r.stderr


def test_compare_takes_a_model_per_policy_by_its_dashed_name(tmp_path):
    r = run("emulator.cli", "compare", "--scenario", "multicluster-uniform", "--policies", "sf-e,rl-fc",
            "--model", "rl-fc=models/rl-fc-uniform.safetensors", "--against", "sf-e", "--episodes", "1",
            "--param", "jobs=60", "--json", "--no-progress")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(result["policies"]) == {"sf-e", "rl-fc"} and result["against"] == "sf-e"
    r = run("emulator.cli", "compare", "--scenario", "multicluster-uniform", "--policies", "sf-e",
            "--model", "rl-fc=x.safetensors", "--episodes", "1")
    assert r.returncode != 0 and "not among --policies" in r.stderr
