"""Scenarios: named, seeded experiment settings that run whole episodes against a Driver.

A scenario module registers a factory with `register_scenario`; the CLI, benchmarks and gymnasium environments
look scenarios up by name. One episode is a pure function of (scenario parameters, seed, driver's decisions):
every policy compared on episode i sees the same workload.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from emulator.drivers import Driver
from policy_engine.modules import import_all, import_parts


class Scenario:
    """Subclasses set the class attributes and implement run_episode."""

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""            # "multicluster", "locality", "deeprm", ...
    needs: ClassVar[str] = ""             # the policy capability run_episode calls: "schedule" or "route"
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
    family: str = ""   # from the scenario class; checked against policies and training algorithms up front
    needs: str = ""    # policy capability its episodes call (policy_engine.policy.SCHEDULE or ROUTE)


_SCENARIOS: dict[str, ScenarioSpec] = {}


class UnknownScenario(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def register_scenario(name: str, summary: str, factory: Callable[..., Scenario], family: str | None = None,
                      needs: str | None = None) -> None:
    """`family` and `needs` default to the factory's class attributes when it is a Scenario class; a factory
    function that gives neither is asked once, by building its default scenario, when a check first needs them."""
    if name in _SCENARIOS:
        raise ValueError(f"scenario {name!r} registered twice")
    family = family if family is not None else getattr(factory, "family", "") if isinstance(factory, type) else ""
    needs = needs if needs is not None else getattr(factory, "needs", "") if isinstance(factory, type) else ""
    _SCENARIOS[name] = ScenarioSpec(name, summary, factory, family or "", needs or "")


def scenarios() -> list[ScenarioSpec]:
    import_all("emulator.scenarios")
    import_parts("scenarios")
    return sorted((scenario_spec(n) for n in _SCENARIOS), key=lambda s: s.name)


def scenario_spec(name: str) -> ScenarioSpec:
    """The registered spec, with its family and the capability its episodes need filled in."""
    import_all("emulator.scenarios")
    import_parts("scenarios")
    try:
        spec = _SCENARIOS[name]
    except KeyError:
        valid = ", ".join(sorted(_SCENARIOS)) or "(none registered)"
        raise UnknownScenario(f"unknown scenario {name!r}; valid scenarios: {valid}") from None
    if not spec.family or not spec.needs:
        example = spec.factory()
        spec = _SCENARIOS[name] = dataclasses.replace(spec, family=spec.family or example.family,
                                                      needs=spec.needs or example.needs)
    return spec


def check_policy(scenario: str | Scenario, policy: str) -> None:
    """Raise UnknownPolicy or IncompatiblePolicy (naming the valid policies) unless `policy` can run `scenario`
    (a registered name, or a built scenario: then its own family and needs count)."""
    from policy_engine.policy import check_runs_on, spec

    name, family, needs = ((scenario, scenario_spec(scenario).family, scenario_spec(scenario).needs)
                           if isinstance(scenario, str) else (scenario.name, scenario.family, scenario.needs))
    if not needs:  # a scenario that does not say what it asks of policies cannot be checked (the sweep flags it)
        spec(policy)
        return
    check_runs_on(policy, needs, family, f"scenario {name!r}")


def policies_for_scenario(scenario: str) -> list[str]:
    from policy_engine.policy import policies_for

    s = scenario_spec(scenario)
    return policies_for(s.needs, s.family)


def reject_unknown_params(scenario: str, params: dict[str, Any], valid: list[str] | tuple[str, ...]) -> None:
    """For scenario constructors: a ValueError naming the unknown parameters and the valid ones."""
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(map(repr, unknown))}; parameters: {', '.join(valid)}")


def get_scenario(name: str, **params: Any) -> Scenario:
    """Build a scenario; bad parameter names or values raise OptionError naming what is wrong."""
    from policy_engine.policy import OptionError

    spec = scenario_spec(name)
    try:
        return spec.factory(**params)
    except TypeError as e:
        raise OptionError(f"scenario {name!r}: bad parameters {params}: {e}") from None
    except ValueError as e:
        raise OptionError(f"scenario {name!r}: {e}") from None
