"""The policy interface and the registry of named policies.

A policy is a pure function of an observation: `schedule` maps a node heartbeat to assignments, `route` maps a
job buffer and candidate clusters to one (job, cluster) choice. It does no I/O and keeps no state between calls;
learners, environments and the gRPC transport live elsewhere and drive the same object.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar

from policy_engine.modules import import_all, unavailable_note
from policy_engine.types import RouteDecision, RouteObservation, ScheduleDecision, ScheduleObservation

SCHEDULE = "schedule"
ROUTE = "route"
REPORT_CAPABILITY = "report"
ONLINE_LEARNING = "online-learning"


class Policy:
    """Base class. Subclasses set `name`, `capabilities` and implement the methods they declare."""

    name: ClassVar[str] = ""
    capabilities: ClassVar[frozenset[str]] = frozenset()
    model_version: str = ""
    model_checksum: str = ""

    def schedule(self, obs: ScheduleObservation) -> ScheduleDecision:
        raise NotImplementedError(f"policy {self.name!r} does not schedule on node heartbeats")

    def route(self, obs: RouteObservation) -> RouteDecision:
        raise NotImplementedError(f"policy {self.name!r} does not route jobs to clusters")


class UnknownPolicy(KeyError):
    def __str__(self) -> str:  # KeyError quotes its argument; we want a readable sentence
        return str(self.args[0])


@dataclass(frozen=True)
class PolicySpec:
    name: str
    summary: str
    capabilities: frozenset[str]
    factory: Callable[..., Policy]
    model: str = "none"  # "none", "optional" or "required": whether the factory takes a model artifact


_REGISTRY: dict[str, PolicySpec] = {}


def register(name: str, summary: str, capabilities: frozenset[str] | set[str], model: str = "none"):
    """Class or factory decorator. Policies with a model are built as `factory(model=PATH_OR_NONE, **options)`."""
    if model not in ("none", "optional", "required"):
        raise ValueError(f"model must be none, optional or required, not {model!r}")

    def wrap(factory):
        if name in _REGISTRY and _REGISTRY[name].factory is not factory:
            raise ValueError(f"policy name {name!r} registered twice")
        _REGISTRY[name] = PolicySpec(name, summary, frozenset(capabilities), factory, model)
        return factory

    return wrap


def available() -> list[PolicySpec]:
    import_all("policy_engine.policies")
    return sorted(_REGISTRY.values(), key=lambda s: s.name)


def spec(name: str) -> PolicySpec:
    import_all("policy_engine.policies")
    try:
        return _REGISTRY[name]
    except KeyError:
        valid = ", ".join(sorted(_REGISTRY))
        raise UnknownPolicy(f"unknown policy {name!r}; registered policies: {valid}"
                            + unavailable_note("policy_engine.policies")) from None


def create(name: str, model: str | Path | None = None, **options: Any) -> Policy:
    """Build a registered policy; `model` is a model artifact path for learned policies."""
    s = spec(name)
    if s.model == "required" and model is None:
        raise ValueError(f"policy {name!r} needs a model artifact (--model PATH)")
    if s.model == "none":
        if model is not None:
            raise ValueError(f"policy {name!r} takes no model artifact")
        return s.factory(**options)
    return s.factory(model=model, **options)
