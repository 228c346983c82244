"""`emulator train --algo clqlmrs`: artifact with metadata, learning curve, checkpoints and an exact --resume."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from emulator.scenario import get_scenario
from emulator.training import train
from policy_engine.artifact import ArtifactError, load_artifact
from policy_engine.policy import create

PARAMS = {"maps": 10, "jobs": 1, "interarrival_s": 0, "cache_gb": 4}
OPTS = {"eval_every": 3, "eval_episodes": 1, "epsilon_decay": 0.5, "decay_every": 1}


def test_cli_trains_and_writes_model_curve_and_checkpoint(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "emulator.cli", "train", "--scenario", "locality-sort", "--algo", "clqlmrs",
         "--episodes", "6", "--seed", "3", "--out", str(out), "--no-progress",
         *[arg for k, v in PARAMS.items() for arg in ("--param", f"{k}={v}")],
         *[arg for k, v in OPTS.items() for arg in ("--set", f"{k}={v}")]],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["algo"] == "clqlmrs" and summary["episodes"] == 6 and summary["updates"] > 0
    assert summary["final_epsilon"] == pytest.approx(0.5 ** 6)
    assert 0.0 <= summary["eval"]["local_task_rate"] <= 1.0
    for name in ("clqlmrs.safetensors", "checkpoint.safetensors", "learning_curve.png", "history.json"):
        assert (out / name).stat().st_size > 0
    assert (out / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    tensors, meta = load_artifact(out / "clqlmrs.safetensors", policy="clqlmrs")
    assert meta["seed"] == 3 and meta["config"]["epsilon_decay"] == 0.5 and meta["code_version"]
    assert meta["scenario"] == "locality-sort" and meta["scenario_params"]["maps"] == 10
    assert set(meta["metrics"]) >= {"local_task_rate", "cache_locality", "job_time_s"}
    policy = create("clqlmrs", model=str(out / "clqlmrs.safetensors"), learn=False)
    assert np.array_equal(policy.table.q, tensors["q"]) and policy.table.q.any()
    history = json.loads((out / "history.json").read_text())
    assert [h["episode"] for h in history] == [1, 2, 3, 4, 5, 6]
    assert all("eval_local_task_rate" in h for h in history if h["episode"] in (3, 6))


def test_resume_continues_exactly_where_it_stopped(tmp_path):
    sc = get_scenario("locality-sort", **PARAMS)
    straight = train("clqlmrs", sc, 6, 0, tmp_path / "a", progress=False, options=OPTS)
    train("clqlmrs", sc, 3, 0, tmp_path / "b", progress=False, options=OPTS)
    resumed = train("clqlmrs", sc, 6, 0, tmp_path / "b", resume=True, progress=False, options=OPTS)
    qa, _ = load_artifact(straight["model"], policy="clqlmrs")
    qb, _ = load_artifact(resumed["model"], policy="clqlmrs")
    assert np.array_equal(qa["q"], qb["q"]) and resumed["final_epsilon"] == straight["final_epsilon"]
    with pytest.raises(ArtifactError, match="other settings"):
        train("clqlmrs", sc, 6, 0, tmp_path / "b", resume=True, progress=False, options={**OPTS, "gamma": 0.9})
    with pytest.raises(ValueError, match="unknown clqlmrs option"):
        train("clqlmrs", sc, 6, 0, tmp_path / "c", progress=False, options={"alpah": 0.2})
