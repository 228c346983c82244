"""State vectors of the multi-cluster papers, built from a RouteObservation.

* `rlfc_state(obs, j)`: RL-FC (Table I): per cluster [sequence number, capability, occupation of the
  latest 100 steps, missed deadlines so far] (103 each) followed by the job profile [category, 10-slot request
  distribution, single-executor occupation time, execution deadline, duration] (14): 103 * C + 14 = 529 for C = 5.
* `lsfc_state(obs, j)`: RL-LSFC (Table 1): per cluster [sequence number, normal capacity, maximum
  capacity, heterogeneity factor, occupation of the latest 105 steps traversed into 10 overlapping segments of 15
  (150), missed deadlines so far] (155 each) followed by the job [category, expected hetero factor, heterogeneity
  sensitivity, request distribution per cluster (10 * C), standard execution time per cluster (C), execution
  deadline per cluster (C), duration] (4 + 12 * C): 155 * C + 4 + 12 * C = 839 for C = 5.

Both papers say only that every value range is "uniformly expanded or shrunk to a similar data range"; the fixed
divisors in `StateScales` do that (so one number means the same in every episode). Occupation is the ratio of
busy executors to the capacity in effect, oldest step first; a history shorter than the window (the first steps of
an episode) is padded with zeros at the old end. Clusters appear in observation order; their sequence number is
their position (1-based) divided by the number of clusters.

The same functions serve the gymnasium environments (emulator.envs), the learners and the learned policies, so a
model trained in the emulator sees exactly the vector it sees when deployed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policy_engine.types import JobCategory, ObservationMismatch, RouteJob, RouteObservation

RLFC_HISTORY = 100          # Table I: occupation statistics of the latest 100 steps
RLFC_CLUSTER_DIM = 3 + RLFC_HISTORY
RLFC_JOB_DIM = 14
LSFC_HISTORY = 105          # Table 1: latest 105 steps ...
LSFC_SEGMENT = 15           # ... cut into segments of 15 ...
LSFC_STRIDE = 10            # ... starting every 10 steps (5 steps of overlap) ...
LSFC_SEGMENTS = (LSFC_HISTORY - LSFC_SEGMENT) // LSFC_STRIDE + 1   # ... 10 segments ...
LSFC_TRAVERSED = LSFC_SEGMENTS * LSFC_SEGMENT                       # ... 150 values per cluster
LSFC_CLUSTER_DIM = 5 + LSFC_TRAVERSED                               # 155
DISTRIBUTION_SLOTS = 10
# Positions in the 105-step history of the 150 traversed values: segment k covers steps [10k, 10k + 15).
_TRAVERSAL_INDEX = (np.arange(LSFC_SEGMENTS)[:, None] * LSFC_STRIDE + np.arange(LSFC_SEGMENT)[None, :]).reshape(-1)


@dataclass(frozen=True)
class StateScales:
    """Fixed divisors that bring every component to roughly [0, 1] for both papers' settings."""

    executors: float = 2000.0      # capacities and executor requests
    time: float = 100.0            # single-executor occupation / standard execution time, deadlines
    duration: float = 1000.0       # overall job duration
    missed_deadlines: float = 100.0
    hetero: float = 100.0          # heterogeneity factors
    sensitivity: float = 5.0       # sen in [1, 5]


DEFAULT_SCALES = StateScales()


def rlfc_dim(n_clusters: int = 5) -> int:
    return RLFC_CLUSTER_DIM * n_clusters + RLFC_JOB_DIM


def lsfc_dim(n_clusters: int = 5) -> int:
    return LSFC_CLUSTER_DIM * n_clusters + 4 + 12 * n_clusters


def category_code(category: JobCategory) -> float:
    """REGULAR (and unspecified) 1/3, TIME_CRITICAL 2/3, STREAMING 1."""
    return (3.0 if category == JobCategory.STREAMING else 2.0 if category == JobCategory.TIME_CRITICAL else 1.0) / 3


def recent(history: np.ndarray, n: int) -> np.ndarray:
    """The latest `n` values of `history` (oldest first), zero-padded at the old end when shorter."""
    out = np.zeros(n, dtype=np.float32)
    h = history[-n:] if n else history[:0]
    if h.size:
        out[n - h.size:] = h
    return out


