"""What the rule-based routing baselines read from a RouteObservation (RL-FC and RL-LSFC).

Kept apart from the policies so that learned policies (baseline-guided exploration) and tests use the same rules.
Everything here is a pure function of the observation.
"""

from __future__ import annotations

import hashlib

import numpy as np

from policy_engine.types import ClusterState, RouteJob, RouteObservation

WINDOW = 100  # both papers' baselines look at "the nearest past 100 time slices"
_sum = np.add.reduce  # ndarray.sum without its Python-level wrapper: these run on every routing decision


def mean_occupation(cluster: ClusterState, window: int = WINDOW) -> float:
    """Average occupation ratio over the latest `window` steps of the history; with no history yet (the first
    step of an episode), the occupation now."""
    h = cluster.occupation_history
    if h.size == 0:
        cap = cluster.current_capacity or cluster.capacity
        return 1.0 - cluster.available / cap if cap else 1.0
    if h.size > window:
        h = h[-window:]
    return float(_sum(h, dtype=np.float64)) / h.size


def mean_occupations(obs: RouteObservation, window: int = WINDOW) -> list[float]:
    """mean_occupation of every cluster of the observation, in cluster order. When the observation carries its
    histories as one array (RouteObservation.occupation, the emulator's), one reduce over its rows: numpy sums
    each row of an axis-1 reduce as it sums that row alone, so the floats are the same
    (tests/test_multicluster_fast_path.py checks that on random data)."""
    occ = obs.occupation
    clusters = obs.clusters
    if occ is None or occ.ndim != 2 or occ.shape[0] != len(clusters) or occ.shape[1] == 0:
        return [mean_occupation(c, window) for c in clusters]
    if occ.shape[1] > window:
        occ = occ[:, -window:]
    n = occ.shape[1]
    return [s / n for s in _sum(occ, axis=1, dtype=np.float64).tolist()]


def mean_request(job: RouteJob) -> float:
    """RL-FC's "computing capacity requirement": the expected executor count of one execution (the mean of the
    10 equally likely counts)."""
    d = job.request_distribution
    n = d.size
    return sum(d.tolist()) / n if n else 0.0  # exact integer sum: the same float as numpy's, 7x faster on 10


def most_likely(distribution: np.ndarray) -> int:
    """The most frequent of the 10 executor counts (the smallest of equally frequent ones)."""
    values = distribution.tolist()
    if not values:
        return 0
    first = values[0]
    if 2 * values.count(first) > len(values):   # a majority value is the mode (the usual shape: base + peaks)
        return first
    return max(sorted(set(values)), key=values.count)  # max() keeps the first (smallest) of equal counts


def most_likely_per_cluster(job: RouteJob, obs: RouteObservation) -> list[int]:
    """RL-LSFC's ER_i for each cluster of the observation, from the job's per-cluster demand when it has one."""
    if len(job.per_cluster) == len(obs.clusters) and all(
            d.cluster_id == c.cluster_id for d, c in zip(job.per_cluster, obs.clusters)):
        return [most_likely(d.request_distribution) for d in job.per_cluster]   # the usual case: same order
    by_cluster = {d.cluster_id: d.request_distribution for d in job.per_cluster}
    return [most_likely(by_cluster.get(c.cluster_id, job.request_distribution)) for c in obs.clusters]


def worker_request(job: RouteJob, obs: RouteObservation) -> float:
    """RL-LSFC's job worker request: the average over clusters of the most likely executor count."""
    per = most_likely_per_cluster(job, obs)
    return sum(per) / len(per)


def argmin_first(values) -> int:
    """Index of the smallest value; ties go to the earliest (buffer order = arrival order, cluster order)."""
    best, best_v = 0, values[0]
    for i, v in enumerate(values):
        if v < best_v:
            best, best_v = i, v
    return best


def argmax_first(values) -> int:
    best, best_v = 0, values[0]
    for i, v in enumerate(values):
        if v > best_v:
            best, best_v = i, v
    return best


def request_hash(request_id: str, salt: str = "") -> int:
    """A 64-bit number fixed by the request id: the randomness of the random baselines, identical in-process and
    over gRPC and reproducible from the episode's seed (the emulator's request ids name scenario, seed and step)."""
    return int.from_bytes(hashlib.blake2b(f"{salt}{request_id}".encode(), digest_size=8).digest(), "little")
