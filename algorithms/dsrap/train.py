"""DSRAP training (`emulator train --algo dsrap`): FDL / SDL / BDL tables learned over long runs, saved as a model.

The paper's managers learn while they run (FAL/PGA between decisions, Sec. 4), for 200 000 steps per run; our
benchmark episodes are 10 000 steps from fresh tables. This learner plays `--episodes` episodes of a DSRAP scenario
(`--param steps=N` sets their length) through the in-process engine, and every episode after the first starts from
the tables the previous one ended with, so E episodes of N steps learn for E x N steps. Workload seeds are
TRAIN_SEED_BASE + 100 * seed + episode: never the evaluation seeds (0-99) that benchmarks/dsrap_tables.py uses.

After each episode the tables go to OUT/model.safetensors (a checksummed artifact that `--model` loads into fdl /
sdl / bdl, with settings, seed, code version, per-episode metrics and the command), the utility rate curve to
OUT/curve.json and OUT/learning-curve.png. `--resume` continues an interrupted run from its last finished episode:
the tables pass through the same float32 artifact between episodes either way, so a resumed run ends with the same
tables as one that ran through.

Options (`--set KEY=VALUE`): approach=bdl (fdl, sdl or bdl), seed=0 (salt of the exploration draws), and any
algorithms.dsrap.rules.FalSettings field (void_init, eps_void, alpha1, ...).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from emulator.drivers import InProcessDriver
from emulator.scenario import Scenario
from emulator.training import register_algo
from policy_engine.artifact import load_artifact, save_artifact
from policy_engine.policy import OptionError, create

TRAIN_SEED_BASE = 10_000
MODEL = "model.safetensors"
CURVE_JSON = "curve.json"
CURVE_PNG = "learning-curve.png"
APPROACHES = ("fdl", "sdl", "bdl")


def workload_seed(seed: int, episode: int) -> int:
    return TRAIN_SEED_BASE + 100 * seed + episode


def train_dsrap(scenario: Scenario, episodes: int | None, seed: int, out: Path, resume: bool = False,
                progress: bool = True, options: dict | None = None) -> dict[str, Any]:
    options = dict(options or {})
    approach = str(options.pop("approach", "bdl"))
    if approach not in APPROACHES:
        raise OptionError(f"approach must be one of {', '.join(APPROACHES)}, not {approach!r}")
    episodes = 1 if episodes is None else int(episodes)
    if episodes < 1:
        raise OptionError("--episodes must be at least 1")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        policy = create(approach, **options)
    except ValueError as e:
        raise OptionError(str(e)) from None
    history: list[dict] = []
    wall = 0.0
    if resume:
        if not (out / MODEL).exists():
            raise ValueError(f"--resume: no {MODEL} in {out} to continue from")
        tensors, meta = load_artifact(out / MODEL, policy=approach)
        if meta.get("settings") != json.loads(json.dumps(policy.settings.as_dict())) or meta.get("seed") != seed:
            raise ValueError(f"--resume: {out / MODEL} was trained with other settings or seed")
        policy.tables.load(tensors)
        history, wall = meta["episodes"], float(meta.get("wall_s", 0.0))
    steps = scenario.config.steps
    driver = InProcessDriver(policy)
    try:
        for ep in range(len(history), episodes):
            t0 = time.time()
            bar = None
            if progress:
                from tqdm import tqdm

                bar = tqdm(total=steps, desc=f"{approach} episode {ep + 1}/{episodes}", unit="step", file=sys.stderr,
                           mininterval=5.0)
            last = [0]

            def tick(t):
                if bar is not None:
                    bar.update(t - last[0])
                last[0] = t

            result = scenario.play(driver, workload_seed(seed, ep), tick)
            if bar is not None:
                bar.close()
            wall += time.time() - t0
            # the next episode starts from these tables (through the artifact's float32 form, as --resume does)
            tensors = policy.tables.to_tensors()
            policy.tables.load(tensors)
            history.append({"episode": ep, "workload_seed": workload_seed(seed, ep), "metrics": result.metrics(),
                            "curve": result.curve, "seconds": round(time.time() - t0, 1)})
            meta = {"policy": approach, "scenario": scenario.name, "params": scenario.describe(),
                    "settings": policy.settings.as_dict(), "option_seed": policy.seed, "seed": seed,
                    "episodes": history, "steps_per_episode": steps, "steps_total": steps * len(history),
                    "wall_s": round(wall, 1), "metrics": result.metrics(), "command": " ".join(sys.argv)}
            save_artifact(out / MODEL, tensors, meta)
            (out / CURVE_JSON).write_text(json.dumps({k: v for k, v in meta.items() if k != "params"}, indent=1))
            _plot(history, scenario.config.curve_every, approach, out / CURVE_PNG)
    finally:
        driver.close()
    last = history[-1]["metrics"]
    return {"algo": "dsrap", "approach": approach, "scenario": scenario.name, "seed": seed, "episodes": len(history),
            "steps_total": steps * len(history), "wall_s": round(wall, 1), "model": str(out / MODEL),
            "utility_rate": last["utility_rate"], "abandoned_ordinary": last["abandoned_ordinary"]}


def _plot(history: list[dict], every: int, approach: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ys = [u for h in history for u in h["curve"]]
    xs = [(i + 1) * every for i in range(len(ys))]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.plot(xs, ys, lw=1)
    steps = len(history[0]["curve"]) * every
    for k in range(1, len(history)):
        ax.axvline(k * steps, color="grey", lw=0.5, ls=":")
    ax.set_xlabel("training step (episodes joined; dotted: a new workload seed)")
    ax.set_ylabel(f"utility rate (mean of {every} steps)")
    ax.set_title(f"DSRAP {approach.upper()} training")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


register_algo("dsrap", train_dsrap, families={"dsrap"})
