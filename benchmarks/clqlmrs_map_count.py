"""CLQLMRS, Fig. 7 and Table 4: local-task rate and cache / data / rack locality vs number of maps (10-100).

    .venv/bin/python benchmarks/clqlmrs_map_count.py [--eval-episodes 10] [--train-episodes 300] [--cache-gb 8]

WordCount, the emulator's default four runs 5 s apart, with an 8 GB cache by default: Table 4's 55 % cache
locality at 100 maps needs a cache that can hold over half of the 12.8 GB input (2 GB, the emulator's default,
caps cache locality at 16 % there). Writes clqlmrs_fig7_map_count.png in --out (Fig. 7 and the Table 4 levels);
the last stdout line is JSON with Table 4 as {policy: {maps: {cache, data, rack}}}.
"""

from __future__ import annotations

import sys
import time

import clqlmrs_common as C

MAPS = [10, 20, 30, 40, 50, 100]


def main() -> None:
    t0 = time.perf_counter()
    args = C.parse_args(__doc__, extra=lambda p: p.add_argument(
        "--cache-gb", type=float, default=8.0, help="cluster cache, GB (default %(default)s)"))
    cache_gb = args.cache_gb
    transfer = C.transfer_model(args)
    rows = {}
    for maps in MAPS:
        params = {"maps": maps, "cache_gb": cache_gb}
        rows[maps] = C.evaluate("wordcount", params, C.lineup("wordcount", params, args, transfer), args)
        print(f"{maps} maps: " + ", ".join(f"{k} {v['local_task_rate']:.3f}/{v['cache_locality']:.3f}"
                                           for k, v in rows[maps].items()), file=sys.stderr)
    labels = list(rows[MAPS[0]])
    series = {lab: [rows[m][lab]["local_task_rate"] for m in MAPS] for lab in labels}
    table4 = {lab: {m: {"cache": round(rows[m][lab]["cache_locality"], 4),
                        "data": round(rows[m][lab]["cache_locality"] + rows[m][lab]["data_locality"], 4),
                        "rack": round(1.0 - rows[m][lab]["off_rack"], 4)} for m in MAPS} for lab in labels}

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for lab in labels:
        axes[0].plot(MAPS, series[lab], marker="o", label=lab)
        axes[1].plot(MAPS, [rows[m][lab]["cache_locality"] for m in MAPS], marker="o", label=lab)
    axes[0].set(xlabel="map tasks per job", ylabel="local-task rate (cache + data)", title="Fig. 7")
    axes[1].set(xlabel="map tasks per job", ylabel="cache locality", title="Table 4: cache locality")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"WordCount, 4 runs 5 s apart, {cache_gb:g} GB cache")
    fig.tight_layout()
    png = args.out / "clqlmrs_fig7_map_count.png"
    fig.savefig(png, dpi=110)
    plt.close(fig)
    at100 = rows[100]["clqlmrs"]["cache_locality"]
    C.finish({"benchmark": "clqlmrs_fig7_table4_map_count", "app": "wordcount", "cache_gb": cache_gb, "maps": MAPS,
              "eval_episodes": args.eval_episodes, "train_episodes": args.train_episodes,
              "local_task_rate": series, "table4": table4,
              "paper_table4_cache_at_100_maps": {"fifo": 0.25, "delay": 0.35, "acl": 0.46, "clqlmrs": 0.55},
              "target_cache_locality_at_100_maps": {"clqlmrs": at100, "target": 0.55, "met": at100 >= 0.55},
              "png": str(png)}, t0)


if __name__ == "__main__":
    main()