def occupation_traversal(history105: np.ndarray) -> np.ndarray:
    """RL-LSFC's traversal (Sec. 4.4, Fig. 4): segments of 15 starting every 10 steps, concatenated (105 -> 150)."""
    h = np.asarray(history105, dtype=np.float32)
    if h.shape != (LSFC_HISTORY,):
        raise ObservationMismatch(f"occupation traversal needs {LSFC_HISTORY} values, got shape {h.shape}")
    return h[_TRAVERSAL_INDEX]


def _check_job(obs: RouteObservation, job_index: int) -> RouteJob:
    if not 0 <= job_index < len(obs.jobs):
        raise IndexError(f"job index {job_index} outside a buffer of {len(obs.jobs)} jobs")
    return obs.jobs[job_index]


def _distribution(values: np.ndarray, where: str) -> np.ndarray:
    d = np.asarray(values, dtype=np.float32)
    if d.size == 0:
        return np.zeros(DISTRIBUTION_SLOTS, dtype=np.float32)
    if d.size != DISTRIBUTION_SLOTS:
        raise ObservationMismatch(f"{where}: a request distribution has {DISTRIBUTION_SLOTS} slots, got {d.size}")
    return d


# ---------------------------------------------------------------- RL-FC


def rlfc_cluster_block(obs: RouteObservation, scales: StateScales = DEFAULT_SCALES) -> np.ndarray:
    """The 103 * C cluster part of the RL-FC state (shared by every job of one observation)."""
    n = len(obs.clusters)
    out = np.empty((n, RLFC_CLUSTER_DIM), dtype=np.float32)
    for i, c in enumerate(obs.clusters):
        out[i, 0] = (i + 1) / n
        out[i, 1] = c.capacity / scales.executors
        out[i, 2:2 + RLFC_HISTORY] = recent(c.occupation_history, RLFC_HISTORY)
        out[i, -1] = c.missed_deadlines / scales.missed_deadlines
    return out.reshape(-1)


def rlfc_job_block(job: RouteJob, scales: StateScales = DEFAULT_SCALES) -> np.ndarray:
    """The 14-value job profile of the RL-FC state."""
    out = np.empty(RLFC_JOB_DIM, dtype=np.float32)
    out[0] = category_code(job.category)
    out[1:11] = _distribution(job.request_distribution, f"job {job.job_id}") / scales.executors
    out[11] = job.executor_runtime / scales.time
    out[12] = job.deadline / scales.time
    out[13] = job.duration / scales.duration
    return out


def rlfc_state(obs: RouteObservation, job_index: int, scales: StateScales = DEFAULT_SCALES) -> np.ndarray:
    """RL-FC state (Table I) of buffered job `job_index`: float32 vector of 103 * C + 14 (529 for 5 clusters)."""
    job = _check_job(obs, job_index)
    return np.concatenate([rlfc_cluster_block(obs, scales), rlfc_job_block(job, scales)])


def rlfc_states(obs: RouteObservation, scales: StateScales = DEFAULT_SCALES) -> np.ndarray:
    """RL-FC states of every buffered job, shape (len(obs.jobs), 103 * C + 14): the cluster part is built once."""
    clusters = rlfc_cluster_block(obs, scales)
    out = np.empty((len(obs.jobs), clusters.size + RLFC_JOB_DIM), dtype=np.float32)
    out[:, :clusters.size] = clusters
    for j, job in enumerate(obs.jobs):
        out[j, clusters.size:] = rlfc_job_block(job, scales)
    return out


# ---------------------------------------------------------------- RL-LSFC


def lsfc_cluster_block(obs: RouteObservation, scales: StateScales = DEFAULT_SCALES) -> np.ndarray:
    """The 155 * C cluster part of the RL-LSFC state."""
    n = len(obs.clusters)
    out = np.empty((n, LSFC_CLUSTER_DIM), dtype=np.float32)
    for i, c in enumerate(obs.clusters):
        out[i, 0] = (i + 1) / n
        out[i, 1] = c.capacity / scales.executors
        out[i, 2] = (c.max_capacity or c.capacity) / scales.executors
        out[i, 3] = c.hetero_factor / scales.hetero
        out[i, 4:4 + LSFC_TRAVERSED] = recent(c.occupation_history, LSFC_HISTORY)[_TRAVERSAL_INDEX]
        out[i, -1] = c.missed_deadlines / scales.missed_deadlines
    return out.reshape(-1)


