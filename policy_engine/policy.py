"""The policy interface and the registry of named policies.

A policy is a pure function of an observation: `schedule` maps a node heartbeat to assignments, `route` maps a
job buffer and candidate clusters to one (job, cluster) choice. It does no I/O and keeps no state between calls;
learners, environments and the gRPC transport live elsewhere and drive the same object.

State that outlives one call is explicit and owned by the engine (policy_engine.engine.EngineState), like the
Kubernetes scheduler's CycleState: a policy declares in `reads` what the engine must fill into its observations
(e.g. SCHEDULING_OPPORTUNITIES, the per-ask missed-opportunity counts kept across heartbeats), and a learned
policy's parameters are a model that its learner writes and it only reads. A policy with an online learner names
it in the registry (`register(..., learner="module:factory")`); the engine builds it, feeds it off the decision
path and never lets it touch a decision in flight.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar

from policy_engine.modules import import_all, unavailable_note
from policy_engine.types import RouteDecision, RouteObservation, ScheduleDecision, ScheduleObservation

SCHEDULE = "schedule"
# What the engine can fill into observations for a policy that declares it in `Policy.reads`.
SCHEDULING_OPPORTUNITIES = "scheduling_opportunities"  # Ask.scheduling_opportunities, counted across heartbeats
ROUTE = "route"
REPORT_CAPABILITY = "report"
ONLINE_LEARNING = "online-learning"


class Policy:
    """Base class. Subclasses set `name`, `capabilities` and implement the methods they declare."""

    name: ClassVar[str] = ""
    capabilities: ClassVar[frozenset[str]] = frozenset()
    # Engine-kept state this policy reads from its observations (SCHEDULING_OPPORTUNITIES); the engine skips
    # keeping what no policy reads.
    reads: ClassVar[frozenset[str]] = frozenset()
    model_version: str = ""
    model_checksum: str = ""

    def schedule(self, obs: ScheduleObservation) -> ScheduleDecision:
        raise NotImplementedError(f"policy {self.name!r} does not schedule on node heartbeats")

    def schedule_traced(self, obs: ScheduleObservation) -> tuple[ScheduleDecision, Any]:
        """The decision plus what this policy's learner needs to learn from it, computed once (the engine calls
        this instead of `schedule` when a learner is attached). Policies without a learner need not override."""
        return self.schedule(obs), None

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
    learner: str = ""    # "module:callable" building the policy's online learner (or None when it does not learn)


_REGISTRY: dict[str, PolicySpec] = {}


def register(name: str, summary: str, capabilities: frozenset[str] | set[str], model: str = "none",
             learner: str = ""):
    """Class or factory decorator. Policies with a model are built as `factory(model=PATH_OR_NONE, **options)`.
    `learner`: "module:callable", called with the policy, returning its online learner or None."""
    if model not in ("none", "optional", "required"):
        raise ValueError(f"model must be none, optional or required, not {model!r}")

    def wrap(factory):
        if name in _REGISTRY and _REGISTRY[name].factory is not factory:
            raise ValueError(f"policy name {name!r} registered twice")
        _REGISTRY[name] = PolicySpec(name, summary, frozenset(capabilities), factory, model, learner)
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


def make_learner(policy: Policy):
    """Build the online learner the registry names for this policy (None when it has none or does not learn)."""
    s = _REGISTRY.get(policy.name)
    if s is None or not s.learner:
        return None
    import importlib

    module, _, attr = s.learner.partition(":")
    factory: Any = importlib.import_module(module)
    for part in attr.split("."):
        factory = getattr(factory, part)
    return factory(policy)
