"""Tables 3-6 and Figs. 7-10 of RL-LSFC (Liu, Wang, Quan, ICPP 2020), reproduced with the shipped models.

Every row plays the same 50 test episodes of 1000 jobs (episode i uses workload seed `--seed + i` for every policy;
training and validation never used these seeds) and prints our numbers beside the paper's:

* Table 3: RL-LSFC vs MAF, Uniform arrivals, b = 33 (the training workload);
* Table 4: the same model at b = 36 and b = 40 (less stressed);
* Table 5: the same model on Bernoulli and Beta arrivals;
* Table 6: RL-LSFC vs RL-LSFCb (other objective weighting) vs RL-FC (fully connected, trained on the same scenario)
  vs MAF, at b = 33 (the paper used another 50 episodes there; we reuse Table 3's).

TMDL, AJER and S_log are means over the episodes (S_log per episode, then averaged: the paper's MAF row at b = 33,
TMDL 343.84 / AJER 93.22, has S = -4.8 yet S_log -0.28, so it is not S_log of the means). F/S/N counts the
episodes where a model beats MAF in both, one or neither of TMDL and AJER. A row "reaches" the paper's when our
model's gains over our MAF are at least the paper's over its MAF: TMDL ratio MAF/RL, AJER drop, S_log, and F.
The per-episode plots (Fig. 7-10 style) sort episodes by MAF's S_log, descending.

    .venv/bin/python benchmarks/rl_lsfc_tables.py                 # all tables, shipped models
    .venv/bin/python benchmarks/rl_lsfc_tables.py --tables 3 --episodes 10

The last line of stdout is one JSON object: {"tables": {"b33": {"rl-lsfc": {"tmdl", "ajer", "s_log", "fsn"},
"maf": {...}}, "b36": ..., "b40": ..., "bernoulli": ..., "beta": ..., "models": ...}, ...}.
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
from emulator.learners.common import write_json  # noqa: E402
from emulator.multicluster.metrics import fsn_002, ratio  # noqa: E402
from emulator.scenario import get_scenario  # noqa: E402
from policy_engine.artifact import load_artifact  # noqa: E402

# The paper's Tables 3-6: (TMDL, AJER, S_log, F/S/N against MAF).
PAPER = {
    "b33": {"rl-lsfc": (61.70, 90.30, 2.57, (46, 4, 0)), "maf": (343.84, 93.22, -0.28, None)},
    "b36": {"rl-lsfc": (37.66, 88.32, 2.73, (50, 0, 0)), "maf": (311.44, 92.35, 0.87, None)},
    "b40": {"rl-lsfc": (19.76, 87.12, 2.79, (50, 0, 0)), "maf": (276.1, 91.95, 1.55, None)},
    "bernoulli": {"rl-lsfc": (13.32, 86.67, 2.81, (50, 0, 0)), "maf": (243.18, 91.75, 1.92, None)},
    "beta": {"rl-lsfc": (39.14, 88.68, 2.71, (50, 0, 0)), "maf": (295.66, 92.41, 1.11, None)},
    "models": {"rl-lsfc": (36.84, 88.71, 2.71, (50, 0, 0)), "rl-lsfcb": (14.74, 90.13, 2.67, (49, 1, 0)),
               "rl-fc": (15.28, 92.79, 2.24, (29, 21, 0)), "maf": (305.02, 92.67, 0.65, None)},
}
# table key -> (paper table, scenario, scenario parameters, policies)
ROWS = {
    "b33": ("Table 3", "hetero-elastic-uniform", {}, ("rl-lsfc", "maf")),
    "b36": ("Table 4 (a)-(c)", "hetero-elastic-uniform", {"b": 36}, ("rl-lsfc", "maf")),
    "b40": ("Table 4 (d)-(f)", "hetero-elastic-uniform", {"b": 40}, ("rl-lsfc", "maf")),
    "bernoulli": ("Table 5 (a)-(c)", "hetero-elastic-bernoulli", {}, ("rl-lsfc", "maf")),
    "beta": ("Table 5 (d)-(f)", "hetero-elastic-beta", {}, ("rl-lsfc", "maf")),
    "models": ("Table 6", "hetero-elastic-uniform", {}, ("rl-lsfc", "rl-lsfcb", "rl-fc", "maf")),
}
TABLE_OF = {"3": ("b33",), "4": ("b36", "b40"), "5": ("bernoulli", "beta"), "6": ("models",)}
LABEL = {"rl-lsfc": "RL-LSFC", "rl-lsfcb": "RL-LSFCb", "rl-fc": "RL-FC", "maf": "MAF"}
SERVED_BY = {"rl-lsfc": "rl-lsfc", "rl-lsfcb": "rl-lsfc", "rl-fc": "rl-fc", "maf": "maf"}


def shown(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def summary(eps: list[dict], base: list[dict] | None) -> dict:
    row = {"tmdl": float(np.mean([e["tmdl"] for e in eps])), "ajer": float(np.mean([e["ajer"] for e in eps])),
           "s_log": float(np.mean([e["s_log"] for e in eps]))}
    row["fsn"] = fsn_002(eps, base) if base is not None else None
    return row


def reaches(ours: dict, our_maf: dict, paper: tuple, paper_maf: tuple) -> dict:
    """Does our model gain at least as much over our MAF as the paper's over its MAF?"""
    checks = {
        "tmdl_ratio": (ratio(our_maf["tmdl"], ours["tmdl"]), ratio(paper_maf[0], paper[0])),
        "ajer_drop": (our_maf["ajer"] - ours["ajer"], paper_maf[1] - paper[1]),
        "s_log": (ours["s_log"], paper[2]),
        "f": (ours["fsn"]["f"], paper[3][0]),
    }
    out = {k: {"ours": a, "paper": b, "reached": bool(a >= b)} for k, (a, b) in checks.items()}
    out["all"] = all(v["reached"] for v in out.values())
    return out


