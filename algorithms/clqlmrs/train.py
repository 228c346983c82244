"""`emulator train --algo clqlmrs`: offline SARSA on emulated heartbeats, with the learner that serves online.

The policy runs behind an in-process Engine exactly as behind `policy-engine serve`; the same ClqlmrsLearner
sees every decision and every Report the scenario sends, so a table trained here and one learned online mean the
same thing. One training episode is one scenario episode (seed + i); ε decays x`epsilon_decay` every
`decay_every` episodes (the paper: 1.0, 0.999, 10). Every `eval_every` episodes the greedy table (ε = 0, learning
off) is evaluated on `eval_episodes` fixed held-out seeds; a checkpoint is written then, and `--resume` continues
from it with an identical result (exploration draws are seeded by the observations).

Output in --out: clqlmrs.safetensors (the model: Q-table + config, seed, code version, metrics),
checkpoint.safetensors, history.json, learning_curve.png.

Options (--set KEY=VALUE): mode=abstract|paper, alpha, gamma, epsilon, epsilon_decay, decay_every, wait_cost,
max_wait, order, eval_every, eval_episodes, max_tasks, max_nodes.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from emulator.drivers import InProcessDriver
from emulator.learners import common
from emulator.scenario import Scenario
from emulator.training import register_algo
from policy_engine.artifact import ArtifactError
from algorithms.clqlmrs import PAPER_EPSILON, POLICY_NAME, ClqlmrsConfig, ClqlmrsModel
from algorithms.clqlmrs.policy import ClqlmrsPolicy
from policy_engine.policy import OptionError

DEFAULT_EPISODES = 200
EVAL_SEED_OFFSET = 1_000_000  # held-out seeds, never trained on
MODEL_FILE = "clqlmrs.safetensors"
_TABLE_KEYS = ("mode", "alpha", "gamma", "epsilon_decay", "decay_every", "wait_cost", "max_wait", "order",
               "max_tasks", "max_nodes")


# Training's own settings (the table's hyper-parameters and their defaults are ClqlmrsConfig's).
TRAIN_DEFAULTS = {"eval_every": 0, "eval_episodes": 3}
_TRAINED = ("mode", "alpha", "gamma", "epsilon", "epsilon_decay", "decay_every", "wait_cost", "max_wait", "order",
            "max_tasks", "max_nodes")


def _config(options: dict[str, Any]) -> dict[str, Any]:
    known = set(_TRAINED) | set(TRAIN_DEFAULTS)
    unknown = set(options) - known
    if unknown:
        raise OptionError(f"unknown clqlmrs option(s) {sorted(unknown)}; valid: {sorted(known)}")
    try:
        table = ClqlmrsConfig.parse(**{"epsilon": PAPER_EPSILON,
                                       **{k: v for k, v in options.items() if k in _TRAINED}})
    except (ValueError, TypeError) as e:  # an out-of-range or mistyped --set
        raise OptionError(f"clqlmrs options: {e}") from None
    return {**{k: getattr(table, k) for k in _TRAINED}, **TRAIN_DEFAULTS,
            **{k: options[k] for k in TRAIN_DEFAULTS if k in options}}


def evaluate(scenario: Scenario, policy: ClqlmrsPolicy, seeds: list[int]) -> dict[str, float]:
    """Mean metrics of the greedy, frozen copy of `policy` on `seeds`."""
    cfg = policy.config
    frozen_model = ClqlmrsModel(ClqlmrsConfig.parse(mode=cfg.mode, learn=False, wait_cost=cfg.wait_cost,
                                                    max_wait=cfg.max_wait, order=cfg.order, max_tasks=cfg.max_tasks,
                                                    max_nodes=cfg.max_nodes), policy.table.copy())
    frozen = ClqlmrsPolicy(frozen_model)
    with InProcessDriver(frozen) as driver:
        runs = [scenario.run_episode(driver, s) for s in seeds]
    return {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}


def train_clqlmrs(scenario: Scenario, episodes: int | None, seed: int, out: Path, resume: bool, progress: bool,
                  options: dict[str, Any]) -> dict[str, Any]:
    cfg = _config(options)
    episodes = DEFAULT_EPISODES if episodes is None else int(episodes)
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, not {episodes}")
    eval_every = int(cfg["eval_every"]) or max(1, episodes // 10)
    eval_seeds = [seed + EVAL_SEED_OFFSET + k for k in range(int(cfg["eval_episodes"]))]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    try:
        policy = ClqlmrsPolicy(learn=True, seed=seed, **{k: cfg[k] for k in _TRAINED})
    except (ValueError, TypeError) as e:  # an out-of-range --set
        raise OptionError(f"clqlmrs options: {e}") from None
    history: list[dict[str, Any]] = []
    start = 0
    if resume:
        ckpt = common.load_checkpoint(out, POLICY_NAME)
        if ckpt is not None:
            tensors, meta = ckpt
            saved = meta.get("config", {})
            changed = {k: (saved.get(k), cfg[k]) for k in _TABLE_KEYS if saved.get(k) != cfg[k]}
            if changed or meta.get("seed") != seed or meta.get("scenario") != scenario.name:
                raise ArtifactError(f"cannot resume from {out / 'checkpoint.safetensors'}: it was trained with "
                                    f"other settings {changed or ''} (seed {meta.get('seed')}, scenario "
                                    f"{meta.get('scenario')!r})")
            if tensors["q"].shape != policy.table.q.shape:
                raise ArtifactError("cannot resume: checkpoint Q-table has another shape")
            policy.table.q[:] = tensors["q"]
            policy.table.visits[:] = tensors["visits"]
            start = int(meta["episodes"])
            history = list(meta.get("history", []))
    driver = InProcessDriver(policy)
    learner = driver.engine.learner
    learner.episode_per_job = False
    learner.episodes = learner._episode0 = 0
    for _ in range(start):  # replay the schedule up to the checkpoint
        learner.end_episode()
    learner.publish()

    def checkpoint() -> None:
        meta = {"policy": POLICY_NAME, "encoding": policy.encoding.describe(), "config": cfg, "seed": seed,
                "scenario": scenario.name, "scenario_params": scenario.describe(), "history": history,
                **learner.state_meta()}
        common.save_checkpoint(out, {"q": policy.table.q, "visits": policy.table.visits}, meta)
        common.write_json(out / "history.json", history)
        _plot(out / "learning_curve.png", history, scenario.name, cfg["mode"])

    t0 = time.perf_counter()
    bar = common.progress(episodes, start, f"clqlmrs {scenario.name}", progress)
    try:
        for ep in range(start, episodes):
            metrics = scenario.run_episode(driver, seed + ep)
            learner.end_of_run()
            rewards = list(learner.finished_rewards)
            learner.finished_rewards.clear()
            row = {"episode": ep + 1, "epsilon": policy.epsilon, "train_reward": float(np.sum(rewards)),
                   **{f"train_{k}": float(v) for k, v in metrics.items()}}
            learner.end_episode()
            learner.publish()  # the next episode explores with the decayed ε
            if (ep + 1) % eval_every == 0 or ep + 1 == episodes:
                row.update({f"eval_{k}": v for k, v in evaluate(scenario, policy, eval_seeds).items()})
                history.append(row)
                checkpoint()
            else:
                history.append(row)
            bar.update(1)
            bar.set_postfix(eps=f"{policy.epsilon:.3f}", reward=f"{row['train_reward']:.2f}")
    finally:
        bar.close()
        driver.close()
    final_eval = {k[5:]: v for k, v in history[-1].items() if k.startswith("eval_")}
    model_path = out / MODEL_FILE
    checksum = policy.save(model_path, {"episodes": learner.episodes, "updates": learner.updates,
                                        "config": cfg, "seed": seed, "scenario": scenario.name,
                                        "scenario_params": scenario.describe(), "metrics": final_eval,
                                        "epsilon": policy.epsilon, "alpha": cfg["alpha"], "gamma": cfg["gamma"]})
    coverage = float((policy.table.visits.sum(axis=1) > 0).mean())
    return {"algo": "clqlmrs", "scenario": scenario.name, "episodes": episodes, "seed": seed, "mode": cfg["mode"],
            "model": str(model_path), "checksum": checksum, "learning_curve": str(out / "learning_curve.png"),
            "final_epsilon": policy.epsilon, "updates": learner.updates, "state_coverage": coverage,
            "eval": final_eval, "wall_s": round(time.perf_counter() - t0, 2)}


def _plot(path: Path, history: list[dict[str, Any]], scenario: str, mode: str) -> None:
    """Greedy evaluation metrics (locality rates) per episode, training reward on the right axis."""
    keys = sorted({k for h in history for k in h if k.startswith("eval_") and ("local" in k or "rate" in k)})
    common.plot_learning_curve(path, history, [(k, k[5:]) for k in keys], f"CLQLMRS ({mode}) on {scenario}",
                               secondary=[("train_reward", "training reward / episode")])


register_algo(POLICY_NAME, train_clqlmrs, families={"locality"})
