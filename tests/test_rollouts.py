"""Parallel rollouts (emulator.learners.rollouts): the round plan, the CLI's --workers / --ray, and the same model
from a Ray cluster as from the learner's own process."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

from emulator.learners.common import rounds


def test_rounds_cut_at_multiples_of_the_round_size():
    assert rounds(0, 12, 5) == [(1, 5), (6, 10), (11, 12)]
    # a run resumed after episode 7 (or extended from 12) plays the rounds a straight run plays
    assert rounds(7, 12, 5) == [(8, 10), (11, 12)]
    assert rounds(12, 20, 5) == [(13, 15), (16, 20)]
    assert rounds(3, 3, 5) == [] and rounds(0, 2, 1) == [(1, 1), (2, 2)]


def _train(out, *extra, algo="rl-fc"):
    from emulator.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["train", "--scenario", "multicluster-uniform", "--param", "jobs=40", "--algo", algo,
                     "--episodes", "4", "--seed", "5", "--out", str(out), "--no-progress",
                     "--set", "rollout_batch=2", "--set", "hidden=[16,8]", "--set", "train_samples=20",
                     "--set", "minibatch=10", "--set", "buffer_size=300", "--set", "eval_every=2",
                     "--set", "eval_episodes=2", "--set", "baselines=sf-e", *extra])
    assert code == 0
    return json.loads(buf.getvalue().strip().splitlines()[-1])


def test_workers_and_ray_are_refused_where_they_mean_nothing(tmp_path):
    from emulator.cli import main

    with pytest.raises(SystemExit, match="--workers must be at least 1"):
        main(["train", "--scenario", "multicluster-uniform", "--algo", "rl-fc", "--out", str(tmp_path / "a"),
              "--workers", "0"])
    with pytest.raises(SystemExit, match="in parallel for .*rl-fc.*not clqlmrs"):
        main(["train", "--scenario", "locality-wordcount", "--algo", "clqlmrs", "--out", str(tmp_path / "b"),
              "--workers", "2"])
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_local_ray_cluster_trains_the_model_one_process_trains(tmp_path):
    """`--ray local` starts a Ray instance with 2 CPUs for the run; its tasks play the episodes and the
    validation. The same seed gives the same weights, validation and training curve as --workers 1."""
    import ray

    from policy_engine.artifact import load_artifact

    one = _train(tmp_path / "one")
    on_ray = _train(tmp_path / "ray", "--ray", "local", "--workers", "2")
    assert not ray.is_initialized()   # the run stopped the instance it started
    assert on_ray["rollouts"] == {"workers": 2, "ray": "local"}
    a, _ = load_artifact(tmp_path / "one" / "model.safetensors")
    b, _ = load_artifact(tmp_path / "ray" / "model.safetensors")
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert on_ray["final"] == one["final"] and on_ray["baselines"] == one["baselines"]
    curves = [json.loads((tmp_path / d / "learning-curve.json").read_text())["episodes"] for d in ("one", "ray")]
    assert [(r["tmdl"], r["loss"]) for r in curves[0]] == [(r["tmdl"], r["loss"]) for r in curves[1]]
