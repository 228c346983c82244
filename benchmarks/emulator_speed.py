"""Speed of the multi-cluster emulator: routing decisions/s and simulated steps/s for SF-E (RL-FC,
multicluster-uniform) and MAF (RL-LSFC, hetero-elastic-uniform), in-process and over gRPC.

Every decision is a full `driver.route(RouteObservation)` through the Engine (validation included) and every
outcome a `driver.report`, exactly as `emulator run` plays an episode; remote mode talks to a real
`policy-engine serve` subprocess over loopback (unary Route calls, one in flight).

    .venv/bin/python benchmarks/emulator_speed.py [--episodes 10] [--remote-episodes 2] [--no-remote]

The last line of stdout is one JSON object. The 1-minute load average is included: on a shared machine other
processes take CPU from the run, so in-process cases also report decisions per CPU-second of this process.
`event_loop` says which simulator loop ran: "compiled" (the Cython extension setup.py builds where a C compiler
is) or "python" (the same events, slower).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path


from emulator.drivers import make_driver  # noqa: E402
from emulator.multicluster.sim import COMPILED  # noqa: E402
from emulator.scenario import get_scenario  # noqa: E402

CASES = [("multicluster-uniform", "sf-e"), ("hetero-elastic-uniform", "maf")]


def measure(scenario_name: str, policy: str, episodes: int, remote: str | None, seed: int = 0) -> dict:
    scenario = get_scenario(scenario_name)
    sim = scenario.make_sim()
    with make_driver(policy, remote=remote) as driver:
        scenario.play(driver, seed + 10_000, sim)           # warm-up episode (imports, first allocations)
        decisions = steps = 0
        start, cpu_start = time.perf_counter(), time.process_time()
        for i in range(episodes):
            result = scenario.play(driver, seed + i, sim)
            decisions += result.decisions
            steps += result.steps
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    out = {"scenario": scenario_name, "policy": policy, "mode": "remote" if remote else "in-process",
           "episodes": episodes, "decisions": decisions, "steps": steps, "seconds": round(seconds, 4),
           "decisions_per_s": round(decisions / seconds, 1), "steps_per_s": round(steps / seconds, 1)}
    if not remote:  # this process does all the work: its CPU time is the cost, whatever else runs on the machine
        out["decisions_per_cpu_s"] = round(decisions / cpu_seconds, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--episodes", type=int, default=10, help="timed in-process episodes per case (default 10)")
    p.add_argument("--remote-episodes", type=int, default=2, help="timed gRPC episodes per case (default 2)")
    p.add_argument("--no-remote", action="store_true", help="skip the gRPC measurements")
    args = p.parse_args(argv)
    results = []
    for scenario_name, policy in CASES:
        modes = [(None, args.episodes)] + ([] if args.no_remote else [("spawn", args.remote_episodes)])
        for remote, episodes in modes:
            r = measure(scenario_name, policy, episodes, remote)
            results.append(r)
            print(f"{r['scenario']:<24} {r['policy']:<5} {r['mode']:<10} {r['decisions_per_s']:>10,.0f} decisions/s "
                  f"{r['steps_per_s']:>12,.0f} steps/s  ({r['episodes']} episodes, {r['seconds']:.2f} s)")
    print(json.dumps({"benchmark": "emulator_speed", "python": platform.python_version(),
                      "cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
                      "event_loop": "compiled" if COMPILED is not None else "python", "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
