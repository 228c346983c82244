"""Training throughput against rollout workers: episodes/s of `emulator train --workers N` for RL-FC
(multicluster-uniform, the paper's 2000-500 network) and RL-LSFC (hetero-elastic-uniform, 1000-job episodes).

Two numbers per learner and worker count:
  * `train_episodes_per_s`: a real training run (emulator.learners: rounds of `rollout_batch` episodes played by
    the pool while the learner fits the round before, one training pass per episode), episodes over the seconds
    of its episode loop (validation and checkpoints left out: one evaluation at the end, not timed);
  * `rollout_episodes_per_s`: the pool alone playing training episodes with fixed weights (what the workers add,
    without the learner's share, which one process does whatever N is).

    .venv/bin/python benchmarks/rollout_throughput.py [--workers 1,2] [--episodes 20] [--algos rl-fc,rl-lsfc]

Run it under the shared lock (`flock /tmp/yarnrl-cluster.lock ...`): the 1-minute load average before and after
each case is in the output, and the process CPU-seconds of the learner beside the wall time. On a machine whose
cores other processes use, N workers cannot get N cores and the ratios understate what N idle cores give.
The last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


CASES = {"rl-fc": "multicluster-uniform", "rl-lsfc": "hetero-elastic-uniform"}


def load() -> float:
    return round(os.getloadavg()[0], 2)


def train_case(algo: str, workers: int, episodes: int, seed: int) -> dict:
    from emulator.learners.rollouts import RolloutSpec
    from emulator.scenario import get_scenario
    from emulator.training import train

    scenario = get_scenario(CASES[algo])
    # the paper's hyper-parameters; validation only once, at the end (not in the timed loop)
    options = {"episodes": episodes, "eval_every": episodes, "eval_episodes": 1, "checkpoint_every": episodes,
               "baselines": ()}
    with tempfile.TemporaryDirectory(prefix="rollout-throughput-") as out:
        before = load()
        cpu0 = time.process_time()
        summary = train(algo, scenario, episodes=episodes, seed=seed, out=out, progress=False, options=options,
                        rollouts=RolloutSpec(workers))
        cpu = time.process_time() - cpu0
    loop_s = summary["train_seconds"]
    return {"algo": algo, "scenario": scenario.name, "workers": workers, "episodes": episodes,
            "loop_seconds": loop_s, "train_episodes_per_s": round(episodes / loop_s, 3),
            "learner_cpu_seconds": round(cpu, 1), "load_before": before, "load_after": load()}


def rollout_case(algo: str, workers: int, episodes: int, seed: int) -> dict:
    from algorithms.rl_fc import train as rl_fc
    from algorithms.rl_lsfc import train as rl_lsfc
    from emulator.learners.rollouts import RolloutSpec, make_pool
    from emulator.scenario import get_scenario

    scenario = get_scenario(CASES[algo])
    if algo == "rl-fc":
        trainer = rl_fc.RlFcTrainer(scenario, rl_fc.RlFcConfig(), seed, Path(tempfile.gettempdir()))
        trainer.ensure_network()
        module = rl_fc
    else:
        trainer = rl_lsfc.RlLsfcTrainer(scenario, rl_lsfc.RlLsfcConfig(), seed, Path(tempfile.gettempdir()))
        module = rl_lsfc
    weights = trainer.network_weights()
    setup, args = trainer.worker_setup()
    pool = make_pool(RolloutSpec(workers), setup, args)
    try:
        [f.result() for f in [pool.submit(module.play_episode, weights, ep) for ep in range(1, workers + 1)]]  # warm
        before = load()
        t0 = time.perf_counter()
        futures = [pool.submit(module.play_episode, weights, ep) for ep in range(1, episodes + 1)]
        decisions = sum(f.result()["decisions"] for f in futures)
        seconds = time.perf_counter() - t0
    finally:
        pool.close()
    return {"algo": algo, "workers": workers, "episodes": episodes, "seconds": round(seconds, 2),
            "rollout_episodes_per_s": round(episodes / seconds, 3), "decisions": decisions,
            "load_before": before, "load_after": load()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", default="1,2", help="comma-separated worker counts (default 1,2)")
    p.add_argument("--episodes", type=int, default=20, help="timed training episodes per case (default 20)")
    p.add_argument("--rollout-episodes", type=int, default=20, help="timed pool-only episodes per case (default 20)")
    p.add_argument("--algos", default="rl-fc,rl-lsfc", help="learners to time (default rl-fc,rl-lsfc)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    workers = [int(w) for w in args.workers.split(",") if w]
    algos = [a for a in args.algos.split(",") if a]
    bad = [a for a in algos if a not in CASES]
    if bad or not workers or min(workers) < 1 or args.episodes < 1:
        p.error(f"--algos from {', '.join(CASES)}; --workers and --episodes at least 1")
    cases, rollouts = [], []
    for algo in algos:
        for n in workers:
            r = rollout_case(algo, n, args.rollout_episodes, args.seed)
            rollouts.append(r)
            print(f"{algo} workers={n} rollouts only: {r['rollout_episodes_per_s']:.3f} episodes/s "
                  f"(load {r['load_before']} -> {r['load_after']})", flush=True)
            c = train_case(algo, n, args.episodes, args.seed)
            cases.append(c)
            print(f"{algo} workers={n} training: {c['train_episodes_per_s']:.3f} episodes/s, {c['loop_seconds']} s "
                  f"(load {c['load_before']} -> {c['load_after']})", flush=True)
    speedup = {}
    base = min(workers)
    for algo in algos:
        for key, rows in (("train", cases), ("rollouts", rollouts)):
            metric = "train_episodes_per_s" if key == "train" else "rollout_episodes_per_s"
            by_n = {r["workers"]: r[metric] for r in rows if r["algo"] == algo}
            for n in workers:
                if n != base:
                    speedup[f"{algo} {key} {n}/{base}"] = round(by_n[n] / by_n[base], 3)
    print(json.dumps({"benchmark": "rollout_throughput", "cpus": os.cpu_count(), "training": cases,
                      "rollouts_only": rollouts, "speedup": speedup}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
