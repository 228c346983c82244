"""Table II and Fig. 5 of RL-FC (RL-FC vs SF-E), reproduced with the shipped models; optionally Fig. 4d.

For each arrival pattern (Bernoulli, Uniform, Beta) the trained RL-FC model and the SF-E baseline play the same
50 test episodes of 500 jobs (episode i uses workload seed `--seed + i` for both; training never used these seeds).
Printed in the paper's layout: TMDL and AJDR means with their ratio (baseline / RL-FC), Score-A..D of RL-FC and
the baseline with their ratio, beside the paper's numbers. Writes the per-episode data as JSON and a PNG like
Fig. 5 (Eval_app, TMDL, AJDR per test episode, sorted by RL-FC's TMDL).

`--table3` also runs the Uniform model on eased and stressed workloads (Table III). `--ablation-episodes N` trains RL-FC on Bernoulli twice for N episodes, with and without the improved
ε-greedy (random-only exploration), with the same seed, and plots their validation curves (Fig. 4d).

    .venv/bin/python benchmarks/rl_fc_table2.py                      # Table II + Fig. 5 from models/
    .venv/bin/python benchmarks/rl_fc_table2.py --ablation-episodes 300

The last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from emulator.evaluate import run_policy  # noqa: E402
from emulator.multicluster.metrics import eval_app, ratio, scores_000  # noqa: E402
from emulator.scenario import get_scenario  # noqa: E402
from policy_engine.artifact import load_artifact  # noqa: E402

PATTERNS = ("bernoulli", "uniform", "beta")
# Table II of the paper: (RL, SF-E, ratio) per metric and pattern.
PAPER = {
    "bernoulli": {"tmdl": (35.04, 189.34, 5.40), "ajdr": (3.24, 5.78, 1.78), "score_a": (98, 2, 49),
                  "score_b": (99, 1, 99), "score_c": (100, 0, math.inf), "score_d": (100, 0, math.inf)},
    "uniform": {"tmdl": (46.34, 349.9, 7.55), "ajdr": (5.18, 10.80, 2.08), "score_a": (96, 4, 24),
                "score_b": (98, 2, 49), "score_c": (100, 0, math.inf), "score_d": (100, 0, math.inf)},
    "beta": {"tmdl": (56.52, 248.86, 4.40), "ajdr": (3.40, 6.07, 1.79), "score_a": (100, 0, math.inf),
             "score_b": (100, 0, math.inf), "score_c": (100, 0, math.inf), "score_d": (100, 0, math.inf)},
}
ROWS = ("tmdl", "ajdr", "score_a", "score_b", "score_c", "score_d")
LABEL = {"tmdl": "TMDL", "ajdr": "AJDR", "score_a": "Score-A", "score_b": "Score-B", "score_c": "Score-C",
         "score_d": "Score-D"}


def finite(o):
    """JSON has no infinity: write it as the string "inf" (the paper's ∞)."""
    if isinstance(o, float) and math.isinf(o):
        return "inf" if o > 0 else "-inf"
    if isinstance(o, dict):
        return {k: finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [finite(v) for v in o]
    return o


def shown(path: Path) -> str:
    """A path as it is recorded in the results: relative to the checkout when inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def score_ratio(rl: float, base: float) -> float:
    return math.inf if base == 0 else rl / base


def compare_pattern(pattern: str, model: Path, episodes: int, seed: int, baseline: str,
                    progress: bool = True, demand_scale: float = 1.0) -> dict:
    scenario = get_scenario(f"multicluster-{pattern}", demand_scale=demand_scale)
    _, meta = load_artifact(model, policy="rl-fc")
    # A model is only meaningful on the workload family it was trained on: say so when the scenario changed since.
    same_workload = json.loads(json.dumps(meta.get("scenario_params"))) == json.loads(json.dumps(scenario.describe()))
    if not same_workload and demand_scale == 1.0:
        print(f"rl_fc_table2: WARNING: {model} was trained on other {scenario.name} parameters than the current "
              f"scenario's; retrain it (see README)", file=sys.stderr)
    t0 = time.perf_counter()
    rl = run_policy(scenario, "rl-fc", episodes, seed, model=str(model), progress=progress)
    t_rl = time.perf_counter() - t0
    base = run_policy(scenario, baseline, episodes, seed, progress=progress)
    rl_scores = scores_000(rl, base)
    table = {}
    for key in ("tmdl", "ajdr"):
        r, b = float(np.mean([e[key] for e in rl])), float(np.mean([e[key] for e in base]))
        table[key] = {"rl": r, "baseline": b, "ratio": ratio(b, r)}
    for key in ("score_a", "score_b", "score_c", "score_d"):
        # Score-A/C/D of the baseline are what RL-FC does not win; for B an "even" episode gives both 0.5.
        b = 100.0 - rl_scores[key]
        table[key] = {"rl": rl_scores[key], "baseline": b, "ratio": score_ratio(rl_scores[key], b)}
    return {"scenario": scenario.name, "model": shown(model), "table": table, "workload_matches_training": same_workload,
            "model_episodes": meta.get("episodes_trained"), "model_train_seconds": meta.get("train_seconds"),
            "beats_baseline": table["tmdl"]["rl"] < table["tmdl"]["baseline"]
            and table["ajdr"]["rl"] < table["ajdr"]["baseline"],
            "episodes": {"rl-fc": rl, baseline: base}, "rl_seconds": round(t_rl, 1)}


def fmt(v: float) -> str:
    if math.isinf(v):
        return "inf"
    return f"{v:.2f}" if abs(v) < 1000 else f"{v:.0f}"


def print_table(results: dict, baseline: str) -> None:
    """One block per pattern, as Table II's column groups: ours (RL-FC, baseline, ratio) beside the paper's."""
    b = baseline.upper()
    for p, r in results.items():
        print(f"\n{p.capitalize()} arriving pattern")
        print(f"{'Metric':<8}  {'RL-FC':>8} {b:>8} {'Ratio':>7}   | paper: {'RL':>7} {'SF-E':>7} {'Ratio':>6}")
        for key in ROWS:
            t = r["table"][key]
            pr = PAPER[p][key]
            print(f"{LABEL[key]:<8}  {fmt(t['rl']):>8} {fmt(t['baseline']):>8} {fmt(t['ratio']):>7}   |        "
                  f"{fmt(pr[0]):>7} {fmt(pr[1]):>7} {fmt(pr[2]):>6}")


def plot_fig5(results: dict, baseline: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pats = list(results)
    fig, axes = plt.subplots(len(pats), 3, figsize=(13, 3.2 * len(pats)), squeeze=False)
    for row, p in enumerate(pats):
        rl = results[p]["episodes"]["rl-fc"]
        base = results[p]["episodes"][baseline]
        order = np.argsort([e["tmdl"] for e in rl], kind="stable")
        x = np.arange(1, len(order) + 1)
        series = {
            "Eval_app (higher is better)": ([eval_app(rl[i]["tmdl"], rl[i]["ajdr"]) for i in order],
                                            [eval_app(base[i]["tmdl"], base[i]["ajdr"]) for i in order]),
            "TMDL (lower is better)": ([rl[i]["tmdl"] for i in order], [base[i]["tmdl"] for i in order]),
            "AJDR (lower is better)": ([rl[i]["ajdr"] for i in order], [base[i]["ajdr"] for i in order]),
        }
        for col, (name, (a, b)) in enumerate(series.items()):
            ax = axes[row][col]
            ax.plot(x, a, "o-", ms=3, label="RL-FC")
            ax.plot(x, b, "s-", ms=3, label=baseline.upper())
            ax.set_title(f"{p}: {name}", fontsize=9)
            ax.set_xlabel("test episode (sorted by RL-FC TMDL)", fontsize=8)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def run_ablation(episodes: int, seed: int, out: Path, progress: bool) -> dict:
    """Fig. 4d: RL-FC on Bernoulli with and without the improved ε-greedy, same seed and schedule."""
    from emulator.learners.replay_run import CHECKPOINT, CURVE_JSON
    from algorithms.rl_fc.train import train_rl_fc

    scenario = get_scenario("multicluster-bernoulli")
    curves = {}
    for label, improved in (("improved", True), ("random-only", False)):
        run_dir = out / f"ablation-{label}"
        resume = (run_dir / CHECKPOINT).exists()
        opts = {"improved_greedy": improved, "eval_every": max(1, episodes // 10), "baselines": ["sf-e"]}
        summary = train_rl_fc(scenario, episodes, seed, run_dir, resume=resume, progress=progress, options=opts)
        curves[label] = {"summary": summary, "curve": json.loads((run_dir / CURVE_JSON).read_text())}
    return curves


def load_run(run_dir: Path) -> dict:
    """A finished `emulator train --algo rl-fc` run: its learning curve and summary numbers."""
    from emulator.learners.replay_run import CURVE_JSON

    path = run_dir / CURVE_JSON
    if not path.exists():
        raise SystemExit(f"rl_fc_table2: no {CURVE_JSON} in {run_dir}")
    curve = json.loads(path.read_text())
    ev = curve["evaluations"]
    if not ev:
        raise SystemExit(f"rl_fc_table2: {run_dir} has no evaluation yet")
    keys = ("tmdl", "ajdr", "eval_app")
    return {"curve": curve, "summary": {"final": {k: ev[-1][k] for k in keys},
                                        "best": max(ev, key=lambda r: r["eval_app"]),
                                        "train_seconds": curve["train_seconds"]}}


def plot_ablation(curves: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for label, c in curves.items():
        ev = c["curve"]["evaluations"]
        ax.plot([r["episode"] for r in ev], [r["eval_app"] for r in ev], "o-", label=f"RL-FC, {label} ε-greedy")
    base = next(iter(curves.values()))["curve"]["baselines"].get("sf-e")
    if base:
        ax.axhline(base["eval_app"], color="gray", linestyle="--", label="SF-E")
    ax.set_xlabel("training episode")
    ax.set_ylabel("Eval_app (validation)")
    ax.set_title("Bernoulli: with and without the improved ε-greedy (Fig. 4d)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=str(ROOT / "models"),
                   help="directory with rl-fc-<pattern>.safetensors (default: the shipped models/)")
    p.add_argument("--patterns", default=",".join(PATTERNS), help="comma-separated subset of bernoulli,uniform,beta")
    p.add_argument("--episodes", type=int, default=50, help="test episodes per pattern (default 50, as the paper)")
    p.add_argument("--seed", type=int, default=0, help="workload seed of test episode 0 (default 0)")
    p.add_argument("--baseline", default="sf-e", help="rule-based baseline (default sf-e, the paper's best)")
    p.add_argument("--out", default=str(ROOT / "runs" / "rl_fc_table2"), help="where the JSON and PNGs go")
    p.add_argument("--ablation-runs", metavar="IMPROVED_DIR,RANDOM_ONLY_DIR",
                   help="plot Fig. 4d from two Bernoulli training runs, with and without the improved ε-greedy "
                        "(`emulator train ... --set improved_greedy=false`)")
    p.add_argument("--ablation-episodes", type=int, default=0,
                   help="also train the Fig. 4d ablation for this many episodes per variant (default: skip)")
    p.add_argument("--table3", action="store_true",
                   help="also Table III: the Uniform model on eased and stressed workloads")
    p.add_argument("--eased", type=float, default=0.8, help="demand_scale of the eased workload (default 0.8)")
    p.add_argument("--stressed", type=float, default=1.25,
                   help="demand_scale of the stressed workload (default 1.25)")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    patterns = [x for x in args.patterns.split(",") if x]
    bad = sorted(set(patterns) - set(PATTERNS))
    if bad:
        raise SystemExit(f"rl_fc_table2: unknown pattern(s) {bad}; valid: {', '.join(PATTERNS)}")
    results = {}
    for pat in patterns:
        model = Path(args.models) / f"rl-fc-{pat}.safetensors"
        if not model.exists():
            raise SystemExit(f"rl_fc_table2: no model {model}; train one with `emulator train --scenario "
                             f"multicluster-{pat} --algo rl-fc --out runs/rl-fc-{pat}`")
        results[pat] = compare_pattern(pat, model, args.episodes, args.seed, args.baseline,
                                       progress=not args.no_progress)
    print(f"Table II: RL-FC vs {args.baseline.upper()}, {args.episodes} test episodes of 500 jobs, seeds "
          f"{args.seed}..{args.seed + args.episodes - 1} (ratio = baseline/RL for TMDL, AJDR; RL/baseline for "
          f"scores)")
    print_table(results, args.baseline)
    fig5 = out / "rl_fc_fig5.png"
    plot_fig5(results, args.baseline, fig5)
    summary = {"benchmark": "rl_fc_table2", "episodes": args.episodes, "seed": args.seed,
               "baseline": args.baseline, "fig5": str(fig5),
               "patterns": {p: {k: v for k, v in r.items() if k != "episodes"} for p, r in results.items()},
               "paper": PAPER, "all_beat_baseline": all(r["beats_baseline"] for r in results.values())}
    if args.table3:
        # Table III: the Uniform model, unchanged, on workloads with smaller ("eased") and larger ("stressed")
        # executor requests than it was trained on (the scenario's demand_scale parameter).
        model = Path(args.models) / "rl-fc-uniform.safetensors"
        t3 = {}
        for label, scale in (("eased", args.eased), ("stressed", args.stressed)):
            r = compare_pattern("uniform", model, args.episodes, args.seed, args.baseline,
                                progress=not args.no_progress, demand_scale=scale)
            t3[label] = {"demand_scale": scale, "table": r["table"], "beats_baseline": r["beats_baseline"]}
            print(f"\nTable III, Uniform, {label} workload (demand_scale {scale})")
            for key in ("tmdl", "ajdr", "score_a", "score_b", "score_c", "score_d"):
                t = r["table"][key]
                print(f"{LABEL[key]:<8}  {fmt(t['rl']):>8} {fmt(t['baseline']):>8} {fmt(t['ratio']):>7}")
        summary["table3"] = t3
    curves = None
    if args.ablation_runs:
        dirs = args.ablation_runs.split(",")
        if len(dirs) != 2:
            raise SystemExit("rl_fc_table2: --ablation-runs takes IMPROVED_DIR,RANDOM_ONLY_DIR")
        curves = {label: load_run(Path(d)) for label, d in zip(("improved", "random-only"), dirs)}
    elif args.ablation_episodes > 0:
        curves = run_ablation(args.ablation_episodes, args.seed, out, progress=not args.no_progress)
    if curves is not None:
        fig4d = out / "rl_fc_fig4d.png"
        plot_ablation(curves, fig4d)
        summary["ablation"] = {label: {"final": c["summary"]["final"], "best": c["summary"]["best"],
                                       "train_seconds": c["summary"]["train_seconds"]}
                               for label, c in curves.items()}
        summary["ablation"]["episodes"] = {label: c["curve"]["evaluations"][-1]["episode"]
                                           for label, c in curves.items()}
        for label, c in curves.items():
            print(f"Fig. 4d, {label} ε-greedy: validation Eval_app per evaluation "
                  + " ".join(f"{r['episode']}:{r['eval_app']:.3f}" for r in c["curve"]["evaluations"]))
        summary["fig4d"] = str(fig4d)
    (out / "rl_fc_table2.json").write_text(json.dumps(
        finite({**summary, "per_episode": {p: r["episodes"] for p, r in results.items()}}), indent=1, default=str))
    print(json.dumps(finite(summary), default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