def run_row(key: str, models: dict[str, Path], checksums: dict[str, str], episodes: int, seed: int,
            progress: bool, cache_dir: Path) -> dict:
    """One table row. Each policy's episodes are kept in `cache_dir`, keyed by scenario, parameters, policy, model
    checksum, seed and episode count: a rerun (another table sharing the row, several runs in parallel, a new model
    for one column) plays only what it has not played yet."""
    table, scenario_name, params, policies = ROWS[key]
    policies = tuple(p for p in policies if p == "maf" or p in models)   # Table 6 without a model it lacks
    scenario = get_scenario(scenario_name, **params)
    per_episode, seconds = {}, {}
    for pol in policies:
        tag = "-".join(f"{k}{v}" for k, v in sorted(params.items())) or "default"
        cached = cache_dir / (f"{scenario_name}-{tag}-{SERVED_BY[pol]}-{checksums.get(pol, 'rule')[:16]}-s{seed}-"
                              f"n{episodes}.json")
        if cached.exists():
            per_episode[pol] = json.loads(cached.read_text())
            continue
        t0 = time.perf_counter()
        model = str(models[pol]) if pol in models else None
        per_episode[pol] = run_policy(scenario, SERVED_BY[pol], episodes, seed, model=model, progress=progress)
        seconds[pol] = round(time.perf_counter() - t0, 1)
        write_json(cached, per_episode[pol])
    base = per_episode["maf"]
    rows = {pol: summary(per_episode[pol], None if pol == "maf" else base) for pol in policies}
    verdict = {pol: reaches(rows[pol], rows["maf"], PAPER[key][pol], PAPER[key]["maf"])
               for pol in policies if pol != "maf"}
    return {"table": table, "scenario": scenario_name, "params": params, "rows": rows, "reaches_paper": verdict,
            "seconds": seconds, "episodes": per_episode}


def fmt_fsn(f) -> str:
    return "-" if f is None else (f"{f['f']}/{f['s']}/{f['n']}" if isinstance(f, dict) else "/".join(map(str, f)))


