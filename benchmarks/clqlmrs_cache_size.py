"""CLQLMRS, Fig. 5: cache locality vs cache size (2, 4, 6, 8 GB) for FIFO, ACL C = 2 and C = 5 and CLQLMRS.

    .venv/bin/python benchmarks/clqlmrs_cache_size.py [--eval-episodes 10] [--train-episodes 300]

WordCount with 100 maps per job (the emulator's other defaults: four runs 5 s apart), so that even 8 GB of cache
holds only part of the 12.8 GB input. Writes clqlmrs_fig5_cache_size.png in --out; the last stdout line is JSON.
See clqlmrs_common.py for the protocol (training per setting, held-out seeds).
"""

from __future__ import annotations

import sys
import time

import clqlmrs_common as C

CACHE_GB = [2, 4, 6, 8]
FIXED = {"maps": 100}


def main() -> None:
    t0 = time.perf_counter()
    args = C.parse_args(__doc__)
    transfer = C.transfer_model(args)
    rows = {}
    for gb in CACHE_GB:
        params = {**FIXED, "cache_gb": gb}
        rows[gb] = C.evaluate("wordcount", params,
                              C.lineup("wordcount", params, args, transfer, acl={"acl-c2": 2, "acl-c5": 5}), args)
        print(f"cache {gb} GB: " + ", ".join(f"{k} {v['cache_locality']:.3f}" for k, v in rows[gb].items()),
              file=sys.stderr)
    labels = list(rows[CACHE_GB[0]])
    series = {lab: [rows[gb][lab]["cache_locality"] for gb in CACHE_GB] for lab in labels}
    png = args.out / "clqlmrs_fig5_cache_size.png"
    C.plot_lines(png, CACHE_GB, series, "cache size (GB, cluster total)", "cache locality rate",
                 "Fig. 5: cache locality vs cache size (WordCount, 100 maps)")
    gain_4_to_8 = {lab: 100 * (series[lab][3] - series[lab][1]) for lab in labels}
    C.finish({"benchmark": "clqlmrs_fig5_cache_size", "app": "wordcount", "params": FIXED, "cache_gb": CACHE_GB,
              "eval_episodes": args.eval_episodes, "train_episodes": args.train_episodes,
              "cache_locality": series, "cache_locality_points_gained_4_to_8_gb": gain_4_to_8,
              "paper_points_gained_4_to_8_gb": {"fifo": 3, "acl-c2": 17, "acl-c5": 25, "clqlmrs": 24},
              "job_time_s": {lab: [rows[gb][lab]["job_time_s"] for gb in CACHE_GB] for lab in labels},
              "png": str(png)}, t0)


if __name__ == "__main__":
    main()
