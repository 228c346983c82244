"""Held-out validation of `emulator calibrate` on the committed shaped container-cluster runs.

Calibrates the node-heartbeat emulator on some real_locality results and predicts the others: another workload
(WordCount -> Sort, Sort -> WordCount) and another input layout and seed (WordCount and Sort on the spread input ->
WordCount on the inputs that sat on one or two workers, seeds 1 and 2). Per held-out (experiment, policy): measured
and predicted mean job time and makespan, the error, and whether the ranking of policies by job time is kept (the
orders the cluster's runs separate: means apart by more than twice the standard error of the difference). Also
writes the calibration fitted on every shaped run, the one `--calibration` uses (models/). `--with-sort-r5` adds
the 5-run Sort (with job phases) and writes validation-with-sort-r5.* instead.

    OMP_NUM_THREADS=1 nice -n 19 .venv/bin/python benchmarks/sim2real_validation.py

Last line of stdout: one JSON object (errors per split). Files: benchmarks/results/sim2real/validation.{json,md,png}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from emulator.calibration import (calibrate, format_rows, load_points, predict,  # noqa: E402
                                  ranking_preserved, residual_table)
from emulator.yarn.timing import TimeModel  # noqa: E402

REAL = ROOT / "benchmarks" / "results" / "real_locality"
OUT = ROOT / "benchmarks" / "results" / "sim2real"
WC = [REAL / f"real_locality-docker-wordcount-4mb-rep1-egress5mbit-r{r}.json" for r in (3, 1, 2)]
SORT = [REAL / "real_locality-docker-sort-4mb-rep1-egress5mbit-r3.json"]
# --with-sort-r5: also the 5-run Sort (session 29), whose jobs carry their JobHistory phases
SORT_R5 = REAL / "real_locality-docker-sort-4mb-rep1-egress5mbit-r5.json"


def splits(sort: list[Path]) -> dict:
    out = {
        "workload: WordCount -> Sort": (WC, sort),
        "workload: Sort -> WordCount": (sort, WC),
        "layout and seed: spread input (seed 3) -> one- and two-worker inputs (seeds 1, 2)": (WC[:1] + sort, WC[1:]),
    }
    if SORT_R5 in sort:   # every point with phases: AM start-up and commit pinned to their measured medians
        out["workload: Sort with job phases -> WordCount"] = ([SORT_R5], WC)
    return out
MAX_LOAD = 30.0  # runs that ended at a higher 1-min load average measured the shared machine, not the cluster


def uncalibrated_rows(paths, episodes):
    """The emulator as real_locality ran it before calibration (its 32 MB blocks and scaled link cap, random block
    placement, default time model): the 'emulator' column of the results files."""
    out = []
    for path in paths:
        doc = json.loads(Path(path).read_text())
        for key, exp in doc["experiments"].items():
            for policy, pol in exp["policies"].items():
                runs = [r for r in pol["per_run"] if r.get("load_average", 0) <= MAX_LOAD]
                if not runs:
                    continue
                jt = float(np.mean([r["job_time_s"] for r in runs]))
                mk = float(np.mean([r["makespan_s"] for r in runs]))
                e = pol["emulator"]
                out.append({"source": Path(path).name, "experiment": key, "policy": policy,
                            "job_time_err": e["job_time_s"]["mean"] / jt - 1,
                            "makespan_err": e["makespan_s"]["mean"] / mk - 1})
    return out


def summary(rows):
    errs = np.array([[r["job_time_err"], r["makespan_err"]] for r in rows])
    return {"max_abs_job_time_err": float(np.abs(errs[:, 0]).max()),
            "max_abs_makespan_err": float(np.abs(errs[:, 1]).max()),
            "mean_abs_err": float(np.abs(errs).mean()),
            "within_25pct": int((np.abs(errs) <= 0.25).all(axis=1).sum()), "points": len(rows)}


def plot(splits: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(splits), figsize=(5 * len(splits), 4.6))
    for ax, (name, s) in zip(np.atleast_1d(axes), splits.items()):
        for r in s["held_out"]:
            for metric, marker in (("job_time_s", "o"), ("makespan_s", "s")):
                ax.scatter(r[metric], r[f"{metric}_pred"], marker=marker, zorder=3,
                           color={"fifo": "tab:red", "delay": "tab:blue", "acl": "tab:green",
                                  "clqlmrs": "tab:purple"}.get(r["policy"], "k"),
                           label=f"{r['policy']} {metric[:-2].replace('_', ' ')}")
        hi = max(max(r["job_time_s"], r["makespan_s"], r["job_time_s_pred"], r["makespan_s_pred"])
                 for r in s["held_out"]) * 1.1
        xs = np.linspace(0, hi, 10)
        ax.plot(xs, xs, "k-", lw=0.8)
        ax.fill_between(xs, xs * 0.75, xs * 1.25, color="0.9", label="±25 %", zorder=0)
        ax.set_xlabel("measured on the shaped container cluster (s)")
        ax.set_ylabel("calibrated emulator (s)")
        ax.set_title(name.split(":")[0] + ":\n" + name.split(":")[1].strip(), fontsize=9)
        handles, labels = ax.get_legend_handles_labels()
        uniq = dict(zip(labels, handles))
        ax.legend(uniq.values(), uniq.keys(), fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--episodes", type=int, default=5, help="emulator episodes per prediction (default 5)")
    p.add_argument("--max-evaluations", type=int, default=60, help="fit budget per calibration (default 60)")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--calibration-out", type=Path, default=None,
                   help="default models/calibration-docker-egress5.json (with --with-sort-r5: "
                        "results/sim2real/calibration-all-with-sort-r5.json)")
    p.add_argument("--with-sort-r5", action="store_true",
                   help="add the 5-run Sort (job phases) to the Sort set and as its own split; files "
                        "validation-with-sort-r5.*")
    args = p.parse_args(argv)
    sort = SORT + [SORT_R5] if args.with_sort_r5 else SORT
    stem = "validation-with-sort-r5" if args.with_sort_r5 else "validation"
    if args.calibration_out is None:
        args.calibration_out = (args.out / "calibration-all-with-sort-r5.json" if args.with_sort_r5
                                else ROOT / "models" / "calibration-docker-egress5.json")
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    result = {"episodes": args.episodes, "max_load": MAX_LOAD, "splits": {}}
    md = []
    for name, (train, test) in splits(sort).items():
        print(f"== {name}", file=sys.stderr)
        doc = calibrate(train, args.episodes, max_load=MAX_LOAD, progress=True, max_nfev=args.max_evaluations)
        points, shape, _ = load_points(test, MAX_LOAD)
        assert shape == doc["shape"], (shape, doc["shape"])
        rows = residual_table(points, TimeModel.from_dict(doc["times"]), args.episodes)
        rank = ranking_preserved(rows)
        before = summary(uncalibrated_rows(test, args.episodes))
        result["splits"][name] = {"train": [Path(x).name for x in train], "test": [Path(x).name for x in test],
                                  "times": doc["times"], "fit_residuals": doc["residuals"], "fit": doc["fit"],
                                  "held_out": rows, "ranking": rank, "summary": summary(rows),
                                  "uncalibrated_summary": before}
        md += [f"**{name}** (calibrated on {', '.join(Path(x).name for x in train)}; "
               f"s_am + s_commit {doc['times']['am_startup_s'] + doc['times']['commit_s']:.1f} s, "
               f"s_task {doc['times']['task_startup_s']:.2f} s, g {doc['times']['cpu_factor']:.2f}, "
               f"k {doc['times']['link_efficiency']:.3f})", "", format_rows(rows), ""]
        for exp, r in rank.items():
            md.append(f"* ranking {exp}: cluster {' < '.join(r['cluster'])}; emulator {' < '.join(r['emulator'])}; "
                      f"{r['kept']}/{r['separated_pairs']} orders the runs separate kept")
        s = result["splits"][name]["summary"]
        md += [f"* within 25 %: {s['within_25pct']}/{s['points']} (job time and makespan); largest error: job time "
               f"{s['max_abs_job_time_err']:.0%}, makespan {s['max_abs_makespan_err']:.0%}; the uncalibrated "
               f"emulator's largest: job time {before['max_abs_job_time_err']:.0%}, makespan "
               f"{before['max_abs_makespan_err']:.0%}", ""]
        print("\n".join(md[-8:]), file=sys.stderr)
    print("== every shaped run (the calibration --calibration uses)", file=sys.stderr)
    full = calibrate(WC + sort, args.episodes, max_load=MAX_LOAD, progress=True, max_nfev=args.max_evaluations)
    args.calibration_out.parent.mkdir(parents=True, exist_ok=True)
    args.calibration_out.write_text(json.dumps(full, indent=1) + "\n")
    result["full"] = {"file": str(args.calibration_out.resolve().relative_to(ROOT)), "times": full["times"],
                      "residuals": full["residuals"], "ranking": full["ranking_preserved"],
                      "summary": summary(full["residuals"]), "fit": full["fit"]}
    md += [f"**All shaped runs** (`{result['full']['file']}`)", "", format_rows(full["residuals"]), ""]
    result["seconds"] = round(time.perf_counter() - t0, 1)
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / f"{stem}.md").write_text("\n".join(md) + "\n")
    plot(result["splits"], args.out / f"{stem}.png")
    print("\n".join(md))
    print(json.dumps({"splits": {k: v["summary"] | {"ranking_kept": all(r["preserved"] for r in v["ranking"].values())}
                                 for k, v in result["splits"].items()},
                      "full": result["full"]["summary"], "seconds": result["seconds"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
