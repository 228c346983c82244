"""CLQLMRS settings: every hyper-parameter and behaviour default, defined here and nowhere else.

The served policy (`--set KEY=VALUE`), the online learner and offline training (`emulator train --algo clqlmrs
--set KEY=VALUE`) all read one ClqlmrsConfig. Values arrive as strings or JSON scalars from the command line;
`ClqlmrsConfig.parse` checks them and says what is wrong.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

POLICY_NAME = "clqlmrs"
PAPER_EPSILON = 1.0     # the paper's starting ε (offline training starts here)
ONLINE_EPSILON = 0.05   # exploration while a served policy learns online
# Settings a model is trained with and brings back when loaded (unless overridden).
STORED_BEHAVIOUR = ("wait_cost", "max_wait", "order")


@dataclass(frozen=True)
class ClqlmrsConfig:
    mode: str = "abstract"           # table encoding: abstract | paper (a loaded model fixes it)
    alpha: float = 0.1               # SARSA step size (the paper)
    gamma: float = 0.95              # discount (the paper)
    epsilon: float | None = None     # None: ONLINE_EPSILON while learning, 0 when frozen
    epsilon_decay: float = 0.999     # ε x epsilon_decay ...
    decay_every: int = 10            # ... every decay_every episodes (finished jobs online)
    wait_cost: float = 0.05          # reward of one WAIT step (abstract mode)
    max_wait: float = 1.0            # heartbeats per cluster node after which a job is placed whatever the table says
    order: str = "fifo"              # fifo | q: which PLACE-job gets the node (abstract mode)
    seed: int = 0                    # exploration draws
    max_tasks: int = 1024            # paper mode: table width
    max_nodes: int = 32
    learn: bool = True               # learn online from Report feedback while serving
    save_to: str | None = None       # where the online learner persists the table (never over --model)
    save_every_s: float = 30.0       # seconds between periodic saves (and one on shutdown)

    @classmethod
    def option_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def parse(cls, stored: dict[str, Any] | None = None, **options: Any) -> ClqlmrsConfig:
        """Defaults, then what a loaded model was trained with (`stored`: its metadata), then `options` (None =
        not given). Raises ValueError naming the bad option."""
        unknown = set(options) - set(cls.option_names())
        if unknown:
            raise ValueError(f"unknown clqlmrs option(s) {sorted(unknown)}; valid: {cls.option_names()}")
        given = {k: v for k, v in options.items() if v is not None}
        stored = stored or {}
        enc = stored.get("encoding") or {}
        values: dict[str, Any] = {}
        if enc:
            if "mode" in given and given["mode"] != enc.get("mode"):
                raise ValueError(f"the model holds a {enc.get('mode')!r} table, not mode={given['mode']!r}")
            values["mode"] = enc.get("mode", "abstract")
            for k in ("max_tasks", "max_nodes"):
                if k in enc:
                    values[k] = enc[k]
            given = {k: v for k, v in given.items() if k not in ("mode", "max_tasks", "max_nodes")}
        values.update({k: stored[k] for k in STORED_BEHAVIOUR if k in stored})
        values.update(given)
        learn = _as_bool("learn", values.get("learn", cls.learn))
        out = cls(
            mode=_choice("mode", values.get("mode", cls.mode), ("abstract", "paper")),
            alpha=_as_float("alpha", values.get("alpha", cls.alpha), 1e-9, 1.0),
            gamma=_as_float("gamma", values.get("gamma", cls.gamma), 0.0, 1.0),
            epsilon=_as_float("epsilon", values["epsilon"], 0.0, 1.0) if "epsilon" in values else
            (ONLINE_EPSILON if learn else 0.0),
            epsilon_decay=_as_float("epsilon_decay", values.get("epsilon_decay", cls.epsilon_decay), 1e-9, 1.0),
            decay_every=int(_as_float("decay_every", values.get("decay_every", cls.decay_every), 1, 1e9)),
            wait_cost=_as_float("wait_cost", values.get("wait_cost", cls.wait_cost), 0.0, 1e3),
            max_wait=_as_float("max_wait", values.get("max_wait", cls.max_wait), 0.0, 1e6),
            order=_choice("order", values.get("order", cls.order), ("fifo", "q")),
            seed=int(_as_float("seed", values.get("seed", cls.seed), 0, 2 ** 63 - 1)),
            max_tasks=int(_as_float("max_tasks", values.get("max_tasks", cls.max_tasks), 1, 1 << 16)),
            max_nodes=int(_as_float("max_nodes", values.get("max_nodes", cls.max_nodes), 1, 1 << 16)),
            learn=learn,
            save_to=str(values["save_to"]) if values.get("save_to") else None,
            save_every_s=_as_float("save_every_s", values.get("save_every_s", cls.save_every_s), 0.0, 1e9),
        )
        return out

    @property
    def save_path(self) -> Path | None:
        return Path(self.save_to) if self.save_to else None

    def table_settings(self) -> dict[str, Any]:
        """What goes into a saved model besides the table (loaded back by `parse(stored=...)`)."""
        return {k: getattr(self, k) for k in STORED_BEHAVIOUR} | {"seed": self.seed}


def _as_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0"):
        return value.lower() in ("true", "yes", "1")
    raise ValueError(f"{name} must be true or false, not {value!r}")


def _as_float(name: str, value: Any, lo: float, hi: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, not {value!r}") from None
    if math.isnan(v) or not (lo <= v <= hi):
        raise ValueError(f"{name} must be in [{lo}, {hi}], not {value!r}")
    return v


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be {' or '.join(repr(a) for a in allowed)}, not {value!r}")
    return value
