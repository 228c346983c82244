"""Registry of training algorithms behind `emulator train`.

An algorithm module registers `fn(scenario, episodes, seed, out, resume, progress, options) -> dict`, where the
dict is the run's JSON summary (printed as the last line of stdout). Conventions every algorithm follows: a
progress bar, periodic evaluation, checkpoints in `out` with `--resume`, a learning-curve PNG, and a final model
artifact written with policy_engine.artifact.save_artifact (config, seed, code version, metrics).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from emulator.scenario import Scenario, scenario_spec, scenarios
from policy_engine.modules import import_all, import_parts, unavailable_note

TrainFn = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class AlgoSpec:
    name: str
    fn: TrainFn
    families: frozenset[str] = frozenset()  # scenario families it trains on; empty: any
    parallel: bool = False                  # plays its episodes in a rollout pool (--workers, --ray)


_ALGOS: dict[str, AlgoSpec] = {}


class UnknownAlgorithm(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


class IncompatibleAlgorithm(ValueError):
    """A training algorithm asked to train on a scenario family it cannot (rl-fc on DeepRM's cluster)."""


def register_algo(name: str, fn: TrainFn, families: frozenset[str] | set[str] = frozenset(),
                  parallel: bool = False) -> TrainFn:
    """`families`: the scenario families the algorithm trains on (e.g. {"multicluster"}); checked before training.
    `parallel`: `fn` takes `rollouts` (an emulator.learners.rollouts.RolloutSpec: --workers, --ray)."""
    if name in _ALGOS:
        raise ValueError(f"training algorithm {name!r} registered twice")
    _ALGOS[name] = AlgoSpec(name, fn, frozenset(families), parallel)
    return fn


def algorithms() -> list[str]:
    import_all("emulator.learners")
    import_parts("train")
    return sorted(_ALGOS)


def algo_spec(algo: str) -> AlgoSpec:
    import_all("emulator.learners")
    import_parts("train")
    if algo not in _ALGOS:
        valid = ", ".join(sorted(_ALGOS)) or "(none registered yet)"
        raise UnknownAlgorithm(f"unknown training algorithm {algo!r}; available: {valid}"
                               + unavailable_note("emulator.learners", "train"))
    return _ALGOS[algo]


def algorithms_for(scenario: str) -> list[str]:
    """The algorithms that can train on `scenario`."""
    return _algorithms_for_family(scenario_spec(scenario).family)


def _algorithms_for_family(family: str) -> list[str]:
    return [a for a in algorithms() if not _ALGOS[a].families or family in _ALGOS[a].families]


def check_algo(algo: str, scenario: str | Scenario) -> AlgoSpec:
    """Raise UnknownAlgorithm / UnknownScenario / IncompatibleAlgorithm (naming what would fit) before training;
    `scenario` is a registered name or a built scenario (then its own family counts)."""
    a = algo_spec(algo)
    family = scenario_spec(scenario).family if isinstance(scenario, str) else scenario.family
    scenario = scenario if isinstance(scenario, str) else scenario.name
    if a.families and family not in a.families:
        fits = [s.name for s in scenarios() if s.family in a.families]
        raise IncompatibleAlgorithm(
            f"training algorithm {algo!r} trains on {', '.join(sorted(a.families))} scenarios "
            f"({', '.join(fits) or 'none registered'}), and {scenario!r} is {family}; algorithms for "
            f"{scenario!r}: {', '.join(_algorithms_for_family(family)) or 'none registered yet'}")
    return a


def parallel_algorithms() -> list[str]:
    """The algorithms whose episodes `--workers` / `--ray` spread over processes."""
    return [a for a in algorithms() if _ALGOS[a].parallel]


def train(algo: str, scenario: Scenario, episodes: int | None, seed: int, out: str | Path, resume: bool = False,
          progress: bool = True, options: dict | None = None, rollouts: Any = None) -> dict[str, Any]:
    """`rollouts`: an emulator.learners.rollouts.RolloutSpec for the algorithms registered `parallel`."""
    algo_spec(algo)  # an unknown name first, whatever the scenario
    a = check_algo(algo, scenario)
    kwargs = {"rollouts": rollouts} if a.parallel else {}
    if rollouts is not None and not a.parallel and (rollouts.workers != 1 or rollouts.ray_address is not None):
        raise IncompatibleAlgorithm(f"--workers / --ray play episodes in parallel for "
                                    f"{', '.join(parallel_algorithms())}, not {algo!r}")
    return a.fn(scenario=scenario, episodes=episodes, seed=seed, out=Path(out), resume=resume,
                progress=progress, options=options or {}, **kwargs)
