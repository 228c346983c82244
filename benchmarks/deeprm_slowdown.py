"""DeepRM's load sweep (Mao et al., HotNets 2016, Fig. 4; DeepRM, Fig. 4): mean job slowdown against cluster load.

The learned DeepRM policy (`deeprm-pg`, the shipped model), the three baselines (SJF, Packer, DeepRM's random
agent) and `sjf-holdback` (the hand-written rule the model's warm start imitates) play the same held-out job sets
of the `deeprm` scenario at every load: job set i is scenario seed `--seed + i` (training used seeds >= 1,000,000
and validation 900,000.., so these were never seen). Prints a table (mean ± std of the per-job-set mean slowdown,
deeprm-pg's change against SJF and Packer, and the paired per-job-set difference against SJF with its 95 %
interval), writes the per-job-set numbers as JSON and a PNG under benchmarks/results/deeprm/.

    .venv/bin/python benchmarks/deeprm_slowdown.py                     # loads 0.5-0.9, 100 job sets each
    .venv/bin/python benchmarks/deeprm_slowdown.py --loads 0.75 --episodes 50

The last line of stdout is one JSON object: {"loads": {LOAD: {POLICY: {"mean", "std"}}}, ...}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from emulator.evaluate import run_policy  # noqa: E402
from emulator.scenario import get_scenario  # noqa: E402
from policy_engine.artifact import load_artifact  # noqa: E402

POLICIES = ("deeprm-pg", "sjf", "packer", "deeprm-random", "sjf-holdback")
LABEL = {"deeprm-pg": "DeepRM-PG", "sjf": "SJF", "packer": "Packer", "deeprm-random": "Random",
         "sjf-holdback": "SJF-holdback"}


def sweep(model: Path, loads: list[float], episodes: int, seed: int, progress: bool) -> dict:
    out: dict = {"loads": {}, "episodes": {}, "seconds": {}}
    for load in loads:
        scenario = get_scenario("deeprm", load=load)
        key = f"{load:g}"
        out["loads"][key], out["episodes"][key], out["seconds"][key] = {}, {}, {}
        for policy in POLICIES:
            t0 = time.perf_counter()
            runs = run_policy(scenario, policy, episodes, seed, model=str(model) if policy == "deeprm-pg" else None,
                              progress=progress)
            slow = np.array([r["slowdown"] for r in runs])
            out["loads"][key][policy] = {"mean": float(slow.mean()), "std": float(slow.std())}
            out["episodes"][key][policy] = slow.tolist()
            out["seconds"][key][policy] = round(time.perf_counter() - t0, 2)
    return out


def change(result: dict, load: str, against: str) -> float:
    """deeprm-pg's mean slowdown relative to `against` at `load`, in percent (negative: lower slowdown)."""
    row = result["loads"][load]
    return 100.0 * (row["deeprm-pg"]["mean"] / row[against]["mean"] - 1.0)


def paired(result: dict, load: str, against: str) -> dict:
    """deeprm-pg minus `against` per job set (the same job sets): mean, its standard error and 95 % interval, and
    on how many job sets deeprm-pg is lower / higher."""
    d = np.array(result["episodes"][load]["deeprm-pg"]) - np.array(result["episodes"][load][against])
    se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
    mean = float(d.mean())
    return {"mean": mean, "se": se, "ci95": [mean - 1.96 * se, mean + 1.96 * se],
            "lower": int((d < -1e-12).sum()), "higher": int((d > 1e-12).sum())}


def print_table(result: dict) -> None:
    print(f"{'load':>5}  " + "  ".join(f"{LABEL[p]:>13}" for p in POLICIES)
          + f"  {'vs SJF':>8} {'vs Packer':>9}  {'paired diff vs SJF (95% CI)':>28}")
    for load, row in result["loads"].items():
        cells = "  ".join(f"{row[p]['mean']:>6.3f} ± {row[p]['std']:<4.2f}" for p in POLICIES)
        d = result["paired_vs_sjf"][load]
        print(f"{load:>5}  {cells}  {change(result, load, 'sjf'):>+7.1f}% {change(result, load, 'packer'):>+8.1f}%"
              f"  {d['mean']:>+7.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}]")


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    loads = list(result["loads"])
    x = np.array([float(k) for k in loads])
    for i, p in enumerate(POLICIES):
        mean = np.array([result["loads"][k][p]["mean"] for k in loads])
        std = np.array([result["loads"][k][p]["std"] for k in loads])
        ax.errorbar(x + (i - 2) * 0.004, mean, yerr=std, marker="os^vD"[i], ms=4, capsize=3, label=LABEL[p])
    ax.set_xlabel("offered cluster load")
    ax.set_ylabel("mean job slowdown")
    n = len(next(iter(result["episodes"].values()))["sjf"])
    ax.set_title(f"DeepRM setting: slowdown vs load ({n} held-out job sets per load)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, default=ROOT / "models" / "deeprm-pg.safetensors",
                   help="deeprm-pg model artifact (default: the shipped one)")
    p.add_argument("--loads", default="0.5,0.6,0.7,0.75,0.8,0.9",
                   help="comma-separated offered loads (default 0.5-0.9 and 0.75, DeepRM's 70-80 %%)")
    p.add_argument("--episodes", type=int, default=100, help="held-out job sets per load (default 100)")
    p.add_argument("--seed", type=int, default=0, help="scenario seed of the first job set (default 0)")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "deeprm",
                   help="directory for deeprm_slowdown.json and deeprm_slowdown.png")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    try:
        loads = [float(x) for x in args.loads.split(",") if x]
        _, meta = load_artifact(args.model, policy="deeprm-pg")
        if args.episodes < 1 or not loads:
            raise ValueError("need --episodes >= 1 and at least one load")
        result = sweep(args.model, loads, args.episodes, args.seed, not args.no_progress)
    except ValueError as e:
        raise SystemExit(f"deeprm_slowdown: {e}") from None
    model = args.model.resolve()
    result["model"] = str(model.relative_to(ROOT)) if model.is_relative_to(ROOT) else str(model)
    result["model_checksum"] = meta.get("checksum")
    result["model_trained_at"] = meta.get("scenario_params", {}).get("load")
    result["model_iterations"] = meta.get("iterations_trained")
    result["seed"] = args.seed
    result["change_vs_sjf_percent"] = {k: round(change(result, k, "sjf"), 2) for k in result["loads"]}
    result["change_vs_packer_percent"] = {k: round(change(result, k, "packer"), 2) for k in result["loads"]}
    result["paired_vs_sjf"] = {k: paired(result, k, "sjf") for k in result["loads"]}
    result["paired_vs_packer"] = {k: paired(result, k, "packer") for k in result["loads"]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "deeprm_slowdown.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(result, args.out / "deeprm_slowdown.png")
    print_table(result)
    summary = {k: result[k] for k in ("loads", "model", "model_checksum", "model_trained_at", "model_iterations", "seed",
                                      "change_vs_sjf_percent", "change_vs_packer_percent", "paired_vs_sjf",
                                      "paired_vs_packer")}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
