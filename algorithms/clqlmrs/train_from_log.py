"""`emulator train --algo clqlmrs --from-log DIR`: CLQLMRS's SARSA over the transitions in a decision log.

Whatever policy made the logged decisions (Delay, FIFO, CLQLMRS itself, a real cluster's engine), each logged
heartbeat is re-read in CLQLMRS's state space: every map ask with pending containers that fits the node gives one
step per container the logged decision gave it (action PLACE, in the state of that launch) or, when it got none,
one WAIT step (abstract mode's encoding, algorithms.clqlmrs). The steps go, in logged order and interleaved
with the logged Report events (`after_decision`), through the very learner that learns online
(algorithms.clqlmrs.learner.ClqlmrsLearner): a PLACE step's reward is the locality its ContainerStarted event
reports, a WAIT step's is -wait_cost, and SARSA updates follow each job's trajectory. One training episode is one
pass over the log. This is off-policy data learned with an on-policy rule (the successor action is the logged
one), as batch SARSA over logged tuples does; the Q-values are those of the logging policy's behaviour, and the
greedy table is compared with the online-learned one by the caller.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from emulator.learners import common
from algorithms.clqlmrs.train import _TRAINED, MODEL_FILE, _config, evaluate
from emulator.scenario import Scenario
from algorithms.clqlmrs.encoding import (
    PLACE,
    WAIT,
    LocalityState,
    Step,
    cached_fraction,
    has_locality_preference,
    placement,
    state_counts,
)
from algorithms.clqlmrs.learner import ClqlmrsLearner
from algorithms.clqlmrs.policy import ClqlmrsPolicy
from policy_engine.codec import decode_event_bytes
from policy_engine.decision_log import decode_observation, read_decisions, read_events
from policy_engine.locality import AskOnNode
from policy_engine.policies.fifo import fifo_order
from policy_engine.policy import OptionError


def logged_steps(policy: ClqlmrsPolicy, obs, assigned: dict[str, int]) -> list[Step]:
    """CLQLMRS's (state, action) steps for a heartbeat on which `assigned[ask_id]` containers were given."""
    enc, node = policy.model.encoding, obs.node
    num_nodes = obs.cluster.num_nodes or 1
    free = node.unallocated
    steps: list[Step] = []
    for ask in fifo_order(obs.asks):
        if ask.num_containers <= 0 or not has_locality_preference(ask):
            continue
        view, counts = AskOnNode(ask, node), state_counts(ask, node)
        n_tasks = max(len(ask.job.input_blocks) if ask.job is not None else 0, ask.num_containers)
        cached = cached_fraction(ask)
        given = assigned.get(ask.ask_id, 0)
        if given == 0:
            cs = placement(view, node, counts)
            if cs is not None and ask.resource.fits_in(free):
                s = enc.encode(cs[0], cached, ask.scheduling_opportunities, num_nodes, node)
                steps.append(Step(ask.application_id, node.node_id, s, WAIT, cs[0], cs[0] == LocalityState.CRL,
                                  n_tasks, place=False))
            continue
        for _ in range(given):
            cs = placement(view, node, counts)
            if cs is None:
                break
            state, level = cs
            s = enc.encode(state, cached, ask.scheduling_opportunities, num_nodes, node)
            steps.append(Step(ask.application_id, node.node_id, s, PLACE, state, state == LocalityState.CRL,
                              n_tasks))
            if counts[state] > 0:
                counts[state] -= 1
            view.take(level, 1)
            free = free.minus(ask.resource, 1)
    return steps


def _writers(directory) -> list[tuple[list[dict], list[dict]]]:
    """Per writer: its schedule decision rows in seq order and its event rows in arrival order."""
    decisions = read_decisions(directory)
    events = read_events(directory)
    out: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    for row in decisions.to_pylist():
        if row["rpc"] == "schedule":
            out[row["writer"]][0].append(row)
    for row in events.select(["writer", "after_decision", "event"]).to_pylist():
        if row["writer"] in out:
            out[row["writer"]][1].append(row)
    result = []
    for writer in sorted(out):
        rows, evs = out[writer]
        rows.sort(key=lambda r: r["seq"])
        result.append((rows, evs))
    if not result:
        raise ValueError(f"decision log {directory}: no Schedule decisions to learn from")
    return result