def print_row(key: str, r: dict) -> None:
    params = ", ".join(f"{k}={v}" for k, v in r["params"].items()) or "b=33" if "uniform" in r["scenario"] else ""
    print(f"\n{r['table']}: {r['scenario']} {params}".rstrip())
    print(f"{'':<9} {'TMDL (L)':>9} {'AJER (L)':>9} {'S_log (H)':>9} {'F/S/N':>8}   | paper: {'TMDL':>7} "
          f"{'AJER':>6} {'S_log':>6} {'F/S/N':>8}")
    for pol, row in r["rows"].items():
        p = PAPER[key][pol]
        print(f"{LABEL[pol]:<9} {row['tmdl']:>9.2f} {row['ajer']:>9.2f} {row['s_log']:>9.2f} "
              f"{fmt_fsn(row['fsn']):>8}   |        {p[0]:>7.2f} {p[1]:>6.2f} {p[2]:>6.2f} {fmt_fsn(p[3]):>8}")
    for pol, v in r["reaches_paper"].items():
        missed = [k for k, c in v.items() if k != "all" and not c["reached"]]
        print(f"  {LABEL[pol]}: " + ("reaches the paper's gains over MAF" if v["all"] else
                                      "missed: " + ", ".join(f"{k} {v[k]['ours']:.2f} vs paper {v[k]['paper']:.2f}"
                                                             for k in missed)))


