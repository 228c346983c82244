"""Scenarios: named, seeded experiment settings that run whole episodes against a Driver.

A scenario module registers a factory with `register_scenario`; the CLI, benchmarks and gymnasium environments
look scenarios up by name. One episode is a pure function of (scenario parameters, seed, driver's decisions):
every policy compared on episode i sees the same workload.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from emulator.drivers import Driver
from policy_engine.modules import import_all


class Scenario:
    """Subclasses set the class attributes and implement run_episode."""

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""            # "multicluster", "locality", "deeprm", ...
    metrics: ClassVar[tuple[str, ...]] = ()  # lower-case keys of run_episode's result, in table order
    default_episodes: ClassVar[int] = 10
    default_policies: ClassVar[tuple[str, ...]] = ()

    def run_episode(self, driver: Driver, seed: int) -> dict[str, float]:
        raise NotImplementedError

    def relative_metrics(self, episodes: dict[str, list[dict[str, float]]], against: str) -> dict[str, dict]:
        """Scores of each policy against a named baseline (Score-A..D, F/S/N, ratios); none by default."""
        return {}

    def describe(self) -> dict[str, Any]:
        """The parameters that define this scenario, for logs and model metadata."""
        return {}


@dataclass(frozen=True)
class ScenarioSpec:
    name: str
    summary: str
    factory: Callable[..., Scenario]


_SCENARIOS: dict[str, ScenarioSpec] = {}


class UnknownScenario(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def register_scenario(name: str, summary: str, factory: Callable[..., Scenario]) -> None:
    if name in _SCENARIOS:
        raise ValueError(f"scenario {name!r} registered twice")
    _SCENARIOS[name] = ScenarioSpec(name, summary, factory)


def scenarios() -> list[ScenarioSpec]:
    import_all("emulator.scenarios")
    return sorted(_SCENARIOS.values(), key=lambda s: s.name)


def get_scenario(name: str, **params: Any) -> Scenario:
    import_all("emulator.scenarios")
    try:
        spec = _SCENARIOS[name]
    except KeyError:
        valid = ", ".join(sorted(_SCENARIOS)) or "(none registered)"
        raise UnknownScenario(f"unknown scenario {name!r}; valid scenarios: {valid}") from None
    try:
        return spec.factory(**params)
    except TypeError as e:
        raise ValueError(f"scenario {name!r}: bad parameters {params}: {e}") from None
