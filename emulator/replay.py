"""`emulator replay`: decide every logged observation again with other policies, and say where they differ.

Each decision row of a decision log (policy_engine.decision_log) holds the observation the engine decided on, as
the protocol's request message, and the asks' scheduling opportunities at that moment. Replay decodes it and asks
each policy, through the engine's safety clip (clip_schedule) for Schedule and the engine's checks for Route, so a
replayed decision is what that policy would have answered then. Policies are pure functions of the observation;
a learning policy decides with the model it was loaded with and learns nothing while replaying.

Two decisions agree when they assign the same containers of the same asks at the same locality levels (Schedule),
or the same job to the same cluster (Route). The logged decision takes part as the pseudo-policy "logged".
"""

from __future__ import annotations

import itertools
import sys
from collections import Counter
from typing import Any

from policy_engine.decision_log import decode_observation, read_decisions
from policy_engine.engine import Engine, clip_schedule
from policy_engine.policy import ROUTE, SCHEDULE, IncompatiblePolicy, create
from policy_engine.types import Locality

LOGGED = "logged"
LEVELS = [lv for lv in Locality if lv != Locality.UNSPECIFIED]


def _schedule_key(assignments) -> tuple:
    merged: Counter = Counter()
    for ask_id, count, locality in assignments:
        if count > 0:
            merged[(ask_id, int(locality))] += count
    return tuple(sorted(merged.items()))


def replay(directory, policies: list[str], models: dict[str, str] | None = None, limit: int | None = None,
           progress: bool = False, examples: int = 5) -> dict[str, Any]:
    """Re-decide the log's decisions (the first `limit`) with `policies`; agreement per pair and locality levels."""
    from tqdm import tqdm

    models = models or {}
    table = read_decisions(directory)
    if limit is not None:
        table = table.slice(0, limit)
    rpcs = set(table.column("rpc").to_pylist())
    built = {}
    for name in policies:
        policy = create(name, model=models.get(name))
        for rpc, cap in (("schedule", SCHEDULE), ("route", ROUTE)):
            if rpc in rpcs and cap not in policy.capabilities:
                raise IncompatiblePolicy(f"policy {name!r} cannot replay this log: it holds {rpc} decisions and "
                                         f"{name!r} does not {'schedule on node heartbeats' if rpc == 'schedule' else 'route jobs'}")
        built[name] = policy
    engines = {name: Engine(p) for name, p in built.items()}  # Route's checks; no learner attached
    names = [LOGGED, *policies]
    agree: Counter = Counter()
    locality = {n: Counter() for n in names}
    containers = Counter()
    differ: dict[str, list[str]] = {f"{a}~{b}": [] for a, b in itertools.combinations(names, 2)}
    rows = table.to_pylist()
    for row in tqdm(rows, desc="replay", unit="decision", file=sys.stderr, disable=not progress, leave=False):
        keys = {}
        if row["rpc"] == "schedule":
            keys[LOGGED] = _schedule_key((a["ask_id"], a["count"], a["locality"]) for a in row["assignments"] or [])
            for n in [LOGGED] + policies:
                if n != LOGGED:
                    obs = decode_observation(row)  # fresh per policy: none sees another's edits
                    decision, _ = clip_schedule(obs, built[n].schedule(obs))
                    keys[n] = _schedule_key((a.ask_id, a.count, a.locality) for a in decision.assignments)
                for (_, level), count in keys[n]:
                    locality[n][Locality(level).name.lower()] += count
                    containers[n] += count
        else:
            keys[LOGGED] = (row["route_job_index"], row["route_cluster_id"], tuple(row["task_node"] or ()),
                            tuple(row["task_next"] or ()))
            for n in policies:
                d = engines[n].route(decode_observation(row))
                keys[n] = (d.job_index, d.cluster_id,
                           tuple(d.task_node.tolist()) if d.task_node is not None else (),
                           tuple(d.task_next.tolist()) if d.task_next is not None else ())
        for a, b in itertools.combinations(names, 2):
            pair = f"{a}~{b}"
            if keys[a] == keys[b]:
                agree[pair] += 1
            elif len(differ[pair]) < examples:
                differ[pair].append(row["request_id"] or row["decision_id"])
    n_rows = len(rows)
    return {
        "log": str(directory),
        "decisions": n_rows,
        "rpc": sorted(rpcs),
        "logged_policies": sorted(set(table.column("policy").to_pylist())),
        "policies": policies,
        "agreement": {pair: (agree[pair] / n_rows if n_rows else float("nan")) for pair in differ},
        "differ_examples": {pair: ex for pair, ex in differ.items() if ex},
        "locality": {n: {lv.name.lower(): locality[n][lv.name.lower()] for lv in LEVELS} for n in names}
        if "schedule" in rpcs else {},
        "containers": {n: containers[n] for n in names} if "schedule" in rpcs else {},
    }


def format_replay(result: dict[str, Any]) -> str:
    names = [LOGGED, *result["policies"]]
    head = (f"replay of {result['log']}: {result['decisions']} {'/'.join(result['rpc'])} decisions logged by "
            f"{', '.join(result['logged_policies'])}")
    width = max(len(n) for n in names)
    lines = [head, "", "agreement (share of decisions that are identical)",
             " " * width + "  " + "  ".join(f"{n:>{max(len(n), 6)}}" for n in names)]
    for a in names:
        cells = []
        for b in names:
            if a == b:
                v = 1.0
            else:
                v = result["agreement"].get(f"{a}~{b}", result["agreement"].get(f"{b}~{a}"))
            cells.append(f"{v:>{max(len(b), 6)}.3f}")
        lines.append(f"{a:<{width}}  " + "  ".join(cells))
    if result["locality"]:
        levels = [lv.name.lower() for lv in LEVELS]
        lines += ["", "containers by locality level",
                  f"{'':<{width}}  " + "  ".join(f"{lv:>11}" for lv in levels) + f"  {'total':>7}"]
        for n in names:
            loc = result["locality"][n]
            lines.append(f"{n:<{width}}  " + "  ".join(f"{loc[lv]:>11}" for lv in levels)
                         + f"  {result['containers'][n]:>7}")
    return "\n".join(lines)
