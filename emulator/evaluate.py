"""Run policies over seeded episodes of a scenario and summarise them (mean ± std per metric)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from policy_engine.extras import require

require("tqdm", extra="emulator", feature="emulator run/compare")

from tqdm import tqdm  # noqa: E402

from emulator.drivers import make_driver  # noqa: E402
from emulator.scenario import Scenario, check_policy  # noqa: E402


def summarise(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=float)
    std = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
    return {"mean": float(arr.mean()) if arr.size else float("nan"), "std": std}


def run_policy(scenario: Scenario, policy: str, episodes: int, seed: int, model: str | None = None,
               remote: str | None = None, options: dict | None = None, progress: bool = True,
               timeout: float = 5.0, decision_log: str | None = None, log_rotate_mb: float | None = None,
               shadow: str | None = None, batched: bool = False) -> list[dict]:
    """Episode i uses seed `seed + i`, so every policy sees the same workloads."""
    results = []
    with make_driver(policy, model=model, remote=remote, options=options, timeout=timeout,
                     decision_log=decision_log, log_rotate_mb=log_rotate_mb, shadow=shadow,
                     batched=batched) as driver:
        bar = tqdm(range(episodes), desc=f"{scenario.name} {policy}", unit="ep", file=sys.stderr,
                   disable=not progress, leave=False)
        for i in bar:
            results.append(scenario.run_episode(driver, seed + i))
    return results


def compare(scenario: Scenario, policies: list[str], episodes: int, seed: int, against: str | None = None,
            models: dict[str, str] | None = None, remote: str | None = None, progress: bool = True,
            timeout: float = 5.0, decision_log: str | None = None, log_rotate_mb: float | None = None,
            shadow: str | None = None, batched: bool = False) -> dict[str, Any]:
    models = models or {}
    for p in policies:  # a policy that cannot answer this scenario's calls fails here, not mid-episode
        check_policy(scenario, p)
    if against is not None and against not in policies:  # before hours of episodes, not after
        raise ValueError(f"--against {against!r} is not among the compared policies {policies}")
    per_policy = {p: run_policy(scenario, p, episodes, seed, models.get(p), remote, progress=progress,
                                timeout=timeout, decision_log=decision_log, log_rotate_mb=log_rotate_mb,
                                shadow=shadow, batched=batched)
                  for p in policies}
    out: dict[str, Any] = {"scenario": scenario.name, "episodes": episodes, "seed": seed, "policies": {}}
    for p, eps in per_policy.items():
        keys = scenario.metrics or tuple(eps[0]) if eps else ()
        out["policies"][p] = {k: summarise([e[k] for e in eps]) for k in keys}
    if against is not None:
        if against not in per_policy:
            raise ValueError(f"--against {against!r} is not among the compared policies {policies}")
        out["against"] = against
        rel = scenario.relative_metrics(per_policy, against)
        for p, metrics in rel.items():
            out["policies"][p].update(metrics)
    params = scenario.describe()
    if params:
        out["params"] = params
    if decision_log is not None:
        out["decision_log"] = str(decision_log)
    return out


def format_table(result: dict[str, Any]) -> str:
    """The papers' layout: one row per policy, one column per metric, `mean ± std` or a plain score."""
    policies = result["policies"]
    if not policies:
        return "(no policies)"
    columns: list[str] = []
    for metrics in policies.values():
        for k in metrics:
            if k not in columns:
                columns.append(k)

    def cell(v) -> str:
        if isinstance(v, dict) and "mean" in v:
            return f"{v['mean']:.3f} ± {v['std']:.3f}"
        if isinstance(v, dict):  # counts such as seed 002's F/S/N: "46/4/0"
            return "/".join(str(x) for x in v.values())
        if isinstance(v, float):
            return str(int(v)) if v.is_integer() and abs(v) < 1e9 else f"{v:.3f}"  # scores out of 100: "98"
        return str(v)

    rows = [["policy", *columns]] + [[p, *(cell(m.get(c, "")) for c in columns)] for p, m in policies.items()]
    widths = [max(len(r[i]) for r in rows) for i in range(len(columns) + 1)]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    head = f"scenario {result['scenario']}: {result['episodes']} episodes, seed {result['seed']}"
    if "against" in result:
        head += f", scores against {result['against']}"
    return head + "\n" + "\n".join(lines)
