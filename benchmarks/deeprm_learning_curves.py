"""DeepRM-PG learning curves side by side: greedy validation slowdown against REINFORCE iteration, with SJF's and
Packer's slowdown on the same validation job sets as horizontal lines (DeepRM's Fig. 3, several runs at once).

Reads the learning-curve.json that `emulator train --algo deeprm-pg` writes into every --out directory (or a copy of
one, such as models/deeprm-pg-scratch.learning-curve.json), draws one PNG and writes the curves and a per-run
summary (start, best, final, first iteration below SJF) as JSON.

    .venv/bin/python benchmarks/deeprm_learning_curves.py runs/scratch-s11 runs/scratch-s12 \\
        --label "seed 11" --label "seed 12" --out benchmarks/results/deeprm/reinforce

The last line of stdout is one JSON object: {"runs": {LABEL: {"start", "best", "best_iteration", "final", ...}}}.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def load_curve(path: Path) -> dict:
    path = path / "learning-curve.json" if path.is_dir() else path
    try:
        data = json.loads(path.read_text())
        data["evaluations"], data["baselines"]   # noqa: B018 (the keys a learning curve must have)
    except (OSError, ValueError, KeyError) as e:
        raise SystemExit(f"deeprm_learning_curves: {path} is not a deeprm-pg learning curve ({e})") from None
    return data


def summarise(data: dict) -> dict:
    ev = data["evaluations"]
    best = min(ev, key=lambda r: r["slowdown"])
    sjf = data["baselines"].get("sjf", {}).get("slowdown")
    below = next((r for r in ev if sjf is not None and r["slowdown"] < sjf), None)
    return {"start": ev[0]["slowdown"], "best": best["slowdown"], "best_iteration": best["iteration"],
            "final": ev[-1]["slowdown"], "final_iteration": ev[-1]["iteration"],
            "first_below_sjf_iteration": below and below["iteration"],
            "first_below_sjf_wall_seconds": below and below.get("wall_seconds"),
            "sjf": sjf, "packer": data["baselines"].get("packer", {}).get("slowdown"),
            "seed": data.get("seed"), "config": data.get("config")}


def plot(curves: dict[str, dict], path: Path, references: dict[str, float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for i, (label, data) in enumerate(curves.items()):
        ev = data["evaluations"]
        ax.plot([r["iteration"] for r in ev], [r["slowdown"] for r in ev], "o-", ms=2.5, lw=1.2, color=f"C{i}",
                label=label)
    first = next(iter(curves.values()))["baselines"]
    for name, color in (("sjf", "black"), ("packer", "grey")):
        if name in first:
            ax.axhline(first[name]["slowdown"], color=color, ls="--", lw=1, label=f"{name.upper()} (same job sets)")
    for i, (label, value) in enumerate(references.items()):
        ax.axhline(value, color=f"C{len(curves) + i}", ls=":", lw=1.2, label=label)
    ax.set_xlabel("REINFORCE iteration")
    ax.set_ylabel("mean job slowdown, greedy policy on validation job sets")
    ax.set_title("DeepRM-PG learning curves (load 0.75)")
    top = max(first.get("packer", {}).get("slowdown", 0), 1.0) * 1.15
    ax.set_ylim(1.0, top)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="training --out directories or learning-curve.json files")
    p.add_argument("--label", action="append", default=[], help="one label per run, in order (default: the path)")
    p.add_argument("--reference", action="append", default=[], metavar="LABEL=SLOWDOWN",
                   help="another policy's slowdown on the same validation job sets, drawn as a dotted line")
    p.add_argument("--out", type=Path, required=True, help="path prefix of the .png and .json written")
    args = p.parse_args(argv)
    if args.label and len(args.label) != len(args.runs):
        raise SystemExit(f"deeprm_learning_curves: {len(args.label)} --label for {len(args.runs)} runs")
    labels = args.label or [str(r) for r in args.runs]
    try:
        references = {k: float(v) for k, v in (r.rsplit("=", 1) for r in args.reference)}
    except ValueError:
        raise SystemExit(f"deeprm_learning_curves: --reference takes LABEL=SLOWDOWN, got {args.reference}") from None
    curves = {label: load_curve(run) for label, run in zip(labels, args.runs)}
    sjf = {round(c["baselines"].get("sjf", {}).get("slowdown", 0), 9) for c in curves.values()}
    if len(sjf) > 1:
        raise SystemExit("deeprm_learning_curves: the runs were validated on different job sets (SJF differs)")
    summary = {"runs": {label: summarise(c) for label, c in curves.items()}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    plot(curves, args.out.with_suffix(".png"), references)
    curves_out = {label: c["evaluations"] for label, c in curves.items()}
    args.out.with_suffix(".json").write_text(
        json.dumps({**summary, "references": references, "curves": curves_out}, indent=1) + "\n")
    for label, s in summary["runs"].items():
        print(f"{label:>24}: start {s['start']:.3f}  best {s['best']:.3f} (it {s['best_iteration']})  final "
              f"{s['final']:.3f} (it {s['final_iteration']})  first below SJF {s['sjf']:.3f}: "
              f"it {s['first_below_sjf_iteration']}")
    print(json.dumps({"runs": {k: {kk: v for kk, v in s.items() if kk != "config"} for k, s in
                               summary["runs"].items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