def plot_rows(results: dict, keys: list[str], path: Path, title: str) -> None:
    """Figs. 7-10 style: TMDL, AJER and S_log per test episode, episodes sorted by MAF's S_log (descending)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [k for k in keys if k in results]
    if not keys:
        return
    fig, axes = plt.subplots(len(keys), 3, figsize=(13, 3.1 * len(keys)), squeeze=False)
    for row, key in enumerate(keys):
        r = results[key]
        maf = r["episodes"]["maf"]
        order = np.argsort([-e["s_log"] for e in maf], kind="stable")
        x = np.arange(1, len(order) + 1)
        for col, (metric, name) in enumerate((("tmdl", "TMDL (lower is better)"), ("ajer", "AJER (lower is better)"),
                                              ("s_log", "S_log (higher is better)"))):
            ax = axes[row][col]
            for i, (pol, eps) in enumerate(r["episodes"].items()):
                ax.plot(x, [eps[j][metric] for j in order], "o-" if pol != "maf" else "s--", ms=2.5, lw=1,
                        color="black" if pol == "maf" else f"C{i}", label=LABEL[pol])
            ax.set_title(f"{r['table']} {key}: {name}", fontsize=9)
            ax.set_xlabel("test episode (sorted by MAF's S_log)", fontsize=8)
            ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def check_model(path: Path, name: str) -> dict:
    if not path.exists():
        raise SystemExit(f"rl_lsfc_tables: no {name} model at {path}; train one with `emulator train --scenario "
                         f"hetero-elastic-uniform --algo {SERVED_BY[name]} --out runs/{name}` (see README)")
    _, meta = load_artifact(path, policy=SERVED_BY[name])
    return {"path": shown(path), "episodes_trained": meta.get("episodes_trained"),
            "train_seconds": meta.get("train_seconds"), "wall_seconds": meta.get("wall_seconds"),
            "selected": meta.get("selected"), "checksum": meta.get("checksum"),
            "weights": meta.get("hyperparameters", {}).get("weights")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lsfc", default=str(ROOT / "models" / "rl-lsfc-uniform.safetensors"), help="RL-LSFC model")
    p.add_argument("--lsfcb", default=str(ROOT / "models" / "rl-lsfcb-uniform.safetensors"),
                   help="RL-LSFCb model (Table 6)")
    p.add_argument("--rlfc", default=str(ROOT / "models" / "rl-fc-hetero-uniform.safetensors"),
                   help="RL-FC model trained on hetero-elastic-uniform (Table 6; left out of it when absent or '')")
    p.add_argument("--tables", default="3,4,5,6", help="comma-separated subset of 3,4,5,6")
    p.add_argument("--episodes", type=int, default=50, help="test episodes per row (default 50, as the paper)")
    p.add_argument("--seed", type=int, default=0, help="workload seed of test episode 0 (default 0)")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "rl_lsfc"),
                   help="where the JSON and PNGs go")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)

    tables = [t for t in args.tables.split(",") if t]
    bad = sorted(set(tables) - set(TABLE_OF))
    if bad:
        raise SystemExit(f"rl_lsfc_tables: unknown table(s) {bad}; valid: 3, 4, 5, 6")
    if args.episodes < 1:
        raise SystemExit("rl_lsfc_tables: --episodes must be at least 1")
    models = {"rl-lsfc": Path(args.lsfc)}
    missing = {}
    if "6" in tables:
        for name, path in (("rl-lsfcb", args.lsfcb), ("rl-fc", args.rlfc)):
            if path and Path(path).exists():
                models[name] = Path(path)
            else:   # Table 6 is still worth its other columns; the JSON and the table say what is left out
                missing[name] = path or "(not given)"
                print(f"rl_lsfc_tables: Table 6 without {LABEL[name]}: no model at {path!r}", file=sys.stderr)
    model_info = {name: check_model(path, name) for name, path in models.items()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    print(f"RL-LSFC Tables 3-6: {args.episodes} test episodes of 1000 jobs per row, seeds {args.seed}.."
          f"{args.seed + args.episodes - 1}; F/S/N against MAF on the same episodes")
    results = {}
    checksums = {name: info["checksum"] for name, info in model_info.items()}
    for t in tables:
        for key in TABLE_OF[t]:
            results[key] = run_row(key, models, checksums, args.episodes, args.seed, not args.no_progress,
                                   out / "episodes")
            print_row(key, results[key])
    figures = {}
    for name, keys, title in (("fig7", ["b33"], "Fig. 7: RL-LSFC vs MAF, b = 33"),
                              ("fig8_9", ["b36", "b40", "bernoulli", "beta"],
                               "Figs. 8-9: the b = 33 model on less stressed workloads and other arrival patterns"),
                              ("fig10", ["models"], "Fig. 10: RL-LSFC, RL-LSFCb, RL-FC and MAF")):
        path = out / f"rl_lsfc_{name}.png"
        plot_rows(results, keys, path, title)
        if path.exists() and any(k in results for k in keys):
            figures[name] = shown(path)
    tables_json = {key: r["rows"] for key, r in results.items()}
    summary_json = {"benchmark": "rl_lsfc_tables", "episodes": args.episodes, "seed": args.seed,
                    "tables": tables_json, "paper": {k: {pol: {"tmdl": v[0], "ajer": v[1], "s_log": v[2],
                                                                 "fsn": v[3]} for pol, v in rows.items()}
                                                     for k, rows in PAPER.items() if k in results},
                    "reaches_paper": {key: {pol: v["all"] for pol, v in r["reaches_paper"].items()}
                                      for key, r in results.items()},
                    "beats_maf": {key: {pol: row["tmdl"] < r["rows"]["maf"]["tmdl"]
                                        and row["ajer"] < r["rows"]["maf"]["ajer"]
                                        and row["s_log"] > r["rows"]["maf"]["s_log"]
                                        for pol, row in r["rows"].items() if pol != "maf"}
                                  for key, r in results.items()},
                    "models": model_info, "missing_models": missing, "figures": figures,
                    "seconds": {key: r["seconds"] for key, r in results.items()}}
    (out / "rl_lsfc_tables.json").write_text(json.dumps(
        {**summary_json, "details": {k: {kk: vv for kk, vv in r.items() if kk != "episodes"}
                                     for k, r in results.items()},
         "per_episode": {k: r["episodes"] for k, r in results.items()}}, indent=1, default=str))
    print(json.dumps(summary_json, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
