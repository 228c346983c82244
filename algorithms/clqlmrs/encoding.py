"""CLQLMRS's locality states, rewards, the two Q-table encodings and the decision trace (see the package doc)."""

from __future__ import annotations

import zlib
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

import numpy as np

from policy_engine.features.locality import REWARD, ReadLocality, cached_fraction, read_locality, state_counts
from policy_engine.features.locality import candidate_state as features_candidate_state
from policy_engine.locality import AskOnNode
from policy_engine.types import Ask, Locality, Node, ScheduleObservation

__all__ = ["LocalityState", "REWARD_WEIGHTS", "LOCAL_STATES", "cached_fraction", "read_locality", "state_counts",
           "locality_reward", "state_from_report", "has_locality_preference", "placement", "PLACE", "WAIT",
           "AbstractEncoding", "PaperEncoding", "make_encoding", "Step", "rng_for"]


# The five states and Table 2's weights are shared with the emulator, ACL and the gymnasium environment.
LocalityState = ReadLocality
REWARD_WEIGHTS = REWARD
LOCAL_STATES = (LocalityState.CL, LocalityState.DL)


def locality_reward(state: LocalityState | int, counts, n_tasks: int) -> float:
    """w_state * N_state / N; `counts[state]` must already include the task being rewarded."""
    if n_tasks <= 0:
        raise ValueError(f"a job has at least one task, not {n_tasks}")
    return float(REWARD_WEIGHTS[int(state)] * counts[int(state)] / n_tasks)


def state_from_report(level: int, rack_cached: bool) -> LocalityState:
    """Map the protocol's locality (what YARN/the AM reports) to the paper's five states."""
    if level == Locality.CACHE_LOCAL:
        return LocalityState.CL
    if level == Locality.NODE_LOCAL:
        return LocalityState.DL
    if level == Locality.RACK_LOCAL:
        return LocalityState.CRL if rack_cached else LocalityState.DRL
    return LocalityState.NO


# ---------------------------------------------------------------------------------------------- candidates


def has_locality_preference(ask: Ask) -> bool:
    """Map-like asks (input blocks or host/rack entries) are learned; others (reduces, AMs) are placed FIFO."""
    if ask.job is not None and ask.job.input_blocks:
        return True
    return ask.names_places


def placement(view: AskOnNode, node: Node, counts: np.ndarray | None = None) -> tuple[LocalityState, Locality] | None:
    """The paper's state of launching one more container of this ask on this node now and the protocol level YARN's
    counts allow; None when nothing can go. The ApplicationMaster runs its best-placed pending task on the
    container, so the state is the best one left in `counts` (state_counts of the ask's pending blocks on this
    node, minus what this heartbeat already launched)."""
    levels = view.best_levels()
    if not levels:
        return None
    level = levels[0]
    best = None
    if counts is not None:  # a list (the policy's) or an array (offline log replay)
        for i, n in enumerate(counts):
            if n:
                best = _STATES[i]
                break
    if best is None:
        best = features_candidate_state(view.ask, node)
    if level in (Locality.CACHE_LOCAL, Locality.NODE_LOCAL):
        if best in LOCAL_STATES:
            return best, level
        return (LocalityState.CL if level == Locality.CACHE_LOCAL else LocalityState.DL), level
    if level == Locality.RACK_LOCAL:
        return (best if best in (LocalityState.CRL, LocalityState.DRL) else LocalityState.DRL), level
    return LocalityState.NO, level


# ---------------------------------------------------------------------------------------------- encodings

PLACE, WAIT = 0, 1
_STATES = tuple(LocalityState)


