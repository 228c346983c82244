"""What CLQLMRS learns: the Q-table with its visit counts, ε and paper mode's last reached state.

The learner writes `ClqlmrsModel.table` / `.epsilon` / `.last_state` (its working copy) and calls `publish()`;
the policy reads only `ClqlmrsModel.view`, an immutable snapshot swapped in whole, so a decision never sees a
half-applied update and a learner in another thread needs no lock. A model nobody learns into (a frozen policy)
publishes its working table itself, without a copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from policy_engine.artifact import load_artifact
from algorithms.clqlmrs.config import POLICY_NAME, ClqlmrsConfig
from algorithms.clqlmrs.encoding import AbstractEncoding, LocalityState, PaperEncoding, make_encoding
from policy_engine.qlearning import QTable


@dataclass(frozen=True, slots=True)
class ModelView:
    """One published state of the model: what decisions read."""

    q: np.ndarray
    epsilon: float
    last_state: int  # paper mode's S_t: the state the last reported launch reached


class ClqlmrsModel:
    def __init__(self, config: ClqlmrsConfig, table: QTable | None = None, episodes: int = 0,
                 model_version: str = "", model_checksum: str = ""):
        self.config = config
        self.encoding: AbstractEncoding | PaperEncoding = make_encoding(config.mode, config.max_tasks,
                                                                        config.max_nodes)
        self.table = table if table is not None else QTable.zeros(*self.encoding.shape)
        self.epsilon = float(config.epsilon)
        self.last_state = int(LocalityState.NO)
        self.episodes = int(episodes)     # episodes the table was trained for (from its file)
        self.model_version, self.model_checksum = model_version, model_checksum
        self.shared = True                # the view reads the working table itself (nobody learns into it)
        self.view = ModelView(self.table.q, self.epsilon, self.last_state)

    # ------------------------------------------------------------ loading

    @classmethod
    def create(cls, model: str | Path | None = None, **options: Any) -> ClqlmrsModel:
        """The model a `clqlmrs` policy serves: from `save_to` when it exists (a restarted learner resumes),
        else from `model` (the starting point), else an empty table. Options are ClqlmrsConfig's."""
        save_to = options.get("save_to")
        source = Path(save_to) if save_to and Path(save_to).exists() else (Path(model) if model else None)
        if source is None:
            return cls(ClqlmrsConfig.parse(**options))
        _, meta = load_artifact(source, policy=POLICY_NAME)  # checksum and structure checked here
        config = ClqlmrsConfig.parse(stored=meta, **options)
        encoding = make_encoding(config.mode, config.max_tasks, config.max_nodes)
        table = QTable.load(source, POLICY_NAME, shape=encoding.shape)
        checksum = table.meta.get("checksum", "")
        episodes = int(meta.get("episodes", 0))
        return cls(config, table, episodes, f"{config.mode}-{episodes}ep-{checksum[:12]}", checksum)

    # ------------------------------------------------------------ learner side

    def detach(self) -> None:
        """A learner takes over the working table: from now on decisions read published copies."""
        self.shared = False
        self.publish()

    def publish(self) -> None:
        q = self.table.q if self.shared else self.table.q.copy()
        self.view = ModelView(q, self.epsilon, self.last_state)

    def save(self, path: str | Path, meta: dict[str, Any]) -> str:
        return self.table.save(path, POLICY_NAME, {"encoding": self.encoding.describe(),
                                                   **self.config.table_settings(), **meta})
