"""CLQLMRS's figures 5-7 and DeepRM's comparison on the emulator, plus emulator speed.

    .venv/bin/python benchmarks/locality_figures.py [--episodes N] [--remote]

Fig. 5: cache locality vs cache size (2-8 GB; WordCount, 100 maps so the cache never holds all the input).
Fig. 6: local-task rate vs block size (64/128/256 MB; 3 WordCount jobs of 50 maps, 5 s apart; cache 8 GB): longer
        tasks spread completions over more heartbeats, so fewer slots free up per heartbeat and fewer go non-local.
Fig. 7: local-task rate vs number of maps (10-100; cache 2 GB).
DeepRM: slowdown of SJF, Packer, Random at 70 % and 80 % load.
Speed: Schedule calls per second, in-process and (with --remote) over gRPC.
Prints tables on stderr and one JSON object as the last line of stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from emulator.drivers import make_driver
from emulator.evaluate import run_policy
from emulator.scenario import get_scenario


def mean(scenario, policy, metric, episodes, **options):
    runs = run_policy(scenario, policy, episodes, 0, progress=False, options=options or None)
    return round(float(np.mean([r[metric] for r in runs])), 4)


def sweep(name, key, values, metric, policies, episodes, fixed):
    out = {}
    for label, policy, opts in policies:
        out[label] = [mean(get_scenario(name, **fixed, **{key: v}), policy, metric, episodes, **opts) for v in values]
        print(f"{key}={values} {label:10s} {metric}: {out[label]}", file=sys.stderr)
    return out


def speed(remote: str | None) -> dict:
    sc = get_scenario("locality-wordcount", maps=100, jobs=3, interarrival_s=5)
    calls = 0
    with make_driver("delay", remote=remote) as driver:
        inner = driver.schedule

        def counted(obs):
            nonlocal calls
            calls += 1
            return inner(obs)

        driver.schedule = counted
        t = time.perf_counter()
        for seed in range(3):
            sc.run_episode(driver, seed)
        dt = time.perf_counter() - t
    return {"schedule_calls": calls, "seconds": round(dt, 3), "calls_per_s": round(calls / dt, 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--remote", action="store_true", help="also measure Schedule calls/s over gRPC")
    args = p.parse_args()
    e = args.episodes
    three = [("fifo", "fifo", {}), ("delay", "delay", {}), ("acl", "acl", {})]
    result = {
        "fig5_cache_gb": [2, 4, 6, 8],
        "fig5_cache_locality": sweep("locality-wordcount", "cache_gb", [2, 4, 6, 8], "cache_locality",
                                     [("fifo", "fifo", {}), ("delay", "delay", {}), ("acl_c2", "acl", {"c": 2}),
                                      ("acl_c5", "acl", {"c": 5})], e, {"maps": 100}),
        "fig6_block_mb": [64, 128, 256],
        "fig6_local_task_rate": sweep("locality-wordcount", "block_mb", [64, 128, 256], "local_task_rate", three, e,
                                      {"maps": 50, "jobs": 3, "interarrival_s": 5, "cache_gb": 8}),
        "fig7_maps": [10, 20, 50, 100],
        "fig7_local_task_rate": sweep("locality-wordcount", "maps", [10, 20, 50, 100], "local_task_rate", three, e,
                                      {}),
        "deeprm_load": [0.7, 0.8],
        "deeprm_slowdown": sweep("deeprm", "load", [0.7, 0.8], "slowdown",
                                 [("sjf", "sjf", {}), ("packer", "packer", {}),
                                  ("deeprm-random", "deeprm-random", {})], 2 * e, {}),
        "speed_in_process": speed(None),
    }
    if args.remote:
        result["speed_remote"] = speed("spawn")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
