"""Tabular SARSA: the update rule, the ε schedule and a Q-table that saves to and loads from a model artifact.

Kept free of any scheduling notion so other tabular learners can reuse it. The table is a plain float64 array
Q[state, action] plus a visit count per entry (for diagnostics and for reporting coverage).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from policy_engine.artifact import ArtifactError, load_artifact, save_artifact


def sarsa_update(q: np.ndarray, s: int, a: int, reward: float, s_next: int | None, a_next: int | None,
                 alpha: float, gamma: float) -> float:
    """Q(s,a) <- Q(s,a) + α [r + γ Q(s',a') - Q(s,a)]; a terminal step (s_next None) has no bootstrap term.

    Returns the TD error.
    """
    target = reward if s_next is None else reward + gamma * q[s_next, a_next]
    td = target - q[s, a]
    q[s, a] += alpha * td
    return float(td)


@dataclass
class EpsilonSchedule:
    """ε-greedy exploration rate: starts at `start`, multiplied by `decay` after every `every` episodes."""

    start: float = 1.0
    decay: float = 0.999
    every: int = 10
    minimum: float = 0.0

    def __post_init__(self):
        if not 0.0 <= self.start <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], not {self.start}")
        if not 0.0 < self.decay <= 1.0:
            raise ValueError(f"epsilon decay must be in (0, 1], not {self.decay}")
        if self.every < 1:
            raise ValueError(f"epsilon decay interval must be >= 1 episode, not {self.every}")

    def value(self, episodes_done: int) -> float:
        return max(self.minimum, self.start * self.decay ** (episodes_done // self.every))


@dataclass
class QTable:
    q: np.ndarray
    visits: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def zeros(cls, n_states: int, n_actions: int, **meta: Any) -> QTable:
        return cls(np.zeros((n_states, n_actions), dtype=np.float64), np.zeros((n_states, n_actions), np.int64),
                   dict(meta))

    @property
    def shape(self) -> tuple[int, int]:
        return self.q.shape  # type: ignore[return-value]

    def copy(self) -> QTable:
        return QTable(self.q.copy(), self.visits.copy(), dict(self.meta))

    def save(self, path: str | Path, policy: str, meta: dict[str, Any]) -> str:
        """Atomic (temp file + rename, see policy_engine.artifact); returns the checksum."""
        return save_artifact(path, {"q": self.q, "visits": self.visits}, {"policy": policy, **meta})

    @classmethod
    def load(cls, path: str | Path, policy: str, shape: tuple[int, int] | None = None) -> QTable:
        tensors, meta = load_artifact(path, policy=policy)
        q, visits = tensors.get("q"), tensors.get("visits")
        if q is None or visits is None:
            raise ArtifactError(f"model file {path}: expected tensors 'q' and 'visits', found {sorted(tensors)}")
        if q.ndim != 2 or visits.shape != q.shape:
            raise ArtifactError(f"model file {path}: Q-table shape {q.shape} / visits {visits.shape} is not a table")
        if shape is not None and tuple(q.shape) != tuple(shape):
            raise ArtifactError(f"model file {path}: Q-table has shape {tuple(q.shape)}, this configuration needs "
                                f"{tuple(shape)} (trained with another mode or state abstraction?)")
        if not np.all(np.isfinite(q)):
            raise ArtifactError(f"model file {path}: Q-table holds non-finite values")
        return cls(q.astype(np.float64, copy=True), visits.astype(np.int64, copy=True), meta)
