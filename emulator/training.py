"""Registry of training algorithms behind `emulator train`.

An algorithm module registers `fn(scenario, episodes, seed, out, resume, progress, options) -> dict`, where the
dict is the run's JSON summary (printed as the last line of stdout). Conventions every algorithm follows: a
progress bar, periodic evaluation, checkpoints in `out` with `--resume`, a learning-curve PNG, and a final model
artifact written with policy_engine.artifact.save_artifact (config, seed, code version, metrics).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from emulator.scenario import Scenario
from policy_engine.modules import import_all, unavailable_note

TrainFn = Callable[..., dict[str, Any]]
_ALGOS: dict[str, TrainFn] = {}


class UnknownAlgorithm(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def register_algo(name: str, fn: TrainFn) -> TrainFn:
    if name in _ALGOS:
        raise ValueError(f"training algorithm {name!r} registered twice")
    _ALGOS[name] = fn
    return fn


def algorithms() -> list[str]:
    import_all("emulator.learners")
    return sorted(_ALGOS)


def train(algo: str, scenario: Scenario, episodes: int | None, seed: int, out: str | Path, resume: bool = False,
          progress: bool = True, options: dict | None = None) -> dict[str, Any]:
    import_all("emulator.learners")
    if algo not in _ALGOS:
        valid = ", ".join(sorted(_ALGOS)) or "(none registered yet)"
        raise UnknownAlgorithm(f"unknown training algorithm {algo!r}; available: {valid}"
                               + unavailable_note("emulator.learners"))
    return _ALGOS[algo](scenario=scenario, episodes=episodes, seed=seed, out=Path(out), resume=resume,
                        progress=progress, options=options or {})