def train_clqlmrs_from_log(scenario: Scenario, log: str | Path, episodes: int | None, seed: int, out: Path,
                           progress: bool, options: dict[str, Any], compare_model: str | None = None
                           ) -> dict[str, Any]:
    cfg = _config(options)
    if cfg["mode"] != "abstract":
        raise OptionError("--from-log learns the abstract encoding (mode=abstract): the paper's states follow the "
                          "policy's own task choice, which a log of another policy does not hold")
    episodes = 10 if episodes is None else int(episodes)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    writers = _writers(log)
    policy = ClqlmrsPolicy(learn=True, seed=seed, **{**{k: cfg[k] for k in _TRAINED}, "epsilon": 0.0})
    learner = ClqlmrsLearner(policy.model)
    learner.episode_per_job = False
    transitions = 0
    t0 = time.perf_counter()
    history = []
    bar = common.progress(episodes, 0, f"clqlmrs from {Path(log).name}", progress)
    try:
        for ep in range(episodes):
            for rows, evs in writers:
                k = 0
                for row in rows:
                    while k < len(evs) and evs[k]["after_decision"] < row["seq"]:
                        learner.on_event(decode_event_bytes(evs[k]["event"]))
                        k += 1
                    assigned: dict[str, int] = defaultdict(int)
                    for a in row["assignments"] or []:
                        assigned[a["ask_id"]] += a["count"]
                    steps = logged_steps(policy, decode_observation(row), assigned)
                    transitions += len(steps)
                    learner.on_decision(steps)
                for ev in evs[k:]:
                    learner.on_event(decode_event_bytes(ev["event"]))
                learner.end_of_run()
            rewards = list(learner.finished_rewards)
            learner.finished_rewards.clear()
            history.append({"episode": ep + 1, "train_reward": float(np.sum(rewards)), "updates": learner.updates})
            bar.update(1)
    finally:
        bar.close()
    learner.publish()
    eval_seeds = [seed + 1_000_000 + k for k in range(int(cfg["eval_episodes"]))]
    final_eval = evaluate(scenario, policy, eval_seeds)
    meta = {"episodes": episodes, "updates": learner.updates, "config": cfg, "seed": seed, "scenario": scenario.name,
            "scenario_params": scenario.describe(), "metrics": final_eval, "from_log": str(log),
            "transitions_per_pass": transitions // max(episodes, 1)}
    checksum = policy.save(out / MODEL_FILE, meta)
    common.write_json(out / "history.json", history)
    visited = policy.table.visits.sum(axis=1) > 0
    result = {"algo": "clqlmrs", "from_log": str(log), "scenario": scenario.name, "episodes": episodes,
              "seed": seed, "mode": cfg["mode"], "model": str(out / MODEL_FILE), "checksum": checksum,
              "updates": learner.updates, "transitions_per_pass": transitions // max(episodes, 1),
              "state_coverage": float(visited.mean()), "eval": final_eval,
              "wall_s": round(time.perf_counter() - t0, 2)}
    if compare_model is not None:
        result["compared_with"] = compare_tables(policy, ClqlmrsPolicy(compare_model, learn=False), scenario,
                                                 eval_seeds)
    return result


def compare_tables(mine: ClqlmrsPolicy, other: ClqlmrsPolicy, scenario: Scenario, seeds: list[int]) -> dict:
    """Greedy actions of two tables on the states both visited, and the other table's evaluation."""
    a, b = mine.table, other.table
    if a.q.shape != b.q.shape:
        raise OptionError(f"the model to compare with has a Q-table of shape {b.q.shape}, this one {a.q.shape} "
                          "(another mode or encoding)")
    both = (a.visits.sum(axis=1) > 0) & (b.visits.sum(axis=1) > 0)
    greedy_a = a.q[both, PLACE] >= a.q[both, WAIT]
    greedy_b = b.q[both, PLACE] >= b.q[both, WAIT]
    return {"model": other.model_version or "", "states_both_visited": int(both.sum()),
            "greedy_agreement": float((greedy_a == greedy_b).mean()) if both.any() else float("nan"),
            "eval": evaluate(scenario, other, seeds)}
