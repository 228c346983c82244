"""A scripted DeepRM job set through the emulator: when does each job start under a policy.

    python -m algorithms.deeprm.script --policy deeprm-pg --model models/deeprm-pg.safetensors \\
        --jobs '[[0, 10, 20, 20], [2, 14, 6, 1], [2, 2, 5, 2]]'

Jobs are [arrival step, length in steps, memory units, vcore units] in arrival order, on one node of 20 units,
driven by plugin-shaped heartbeats (the `deeprm` scenario's heartbeats=yarn; the engine builds DeepRM's view).
Prints one JSON object: {"start": [step per job], "waves": [[jobs started at one step], ...] in step order}. The
plugin's DeepRM integration test (yarn_plugin DeepRmIT) runs the same jobs on a real YARN and compares.
"""

from __future__ import annotations

import argparse
import json
import sys

from algorithms.deeprm.sim import DeepRMConfig, DeepRMSimulation
from emulator.drivers import make_driver


def start_steps(jobs, policy: str, model: str | None = None, heartbeats: str = "yarn") -> list[int]:
    sim = DeepRMSimulation.from_jobs(DeepRMConfig(simu_len=1), jobs)
    with make_driver(policy, model=model) as driver:
        while not sim.done and not sim.truncated:
            if heartbeats == "yarn":
                if sim.any_waiting_fits(0):
                    sim.apply_yarn(driver.schedule(sim.observe_yarn(0)), 0)
            elif sim.any_fits():
                sim.apply(driver.schedule(sim.observe()))
            sim.advance()
            events = sim.take_events()
            if events:
                driver.report(events)
    return [int(s) for s in sim.start]


def waves(start: list[int]) -> list[list[int]]:
    by_step: dict[int, list[int]] = {}
    for j, s in enumerate(start):
        by_step.setdefault(s, []).append(j)
    return [sorted(by_step[s]) for s in sorted(by_step)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", default="deeprm-pg")
    ap.add_argument("--model")
    ap.add_argument("--jobs", required=True, help="JSON list of [arrival step, length, memory units, vcore units]")
    args = ap.parse_args(argv)
    try:
        jobs = json.loads(args.jobs)
        start = start_steps(jobs, args.policy, args.model)
    except (ValueError, TypeError, IndexError) as e:
        print(f"deeprm_script: {e}", file=sys.stderr)
        return 2
    print(json.dumps({"start": start, "waves": waves(start)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
