"""DSRAP model artifacts on held-out seeds: is a trained set of tables better than the shipped one?

Each RUN is LABEL=POLICY[:MODEL][,KEY=VALUE...]: a policy (fdl, sdl, bdl, ...), an optional model artifact that
every episode starts from, and policy options (FalSettings fields). All runs play the same seeded episodes of a
DSRAP scenario through the in-process engine (learning continues inline, as the paper's managers do), and the
table gives the utility rate over the last `window` steps per seed, the mean, and the abandoned tasks.

    nice -n 19 .venv/bin/python benchmarks/dsrap_models.py --seeds 3 \\
        old=bdl:models/dsrap-bdl-heavy.safetensors,void_init=0 new=bdl:runs/dsrap-bdl/model.safetensors

Seeds 0-2 are the benchmark tables' seeds; the tables shipped before issue 28 learned on seed 0, and `emulator
train --algo dsrap` (which trained today's dsrap-bdl-heavy) trains on seeds 10 000 and up. Each (run, seed) result is saved to OUT/LABEL-sSEED.json as it
finishes, so runs can go in separate processes and be joined with --saved-only.
The last line of stdout is one JSON object: {LABEL: {"utility_rate": mean, "per_seed": [...], ...}}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from emulator.drivers import make_driver
from emulator.scenario import get_scenario

ROOT = Path(__file__).resolve().parent.parent


def parse_run(text: str) -> tuple[str, str, str | None, dict]:
    label, _, spec = text.partition("=")
    if not label or not spec:
        raise SystemExit(f"run {text!r}: expected LABEL=POLICY[:MODEL][,KEY=VALUE...]")
    head, *opts = spec.split(",")
    policy, _, model = head.partition(":")
    options = {}
    for o in opts:
        k, _, v = o.partition("=")
        try:
            options[k] = json.loads(v)
        except json.JSONDecodeError:
            options[k] = v
    return label, policy, model or None, options


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", metavar="LABEL=POLICY[:MODEL][,KEY=VALUE...]")
    p.add_argument("--scenario", default="dsrap-heavy")
    p.add_argument("--seeds", default="3,4", help="held-out evaluation seeds (default 3,4)")
    p.add_argument("--steps", type=int, default=10_000)
    p.add_argument("--window", type=int, default=5_000)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dsrap" / "models"))
    p.add_argument("--saved-only", action="store_true", help="build the table from OUT's saved results; run nothing")
    args = p.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sc = get_scenario(args.scenario, steps=args.steps, window=args.window)
    results: dict[str, list[dict]] = {}
    for text in args.runs:
        label, policy, model, options = parse_run(text)
        results[label] = []
        for seed in seeds:
            f = out / f"{label}-s{seed}.json"
            if f.exists():
                saved = json.loads(f.read_text())
                if (saved["steps"], saved["window"], saved["spec"]) == (args.steps, args.window, text):
                    results[label].append(saved)
                    continue
            if args.saved_only:
                continue
            t0 = time.time()
            bar = tqdm(total=args.steps, desc=f"{label} seed {seed}", unit="step", file=sys.stderr, mininterval=5.0)
            last = [0]

            def tick(t):
                bar.update(t - last[0])
                last[0] = t

            with make_driver(policy, model=model, options=options) as d:
                r = sc.play(d, seed, tick)
            bar.close()
            row = {"spec": text, "seed": seed, "steps": args.steps, "window": args.window, "metrics": r.metrics(),
                   "curve": r.curve, "seconds": round(time.time() - t0, 1)}
            f.write_text(json.dumps(row))
            results[label].append(row)
    lines = [f"{args.scenario}, {args.steps} steps, metrics over the last {args.window}",
             "| run | " + " | ".join(f"seed {s}" for s in seeds) + " | mean | abandoned ordinary | hops |",
             "|---" * (len(seeds) + 4) + "|"]
    summary = {}
    for label, rows in results.items():
        if not rows:
            continue
        by_seed = {r["seed"]: r["metrics"] for r in rows}
        u = [by_seed[s]["utility_rate"] if s in by_seed else float("nan") for s in seeds]
        mean = float(np.nanmean(u))
        summary[label] = {"utility_rate": mean, "per_seed": u,
                          "abandoned_ordinary": float(np.mean([m["abandoned_ordinary"] for m in by_seed.values()])),
                          "hops": float(np.mean([m["hops"] for m in by_seed.values()]))}
        lines.append(f"| {label} | " + " | ".join(f"{x:.0f}" for x in u) + f" | {mean:.0f} | "
                     f"{summary[label]['abandoned_ordinary']:.0f} | {summary[label]['hops']:.2f} |")
    print("\n".join(lines))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
