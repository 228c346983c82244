"""The multi-cluster papers' metrics, exactly as defined.

RL-FC, Sec. V-C: TMDL, AJDR (Eq. 8), Eval_app (Eq. 9) and the pairwise Score-A..D against a baseline.
RL-LSFC, Sec. 5: TMDL, AJER, S_log and the F/S/N dominance counts against a baseline.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np


def ajdr(ratios_per_job: Sequence[Sequence[float]]) -> float:
    """Eq. 8: mean over jobs i of 100 * sum_j (AR_ij / OR_ij - 1) / N_i, given each job's AR/OR per execution."""
    if not ratios_per_job:
        raise ValueError("AJDR of an episode without jobs")
    total = 0.0
    for i, ratios in enumerate(ratios_per_job):
        if len(ratios) == 0:
            raise ValueError(f"job {i} has no execution")
        total += 100.0 * math.fsum(r - 1.0 for r in ratios) / len(ratios)
    return total / len(ratios_per_job)


def eval_app(tmdl: float, ajdr_value: float) -> float:
    """Eq. 9: (0.02 * TMDL + AJDR)^-1; higher is better. An episode with no miss and no delay scores infinity."""
    denom = 0.02 * tmdl + ajdr_value
    return math.inf if denom == 0 else 1.0 / denom


def ajer(ratios_per_job: Sequence[Sequence[float]]) -> float:
    """AJER: sum over jobs j of 100 * sum_k (AR_jk / SR_j) / (n_j * N_w), given each job's AR/SR per execution."""
    if not ratios_per_job:
        raise ValueError("AJER of an episode without jobs")
    n_w = len(ratios_per_job)
    total = 0.0
    for j, ratios in enumerate(ratios_per_job):
        if len(ratios) == 0:
            raise ValueError(f"job {j} has no execution")
        total += 100.0 * math.fsum(ratios) / (len(ratios) * n_w)
    return total


def s_log(tmdl: float, ajer_value: float) -> float:
    """S_log = sign(S) * log10(max(|S|, 1)) with S = -TMDL + 50 * (100 - AJER); higher is better."""
    s = -tmdl + 50.0 * (100.0 - ajer_value)
    return math.copysign(math.log10(max(abs(s), 1.0)), s) if s != 0 else 0.0


# ---------------------------------------------------------------- pairwise comparisons against a baseline


def _pairs(policy: Sequence[Mapping[str, float]], base: Sequence[Mapping[str, float]]):
    if len(policy) != len(base):
        raise ValueError(f"pairwise scores need the same episodes: {len(policy)} vs {len(base)}")
    if not policy:
        raise ValueError("pairwise scores of zero episodes")
    return zip(policy, base)


def _pct_change(new: float, old: float) -> float:
    """Relative change from `old` to `new`; from 0 it is 0 when unchanged and +-infinity otherwise."""
    if old == 0:
        return 0.0 if new == 0 else math.copysign(math.inf, new)
    return (new - old) / old


def scores_000(policy: Sequence[Mapping[str, float]], base: Sequence[Mapping[str, float]],
               delay_key: str = "ajdr") -> dict[str, float]:
    """Score-A..D of `policy` against `base` over paired episodes (Sec. V-C2), on a 100 basis.

    A: 1 when better (strictly lower) in both TMDL and AJDR. B: as A, plus 0.5 when better in exactly one.
    C: 1 when Eval_app is strictly higher. D: 1 when the relative changes of TMDL and AJDR from the baseline add up
    to a negative number. Each is summed over episodes and scaled to 100 (the paper's "times 2" for 50 episodes).
    """
    a = b = c = d = 0.0
    n = 0
    for p, q in _pairs(policy, base):
        n += 1
        better_t = p["tmdl"] < q["tmdl"]
        better_d = p[delay_key] < q[delay_key]
        a += better_t and better_d
        b += 1.0 if (better_t and better_d) else 0.5 if (better_t or better_d) else 0.0
        c += eval_app(p["tmdl"], p[delay_key]) > eval_app(q["tmdl"], q[delay_key])
        d += (_pct_change(p["tmdl"], q["tmdl"]) + _pct_change(p[delay_key], q[delay_key])) < 0
    scale = 100.0 / n
    return {"score_a": a * scale, "score_b": b * scale, "score_c": c * scale, "score_d": d * scale}


def fsn_002(policy: Sequence[Mapping[str, float]], base: Sequence[Mapping[str, float]]) -> dict[str, int]:
    """F/S/N (Sec. 5): episodes where `policy` is strictly better than `base` in both, exactly one, or neither of
    TMDL and AJER."""
    f = s = n = 0
    for p, q in _pairs(policy, base):
        wins = (p["tmdl"] < q["tmdl"]) + (p["ajer"] < q["ajer"])
        if wins == 2:
            f += 1
        elif wins == 1:
            s += 1
        else:
            n += 1
    return {"f": f, "s": s, "n": n}


def ratio(base_mean: float, policy_mean: float) -> float:
    """The papers' "Ratio" column: baseline mean over policy mean (how many times lower the policy is)."""
    if policy_mean == 0:
        return math.inf if base_mean > 0 else 1.0
    return base_mean / policy_mean


def mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")
