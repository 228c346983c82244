"""Tables 2-5 and Figs. 3 and 6 of DSRAP (Zhang, Lesser & Shenoy 2008), beside the paper's numbers.

Every approach (greedy, FDL, SDL, BDL, centralized) plays the same seeded episodes of `dsrap-light` and
`dsrap-heavy` through the policy engine (in-process; `emulator compare --remote spawn` gives the same numbers over
gRPC). Learning approaches start every episode from fresh tables, as the paper's simulation runs do. Per load:
  * Table 2 / 4: utility rate, CPU and network utilization and hops over the last `window` steps;
  * Table 3 / 5: tasks of each type abandoned over the same steps;
  * Fig. 3 / 6: utility rate over time (mean of each `curve_every` steps), one curve per approach.
Each finished (load, approach) is saved to OUT/runs/ at once, so an interrupted run resumes where it stopped.

    nice -n 10 .venv/bin/python benchmarks/dsrap_tables.py                     # 1 episode of 10 000 steps each
    nice -n 10 .venv/bin/python benchmarks/dsrap_tables.py --episodes 3 --steps 20000
    # one process per seed, then joined (the numbers of `emulator compare --episodes 3`):
    .venv/bin/python benchmarks/dsrap_tables.py --loads heavy --seed K --out /tmp/sK        # K = 0, 1, 2
    .venv/bin/python benchmarks/dsrap_tables.py --loads heavy --episodes 3 --combine /tmp/s0,/tmp/s1,/tmp/s2 \
        --saved-only --out benchmarks/results/dsrap/heavy-3seeds

The learning approaches' tables after their last episode go to --models (default models/) as
dsrap-APPROACH-LOAD.safetensors, a checksummed artifact that `--model` loads.

The last line of stdout is one JSON object:
    {"light": {APPROACH: {"utility_rate", "cpu", "network", "hops"}}, "heavy": {...}}
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent

from emulator.drivers import make_driver  # noqa: E402
from algorithms.dsrap.config import TASK_TYPES  # noqa: E402
from emulator.scenario import get_scenario  # noqa: E402
from policy_engine.artifact import save_artifact  # noqa: E402

APPROACHES = ("greedy", "fdl", "sdl", "bdl", "centralized")
LABELS = {"greedy": "Greedy", "fdl": "FDL", "sdl": "SDL", "bdl": "BDL", "centralized": "Centralized"}
# Tables 2 and 4: utility rate, CPU, network, hops (means; the paper's deviations are across 10 runs)
PAPER = {
    "light": {"greedy": (4900, 0.62, 0.60, 1.80), "fdl": (5281, 0.60, 0.58, 3.88), "sdl": (5851, 0.74, 0.71, 1.50),
              "bdl": (5837, 0.70, 0.67, 4.30), "centralized": (6038, 0.77, 0.74, 0.00)},
    "heavy": {"greedy": (6364, 0.79, 0.76, 2.31), "fdl": (7249, 0.71, 0.69, 4.33), "sdl": (7273, 0.92, 0.89, 2.13),
              "bdl": (8719, 0.87, 0.85, 5.33), "centralized": (7700, 0.95, 0.93, 0.00)},
}
# Tables 3 and 5: abandoned tasks per type over the last 5000 steps, and the total
PAPER_ABANDONED = {
    "light": {"greedy": (1, 4889, 5319, 3618, 13828), "fdl": (18797, 8542, 9399, 515, 37255),
              "sdl": (0, 367, 284, 625, 1278), "bdl": (11046, 1867, 1605, 165, 14685),
              "centralized": (0, 0, 0, 0, 0)},
    "heavy": {"greedy": (650, 28058, 29444, 16437, 74590), "fdl": (69151, 37947, 41159, 7854, 156112),
              "sdl": (28, 20379, 20876, 15406, 56691), "bdl": (60319, 31095, 33421, 4381, 129218),
              "centralized": (276, 18662, 20839, 13943, 53722)},
}
ABANDONED_KEYS = [f"abandoned_{t.replace('-', '_')}" for t in TASK_TYPES] + ["abandoned_total"]


def save_tables(path: Path, policy, sc, seed: int, steps: int, metrics: dict) -> None:
    """The tables a learning approach ended an episode with, as a checksummed model artifact (`--model PATH` starts
    every episode from them)."""
    save_artifact(path, policy.tables.to_tensors(), {
        "policy": policy.name, "scenario": sc.name, "params": sc.describe(), "settings": policy.settings.as_dict(),
        "seed": seed, "option_seed": policy.seed, "steps": steps, "metrics": metrics,
        "command": " ".join(sys.argv)})


def run_one(load: str, approach: str, episodes: int, seed: int, steps: int, window: int, every: int,
            models: Path | None = None) -> dict:
    sc = get_scenario(f"dsrap-{load}", steps=steps, window=window, curve_every=every)
    runs = []
    t0 = time.time()
    with make_driver(approach) as driver:
        for ep in range(episodes):
            bar = tqdm(total=steps, desc=f"{load} {approach} ep {ep}", unit="step", file=sys.stderr, leave=False,
                       mininterval=5.0)
            last = [0]

            def progress(t):
                bar.update(t - last[0])
                last[0] = t

            result = sc.play(driver, seed + ep, progress)
            bar.close()
            runs.append({"metrics": result.metrics(), "curve": result.curve, "rejected": result.rejected})
            policy = driver.engine.policy
            if models is not None and getattr(policy, "tables", None) is not None and ep == episodes - 1:
                save_tables(models / f"dsrap-{approach}-{load}.safetensors", policy, sc, seed + ep, steps,
                            result.metrics())
    return {"load": load, "approach": approach, "episodes": episodes, "seed": seed, "steps": steps, "window": window,
            "curve_every": every, "seconds": time.time() - t0, "params": sc.describe(), "runs": runs}


def summary(run: dict) -> dict:
    out = {}
    for key in ["utility_rate", "cpu", "network", "hops", *ABANDONED_KEYS]:
        vals = np.asarray([r["metrics"][key] for r in run["runs"]])
        out[key] = {"mean": float(vals.mean()), "std": float(vals.std(ddof=1)) if vals.size > 1 else 0.0}
    out["episodes"] = len(run["runs"])
    return out


def table_performance(load: str, s: dict[str, dict]) -> str:
    n = 2 if load == "light" else 4
    lines = [f"Table {n} ({load} load): ours | paper",
             "| Approach | Utility rate | CPU | Network | Hops | ratio to Centralized (ours / paper) |",
             "|---|---|---|---|---|---|"]
    cen = s.get("centralized", {}).get("utility_rate", {}).get("mean")
    for a in APPROACHES:
        if a not in s:
            continue
        m, p = s[a], PAPER[load][a]
        ratio = f"{m['utility_rate']['mean'] / cen:.3f} / {p[0] / PAPER[load]['centralized'][0]:.3f}" if cen else "-"
        ur = m["utility_rate"]
        cell = f"{ur['mean']:.0f} ± {ur['std']:.0f}" if m.get("episodes", 1) > 1 else f"{ur['mean']:.0f}"
        lines.append(f"| {LABELS[a]} | {cell} | {p[0]} | "
                     f"{m['cpu']['mean']:.2f} | {p[1]:.2f} | {m['network']['mean']:.2f} | {p[2]:.2f} | "
                     f"{m['hops']['mean']:.2f} | {p[3]:.2f} | {ratio} |")
    lines[1] = ("| Approach | Utility rate | paper | CPU | paper | Network | paper | Hops | paper | "
                "utility / Centralized (ours / paper) |")
    lines[2] = "|---|---|---|---|---|---|---|---|---|---|"
    return "\n".join(lines)


def verdicts(load: str, s: dict[str, dict]) -> str:
    """Each utility-rate cell against the paper's, and the paper's claims about the order, met or missed."""
    ur = {a: s[a]["utility_rate"]["mean"] for a in APPROACHES if a in s}
    lines = [f"Against the paper ({load} load):"]
    for a, u in ur.items():
        p = PAPER[load][a][0]
        word = "met" if u >= p else "missed"
        lines.append(f"* {LABELS[a]} utility rate {u:.0f} vs the paper's {p}: **{word}** ({(u / p - 1) * 100:+.1f} %)")
    pairs = [("bdl", "sdl"), ("bdl", "fdl"), ("bdl", "greedy"), ("fdl", "greedy"), ("sdl", "greedy"),
             ("bdl", "centralized"), ("sdl", "centralized")]
    for x, y in pairs:                       # oriented as the paper ranks them under this load
        hi, lo = (x, y) if PAPER[load][x][0] > PAPER[load][y][0] else (y, x)
        if hi in ur and lo in ur:
            word = "met" if ur[hi] > ur[lo] else "missed"
            lines.append(f"* {LABELS[hi]} above {LABELS[lo]} (the paper's order): **{word}** "
                         f"({ur[hi]:.0f} vs {ur[lo]:.0f}, {(ur[hi] / ur[lo] - 1) * 100:+.1f} %)")
    if load == "light" and "centralized" in ur:
        for a in ("sdl", "bdl"):
            if a in ur:
                r = ur[a] / ur["centralized"]
                lines.append(f"* {LABELS[a]} within 3 % of Centralized (the paper's light-load finding): "
                             f"**{'met' if r >= 0.97 else 'missed'}** ({r:.3f})")
    return "\n".join(lines)


def table_abandoned(load: str, s: dict[str, dict], window: int) -> str:
    n = 3 if load == "light" else 5
    scale = 5000 / window
    lines = [f"Table {n} ({load} load): abandoned tasks over the last {window} steps"
             + (f" (x {scale:g} to compare with the paper's 5000)" if scale != 1 else "") + ", ours | paper",
             "| Approach | Ordinary | paper | IO-intense | paper | Compute-intense | paper | Demanding | paper | "
             "Total | paper |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for a in APPROACHES:
        if a not in s:
            continue
        cells = []
        for key, p in zip(ABANDONED_KEYS, PAPER_ABANDONED[load][a]):
            cells += [f"{s[a][key]['mean'] * scale:.0f}", str(p)]
        lines.append(f"| {LABELS[a]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(load: str, runs: dict[str, dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    every = next((r["curve_every"] for r in runs.values()), 1)
    for a in APPROACHES:
        if a not in runs:
            continue
        curves = np.asarray([r["curve"] for r in runs[a]["runs"]])
        x = (np.arange(curves.shape[1]) + 1) * every
        ax.plot(x, curves.mean(axis=0), label=LABELS[a])
    n = 3 if load == "light" else 6
    ax.set_title(f"Fig. {n}: utility rate under {load} task load (DSRAP)")
    ax.set_xlabel("time step")
    ax.set_ylabel(f"utility rate (mean of {every} steps)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def combine(dirs: list[Path], out: Path, loads: list[str], approaches: list[str]) -> None:
    """Join single-seed runs saved by parallel processes into one run per (load, approach)."""
    for load in loads:
        for a in approaches:
            parts = sorted((json.loads(f.read_text()) for d in dirs if (f := d / "runs" / f"{load}-{a}.json").exists()),
                           key=lambda r: r["seed"])
            if not parts:
                continue
            if len({(r["steps"], r["window"]) for r in parts}) > 1:
                raise SystemExit(f"--combine: {load} {a}: runs of different lengths")
            seeds = [r["seed"] + i for r in parts for i in range(r["episodes"])]
            if seeds != list(range(seeds[0], seeds[0] + len(seeds))):
                raise SystemExit(f"--combine: {load} {a}: seeds {seeds} are not consecutive")
            joined = {**parts[0], "episodes": len(seeds), "seconds": sum(r["seconds"] for r in parts),
                      "runs": [x for r in parts for x in r["runs"]]}
            (out / "runs" / f"{load}-{a}.json").write_text(json.dumps(joined))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--episodes", type=int, default=1, help="seeded episodes per approach and load (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=10_000, help="steps per episode (default 10000; the paper 200000)")
    p.add_argument("--window", type=int, default=5_000, help="the tables' last steps (default 5000, the paper's)")
    p.add_argument("--curve-every", type=int, default=250)
    p.add_argument("--loads", default="light,heavy")
    p.add_argument("--approaches", default=",".join(APPROACHES))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dsrap"))
    p.add_argument("--models", default=str(ROOT / "models"),
                   help="where the learning approaches' final tables go (dsrap-APPROACH-LOAD.safetensors); "
                        "'' saves none")
    p.add_argument("--combine", default="",
                   help="comma-separated OUT directories of runs with other seeds (parallel processes): their saved "
                        "runs are joined, in seed order, into OUT/runs before the tables are built")
    p.add_argument("--reuse-summary", default="", metavar="SUMMARY_JSON",
                   help="take the approaches that have no run in OUT/runs from this earlier summary.json (same "
                        "seeds, steps and window; for approaches whose code has not changed since), named in the "
                        "tables as reused")
    p.add_argument("--saved-only", action="store_true",
                   help="build the tables and figures from the runs already saved under OUT/runs; run nothing")
    args = p.parse_args(argv)
    out = Path(args.out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    loads = [x for x in args.loads.split(",") if x]
    approaches = [x for x in args.approaches.split(",") if x]
    if args.combine:
        combine([Path(d) for d in args.combine.split(",") if d], out, loads, approaches)
    runs: dict[str, dict[str, dict]] = {}
    for load in loads:
        runs[load] = {}
        for a in approaches:
            f = out / "runs" / f"{load}-{a}.json"
            if f.exists():
                saved = json.loads(f.read_text())
                if (saved["episodes"], saved["seed"], saved["steps"], saved["window"]) == (
                        args.episodes, args.seed, args.steps, args.window):
                    runs[load][a] = saved
                    continue
            if args.saved_only:
                continue
            runs[load][a] = run_one(load, a, args.episodes, args.seed, args.steps, args.window, args.curve_every,
                                    Path(args.models) if args.models else None)
            tmp = f.with_suffix(".tmp")
            tmp.write_text(json.dumps(runs[load][a]))
            tmp.replace(f)
            print(f"{load} {a}: utility rate {summary(runs[load][a])['utility_rate']['mean']:.0f} "
                  f"({runs[load][a]['seconds']:.0f} s)", file=sys.stderr, flush=True)
    summaries = {load: {a: summary(r) for a, r in rs.items()} for load, rs in runs.items()}
    reused: dict[str, list[str]] = {}
    if args.reuse_summary:
        earlier = json.loads(Path(args.reuse_summary).read_text())
        if (earlier["episodes"], earlier["steps"], earlier["window"]) != (args.episodes, args.steps, args.window):
            raise SystemExit("--reuse-summary: that summary has other episodes, steps or window")
        for load in loads:
            for a in approaches:
                if a not in summaries[load] and a in earlier["summary"].get(load, {}):
                    summaries[load][a] = earlier["summary"][load][a]
                    reused.setdefault(load, []).append(a)
    text = []
    for load in loads:
        text.append(table_performance(load, summaries[load]))
        text.append(table_abandoned(load, summaries[load], args.window))
        text.append(verdicts(load, summaries[load]))
        if reused.get(load):
            text.append(f"Reused from {args.reuse_summary} ({load}): " + ", ".join(LABELS[a] for a in reused[load]))
        plot(load, runs[load], out / f"fig{3 if load == 'light' else 6}_{load}.png")
    report = "\n\n".join(text)
    (out / "tables.md").write_text(report + "\n")
    print(report)
    last = {load: {a: {k: s[k]["mean"] for k in ("utility_rate", "cpu", "network", "hops")}
                   for a, s in summaries[load].items()} for load in loads}
    (out / "summary.json").write_text(json.dumps({"summary": summaries, "episodes": args.episodes,
                                                  "steps": args.steps, "window": args.window, "reused": reused},
                                                 indent=1))
    print(json.dumps(last))
    return 0


if __name__ == "__main__":
    sys.exit(main())
