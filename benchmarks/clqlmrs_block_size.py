"""CLQLMRS, Fig. 6: local-task rate vs HDFS block size (64, 128, 256 MB) for FIFO, Delay, ACL and CLQLMRS.

    .venv/bin/python benchmarks/clqlmrs_block_size.py [--eval-episodes 10] [--train-episodes 300]

WordCount, three jobs of 50 maps 5 s apart, 8 GB of cache (the setting of benchmarks/locality_figures.py, so the
baselines match that benchmark). Writes clqlmrs_fig6_block_size.png in --out; the last stdout line is JSON.
"""

from __future__ import annotations

import sys
import time

import clqlmrs_common as C

BLOCK_MB = [64, 128, 256]
FIXED = {"maps": 50, "jobs": 3, "interarrival_s": 5, "cache_gb": 8}


def main() -> None:
    t0 = time.perf_counter()
    args = C.parse_args(__doc__)
    transfer = C.transfer_model(args)
    rows = {}
    for mb in BLOCK_MB:
        params = {**FIXED, "block_mb": mb}
        rows[mb] = C.evaluate("wordcount", params, C.lineup("wordcount", params, args, transfer), args)
        print(f"block {mb} MB: " + ", ".join(f"{k} {v['local_task_rate']:.3f}" for k, v in rows[mb].items()),
              file=sys.stderr)
    labels = list(rows[BLOCK_MB[0]])
    series = {lab: [rows[mb][lab]["local_task_rate"] for mb in BLOCK_MB] for lab in labels}
    png = args.out / "clqlmrs_fig6_block_size.png"
    C.plot_lines(png, BLOCK_MB, series, "HDFS block size (MB)", "local-task rate",
                 "Fig. 6: local-task rate vs block size (WordCount)")
    C.finish({"benchmark": "clqlmrs_fig6_block_size", "app": "wordcount", "params": FIXED, "block_mb": BLOCK_MB,
              "eval_episodes": args.eval_episodes, "train_episodes": args.train_episodes,
              "local_task_rate": series,
              "cache_locality": {lab: [rows[mb][lab]["cache_locality"] for mb in BLOCK_MB] for lab in labels},
              "job_time_s": {lab: [rows[mb][lab]["job_time_s"] for mb in BLOCK_MB] for lab in labels},
              "png": str(png)}, t0)


if __name__ == "__main__":
    main()
