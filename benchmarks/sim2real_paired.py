"""Paired job-time differences of a real_locality results file: each learned policy against FIFO, Delay and ACL,
pairing the runs of the same rotation round (run r of every policy ran back to back, the order rotated), with a
Student-t 95 % interval of the mean difference. Writes <results>-paired.{json,png} beside it; last line of stdout:
one JSON object.

    .venv/bin/python benchmarks/sim2real_paired.py benchmarks/results/real_locality/real_locality-<stamp>.json
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

# two-sided 95 % Student-t quantiles by degrees of freedom (scipy is not a dependency)
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t95(df: int) -> float:
    return T95.get(df) or T95[max(k for k in T95 if k <= df)] if df >= 1 else float("nan")


def paired(a: list[float], b: list[float]) -> dict:
    d = [x - y for x, y in zip(a, b)]
    n = len(d)
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1)) if n > 1 else float("nan")
    half = t95(n - 1) * sd / math.sqrt(n) if n > 1 else float("nan")
    return {"n": n, "mean": mean, "sd": sd, "ci95": [mean - half, mean + half],
            "excludes_zero": bool(n > 1 and (mean - half > 0 or mean + half < 0)), "differences": d}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[0])
    doc = json.loads(path.read_text())
    out = {"source": path.name, "experiments": {}}
    for key, exp in doc["experiments"].items():
        pols = exp["policies"]
        learned = [p for p in pols if p in ("clqlmrs",)]
        res = {}
        for lp in learned:
            for base in (p for p in pols if p != lp):
                for metric in ("job_time_s", "makespan_s"):
                    a = [r[metric] for r in pols[lp]["per_run"]]
                    b = [r[metric] for r in pols[base]["per_run"]]
                    res[f"{lp}-{base}:{metric}"] = paired(a, b)
        out["experiments"][key] = res
        for k, v in res.items():
            print(f"{key} {k}: mean {v['mean']:+.1f} s, 95 % CI [{v['ci95'][0]:+.1f}, {v['ci95'][1]:+.1f}] "
                  f"(n={v['n']}){' excludes 0' if v['excludes_zero'] else ''}", file=sys.stderr)
    stem = path.with_suffix("")
    Path(f"{stem}-paired.json").write_text(json.dumps(out, indent=1) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        exps = list(out["experiments"].items())
        fig, axes = plt.subplots(1, len(exps), figsize=(6 * len(exps), 3.8), squeeze=False)
        for ax, (key, res) in zip(axes[0], exps):
            items = [(k.split(":")[0], v) for k, v in res.items() if k.endswith("job_time_s")]
            for i, (name, v) in enumerate(items):
                ax.errorbar(v["mean"], i, xerr=[[v["mean"] - v["ci95"][0]], [v["ci95"][1] - v["mean"]]], fmt="o",
                            capsize=4)
            ax.axvline(0, color="k", lw=0.8)
            ax.set_yticks(range(len(items)), [n for n, _ in items])
            ax.set_xlabel("paired difference of mean job time (s), 95 % CI\n< 0: the learned policy is faster")
            ax.set_title(key)
        fig.tight_layout()
        fig.savefig(f"{stem}-paired.png", dpi=110)
    except ImportError:
        pass
    print(json.dumps({k: {kk: {"mean": vv["mean"], "ci95": vv["ci95"], "excludes_zero": vv["excludes_zero"]}
                          for kk, vv in v.items()} for k, v in out["experiments"].items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