@dataclass(frozen=True)
class AbstractEncoding:
    """State index of (locality level, cached fraction, waiting, node load); actions PLACE / WAIT."""

    cache_edges: tuple[float, ...] = (1e-9, 1 / 3, 2 / 3)
    wait_edges: tuple[float, ...] = (0.5, 1.0, 2.0)  # heartbeats waited per cluster node
    load_edges: tuple[float, ...] = (0.5,)           # node's allocated memory fraction
    mode: str = "abstract"

    @property
    def dims(self) -> tuple[int, int, int, int]:
        return (len(LocalityState), len(self.cache_edges) + 1, len(self.wait_edges) + 1, len(self.load_edges) + 1)

    @property
    def shape(self) -> tuple[int, int]:
        return int(np.prod(self.dims)), 2

    def encode(self, state: LocalityState, cached: float, opportunities: int, num_nodes: int, node: Node) -> int:
        # bisect_right is np.searchsorted(side="right") on a sorted tuple, without numpy's per-call overhead: this
        # runs for every candidate of every heartbeat
        nc, nw, nl = len(self.cache_edges) + 1, len(self.wait_edges) + 1, len(self.load_edges) + 1
        c = bisect_right(self.cache_edges, cached)
        w = bisect_right(self.wait_edges, opportunities / (num_nodes if num_nodes > 1 else 1))
        total = node.total.memory_mb
        used = 1.0 - node.unallocated.memory_mb / total if total > 0 else 1.0
        ld = bisect_right(self.load_edges, used)
        return ((int(state) * nc + c) * nw + w) * nl + ld

    def decode(self, index: int) -> dict[str, int]:
        _, nc, nw, nl = self.dims
        ld, index = index % nl, index // nl
        w, index = index % nw, index // nw
        c, level = index % nc, index // nc
        return {"level": level, "cached_bucket": c, "wait_bucket": w, "load_bucket": ld}

    def describe(self) -> dict[str, Any]:
        return {"mode": self.mode, "cache_edges": list(self.cache_edges), "wait_edges": list(self.wait_edges),
                "load_edges": list(self.load_edges)}


@dataclass(frozen=True)
class PaperEncoding:
    """State = previous launch's locality state; action = (task index, node) hashed into max_tasks x max_nodes."""

    max_tasks: int   # table width: defaults in ClqlmrsConfig
    max_nodes: int
    mode: str = "paper"

    @property
    def shape(self) -> tuple[int, int]:
        return len(LocalityState), self.max_tasks * self.max_nodes

    def action(self, task: int | str, node: Node) -> int:
        """Task T_i is its block id when known (stable while other tasks finish), else its input position.
        crc32, not hash(): stable across processes, so a saved table means the same after a restart."""
        slot = zlib.crc32(task.encode()) if isinstance(task, str) else task
        return (slot % self.max_tasks) * self.max_nodes + zlib.crc32(node.host.encode()) % self.max_nodes

    def describe(self) -> dict[str, Any]:
        return {"mode": self.mode, "max_tasks": self.max_tasks, "max_nodes": self.max_nodes}


def make_encoding(mode: str, max_tasks: int, max_nodes: int) -> AbstractEncoding | PaperEncoding:
    if mode == "abstract":
        return AbstractEncoding()
    if mode == "paper":
        if max_tasks < 1 or max_nodes < 1:
            raise ValueError(f"max_tasks and max_nodes must be >= 1, not {max_tasks}, {max_nodes}")
        return PaperEncoding(max_tasks, max_nodes)
    raise ValueError(f"mode must be 'abstract' or 'paper', not {mode!r}")


@dataclass(slots=True)
class Step:
    """One decision step of the policy, as the learner needs it."""

    application_id: str
    node_id: str
    state: int
    action: int
    predicted: LocalityState      # the state the policy expected the launch to reach (PLACE steps)
    rack_cached: bool = False     # CRL rather than DRL if the launch turns out rack-local
    n_tasks: int = 0              # the job's task count as far as the policy can tell
    place: bool = True


_MASK64 = (1 << 64) - 1


class ObsRng:
    """SplitMix64 draws keyed by the observation: `random()` in [0, 1) and `integers(n)`, as numpy's Generator
    names them. A numpy Generator costs ~20 us to build per decision, more than the rest of the decision;
    this costs ~1 us per draw, and is as reproducible (same observation and seed, same draws)."""

    __slots__ = ("state",)

    def __init__(self, key: int):
        self.state = key & _MASK64

    def _next(self) -> int:
        self.state = z = (self.state + 0x9E3779B97F4A7C15) & _MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    def random(self) -> float:
        return (self._next() >> 11) * (1.0 / (1 << 53))

    def integers(self, n: int) -> int:
        return self._next() % n


def rng_for(seed: int, obs: ScheduleObservation) -> ObsRng:
    """Exploration randomness drawn from the observation, so a decision is a pure function of (obs, table)."""
    key = (((seed & 0xFFFF) << 48) ^ (zlib.crc32(obs.node.node_id.encode()) << 16)
           ^ ((obs.node.timestamp_ms & 0xFFFFFFFFFFFF) * 0x100000001B3)
           ^ (zlib.crc32(obs.request_id.encode()) * 0x100000000))
    return ObsRng(key)

