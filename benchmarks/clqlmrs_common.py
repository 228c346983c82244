"""Shared parts of the CLQLMRS benchmarks (CLQLMRS's Fig. 5-9 and Table 4 on the locality emulator).

Protocol, the paper's: CLQLMRS is trained on the environment it is then run in (per setting, `--train-episodes`
episodes on training seeds 0..n-1 with the paper's SARSA settings, alpha 0.1, gamma 0.95, epsilon from 1), then
every policy runs the same held-out episodes (seeds 10000+i). One deviation, for the time budget: epsilon decays
x0.9 (not x0.999) every 10 episodes, so that it reaches 0.04 within 300 episodes; at the paper's rate it would
still be 0.97 there (32,000 episodes to reach 0.04), and the table of an almost random behaviour policy never
learns to wait for a cached replica. `--paper-epsilon` restores 0.999.
Besides the per-setting table (`clqlmrs`) each figure also shows
  * `clqlmrs-transfer`: ONE abstract table trained on the emulator's default setting (WordCount, four 10-map
    runs 5 s apart, 2 GB cache) and used unchanged everywhere: what the generalizing state abstraction buys;
  * `clqlmrs-paper`: the paper-faithful (task -> node) table, trained per setting.
Baselines: FIFO, Delay (node-locality-delay 40, capped at the node count) and ACL (C = 3 unless the figure says).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from emulator.evaluate import run_policy
from algorithms.clqlmrs.train import train_clqlmrs
from emulator.scenario import get_scenario

EVAL_SEED = 10_000
ROOT = Path(__file__).resolve().parent.parent
METRICS = ("local_task_rate", "cache_locality", "data_locality", "rack_locality", "off_rack", "job_time_s",
           "makespan_s")


def parse_args(description: str, extra=None, **defaults: Any) -> argparse.Namespace:
    """The common options; `extra(parser)` adds a benchmark's own."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    if extra is not None:
        extra(p)
    p.add_argument("--eval-episodes", type=int, default=defaults.get("eval_episodes", 10),
                   help="held-out episodes per policy and setting (default %(default)s)")
    p.add_argument("--train-episodes", type=int, default=defaults.get("train_episodes", 300),
                   help="CLQLMRS training episodes per setting (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="training seed (default 0)")
    p.add_argument("--out", default=str(ROOT / "runs" / "clqlmrs-bench"),
                   help="directory for models and the PNG (default runs/clqlmrs-bench)")
    p.add_argument("--no-paper-mode", action="store_true", help="skip the paper-faithful table (faster)")
    p.add_argument("--paper-epsilon", action="store_true",
                   help="decay epsilon x0.999 every 10 episodes as the paper (default x0.9, see module doc)")
    args = p.parse_args()
    if args.eval_episodes < 1 or args.train_episodes < 1:
        p.error("episode counts must be >= 1")
    args.out = Path(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    return args


def train(app: str, params: dict[str, Any], args, mode: str = "abstract", tag: str = "") -> str:
    scenario = get_scenario(f"locality-{app}", **params)
    tag = tag or f"{app}-{mode}-" + "-".join(f"{k}{v}" for k, v in sorted(params.items()))
    res = train_clqlmrs(scenario, args.train_episodes, args.seed, args.out / "models" / tag, resume=False,
                        progress=False, options={"mode": mode, "epsilon_decay": 0.999 if args.paper_epsilon else 0.9})
    return res["model"]


def transfer_model(args) -> str:
    """One abstract table trained on the default WordCount setting, reused unchanged in every figure."""
    return train("wordcount", {}, args, tag="transfer-wordcount-default")


def evaluate(app: str, params: dict[str, Any], lineup: dict[str, tuple[str, str | None, dict]], args,
             ) -> dict[str, dict[str, float]]:
    """{label: {metric: mean over held-out episodes}} for lineup {label: (policy, model, options)}."""
    scenario = get_scenario(f"locality-{app}", **params)
    out = {}
    for label, (policy, model, options) in lineup.items():
        runs = run_policy(scenario, policy, args.eval_episodes, EVAL_SEED, model=model, options=options,
                          progress=False)
        out[label] = {k: float(np.mean([r[k] for r in runs])) for k in METRICS}
        out[label]["job_time_s_std"] = float(np.std([r["job_time_s"] for r in runs]))
    return out


def lineup(app: str, params: dict[str, Any], args, transfer: str, acl: dict[str, float] | None = None,
           ) -> dict[str, tuple[str, str | None, dict]]:
    frozen = {"learn": False}
    acl = acl or {"acl": 3}
    out: dict[str, tuple[str, str | None, dict]] = {"fifo": ("fifo", None, {}), "delay": ("delay", None, {})}
    out.update({label: ("acl", None, {"c": c}) for label, c in acl.items()})
    out["clqlmrs"] = ("clqlmrs", train(app, params, args), frozen)
    out["clqlmrs-transfer"] = ("clqlmrs", transfer, frozen)
    if not args.no_paper_mode:
        out["clqlmrs-paper"] = ("clqlmrs", train(app, params, args, mode="paper"), frozen)
    return out


def rel(a: float, b: float) -> float:
    """Relative change of a against b, in percent."""
    return 100.0 * (a - b) / b if b else float("nan")


def plot_lines(path: Path, xs: list, series: dict[str, list[float]], xlabel: str, ylabel: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for label, ys in series.items():
        ax.plot(xs, ys, marker="o", label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_bars(ax, groups: list[str], series: dict[str, list[float]], ylabel: str, title: str) -> None:
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(groups))
    for i, (label, ys) in enumerate(series.items()):
        ax.bar(x + i * width - 0.4 + width / 2, ys, width, label=label)
    ax.set_xticks(x, groups)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3, axis="y")


def finish(result: dict[str, Any], t0: float) -> None:
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(result), file=sys.stdout, flush=True)