def lsfc_job_block(job: RouteJob, cluster_ids: list[int], scales: StateScales = DEFAULT_SCALES) -> np.ndarray:
    """The 4 + 12 * C job part of the RL-LSFC state; per-cluster values follow the observation's cluster order.

    A job without a per-cluster entry for some cluster uses its cluster-independent fields there (request
    distribution, executor_runtime as standard execution time, deadline).
    """
    n = len(cluster_ids)
    by_cluster = {d.cluster_id: d for d in job.per_cluster}
    dists = np.empty((n, DISTRIBUTION_SLOTS), dtype=np.float32)
    runtimes = np.empty(n, dtype=np.float32)
    deadlines = np.empty(n, dtype=np.float32)
    for i, cid in enumerate(cluster_ids):
        d = by_cluster.get(cid)
        if d is None:
            dists[i] = _distribution(job.request_distribution, f"job {job.job_id}")
            runtimes[i], deadlines[i] = job.executor_runtime, job.deadline
        else:
            dists[i] = _distribution(d.request_distribution, f"job {job.job_id} cluster {cid}")
            runtimes[i], deadlines[i] = d.standard_runtime, d.deadline
    head = np.array([category_code(job.category), job.expected_hetero_factor / scales.hetero,
                     job.hetero_sensitivity / scales.sensitivity], dtype=np.float32)
    tail = np.array([job.duration / scales.duration], dtype=np.float32)
    return np.concatenate([head, dists.reshape(-1) / scales.executors, runtimes / scales.time,
                           deadlines / scales.time, tail])


def lsfc_state(obs: RouteObservation, job_index: int, scales: StateScales = DEFAULT_SCALES) -> np.ndarray:
    """RL-LSFC state (Table 1) of buffered job `job_index`: float32 vector of 167 * C + 4 (839 for 5 clusters)."""
    job = _check_job(obs, job_index)
    ids = [c.cluster_id for c in obs.clusters]
    return np.concatenate([lsfc_cluster_block(obs, scales), lsfc_job_block(job, ids, scales)])


def lsfc_states(obs: RouteObservation, scales: StateScales = DEFAULT_SCALES) -> np.ndarray:
    """RL-LSFC states of every buffered job, shape (len(obs.jobs), 167 * C + 4)."""
    clusters = lsfc_cluster_block(obs, scales)
    ids = [c.cluster_id for c in obs.clusters]
    job_dim = 4 + 12 * len(ids)
    out = np.empty((len(obs.jobs), clusters.size + job_dim), dtype=np.float32)
    out[:, :clusters.size] = clusters
    for j, job in enumerate(obs.jobs):
        out[j, clusters.size:] = lsfc_job_block(job, ids, scales)
    return out


def lsfc_split(states: np.ndarray, n_clusters: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Split RL-LSFC states (..., 839) into the LSTM input (..., C, 10, 15) and the non-temporal rest (..., 89).

    The temporal part is every cluster's traversed occupation (Fig. 3: it goes through the LSTM); the rest keeps
    Table 1's order: per cluster [sequence, capacity, max capacity, hetero factor, missed deadlines], then the job.
    """
    states = np.asarray(states)
    if states.shape[-1] != lsfc_dim(n_clusters):
        raise ValueError(f"RL-LSFC states for {n_clusters} clusters have {lsfc_dim(n_clusters)} values, "
                         f"got {states.shape[-1]}")
    lead = states.shape[:-1]
    clusters = states[..., :LSFC_CLUSTER_DIM * n_clusters].reshape(*lead, n_clusters, LSFC_CLUSTER_DIM)
    temporal = clusters[..., 4:4 + LSFC_TRAVERSED].reshape(*lead, n_clusters, LSFC_SEGMENTS, LSFC_SEGMENT)
    static = np.concatenate([clusters[..., :4], clusters[..., -1:]], axis=-1).reshape(*lead, 5 * n_clusters)
    rest = np.concatenate([static, states[..., LSFC_CLUSTER_DIM * n_clusters:]], axis=-1)
    return temporal, rest


__all__ = [
    "StateScales", "DEFAULT_SCALES", "rlfc_dim", "lsfc_dim", "rlfc_state", "rlfc_states", "lsfc_state",
    "lsfc_states", "lsfc_split", "occupation_traversal", "recent", "category_code", "rlfc_cluster_block",
    "rlfc_job_block", "lsfc_cluster_block", "lsfc_job_block",
]
