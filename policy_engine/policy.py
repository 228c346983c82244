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

import inspect
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar

from policy_engine.modules import import_all, import_parts, unavailable_note
from policy_engine.types import (  # noqa: F401  (ObservationMismatch: re-exported for policies)
    ObservationMismatch,
    RouteDecision,
    RouteObservation,
    ScheduleDecision,
    ScheduleObservation,
)

SCHEDULE = "schedule"
# What the engine can fill into observations for a policy that declares it in `Policy.reads`.
SCHEDULING_OPPORTUNITIES = "scheduling_opportunities"  # Ask.scheduling_opportunities, counted across heartbeats
# DeepRM's job-slot view (slots, backlog, lengths, the image's running containers) built by the engine from a plugin
# heartbeat (algorithms.deeprm.view); observations that already are such a view (the emulator's) pass through.
DEEPRM_JOBS = "deeprm_jobs"
ROUTE = "route"
REPORT_CAPABILITY = "report"
SCHEDULE_BATCH_CAPABILITY = "schedule-batch"  # GetInfo: the engine speaks ScheduleBatch (many nodes per call)
ONLINE_LEARNING = "online-learning"
# What a scenario (or the YARN plugin) asks a policy for, in words for error messages.
CAPABILITY_WORDS = {SCHEDULE: "schedules containers on node heartbeats", ROUTE: "routes jobs to clusters"}


class Policy:
    """Base class. Subclasses set `name`, `capabilities` and implement the methods they declare."""

    name: ClassVar[str] = ""
    capabilities: ClassVar[frozenset[str]] = frozenset()
    # Engine-kept state this policy reads from its observations (SCHEDULING_OPPORTUNITIES); the engine skips
    # keeping what no policy reads.
    reads: ClassVar[frozenset[str]] = frozenset()
    model_version: str = ""
    model_checksum: str = ""
    # What a Route request must carry for this policy: "jobs" (a job buffer and candidate clusters) or "manager"
    # (a DSRAP cluster manager's view); the engine refuses the other kind before the policy sees it.
    route_observes: ClassVar[str] = "jobs"
    # True when the policy assigns nothing on a node where no pending ask fits (and so reads nothing else there):
    # the batched path (policy_engine.batch) then answers such a node without calling it.
    idle_without_room: ClassVar[bool] = False

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


class IncompatiblePolicy(ValueError):
    """A registered policy asked for what it cannot do (route on heartbeats, a DeepRM policy on a locality run)."""


class OptionError(ValueError):
    """A named option (policy option, scenario parameter, training hyper-parameter) that does not exist or is out
    of range: the user's to fix, so command lines report it as a usage error."""


@dataclass(frozen=True)
class PolicySpec:
    name: str
    summary: str
    capabilities: frozenset[str]
    factory: Callable[..., Policy]
    model: str = "none"  # "none", "optional" or "required": whether the factory takes a model artifact
    learner: str = ""    # "module:callable" building the policy's online learner (or None when it does not learn)
    # Scenario families whose observations the policy understands (e.g. DeepRM's job slots); empty: every family
    # that asks for one of its capabilities.
    families: frozenset[str] = frozenset()

    def runs_on(self, capability: str, family: str) -> bool:
        """Whether this policy can answer `capability` calls of a scenario of `family`."""
        return capability in self.capabilities and (not self.families or family in self.families)

    def options(self) -> dict[str, inspect.Parameter] | None:
        """The options the factory takes (keyword name -> parameter), or None when it takes any (**kwargs)."""
        try:
            params = inspect.signature(self.factory).parameters
        except (TypeError, ValueError):
            return None
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            return None
        return {n: p for n, p in params.items() if n not in ("self", "model")
                and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}


_REGISTRY: dict[str, PolicySpec] = {}


def register(name: str, summary: str, capabilities: frozenset[str] | set[str], model: str = "none",
             learner: str = "", families: frozenset[str] | set[str] = frozenset()):
    """Class or factory decorator. Policies with a model are built as `factory(model=PATH_OR_NONE, **options)`.
    `learner`: "module:callable", called with the policy, returning its online learner or None.
    `families`: the scenario families the policy is limited to (empty: any that asks for its capabilities)."""
    if model not in ("none", "optional", "required"):
        raise ValueError(f"model must be none, optional or required, not {model!r}")

    def wrap(factory):
        if name in _REGISTRY and _REGISTRY[name].factory is not factory:
            raise ValueError(f"policy name {name!r} registered twice")
        _REGISTRY[name] = PolicySpec(name, summary, frozenset(capabilities), factory, model, learner,
                                     frozenset(families))
        return factory

    return wrap


def available() -> list[PolicySpec]:
    import_all("policy_engine.policies")
    import_parts("policy")
    return sorted(_REGISTRY.values(), key=lambda s: s.name)


def spec(name: str) -> PolicySpec:
    import_all("policy_engine.policies")
    import_parts("policy")
    try:
        return _REGISTRY[name]
    except KeyError:
        valid = ", ".join(sorted(_REGISTRY))
        raise UnknownPolicy(f"unknown policy {name!r}; registered policies: {valid}"
                            + unavailable_note("policy_engine.policies", "policy")) from None


def policies_for(capability: str, family: str) -> list[str]:
    """Names of the registered policies that can answer `capability` calls of a `family` scenario."""
    return [s.name for s in available() if s.runs_on(capability, family)]


def check_runs_on(name: str, capability: str, family: str, what: str) -> PolicySpec:
    """The policy's spec, or IncompatiblePolicy naming what `what` (e.g. "scenario 'deeprm'") needs and which
    policies fit it."""
    s = spec(name)
    if s.runs_on(capability, family):
        return s
    valid = ", ".join(policies_for(capability, family)) or "(none registered)"
    if capability not in s.capabilities:
        does = " and ".join(CAPABILITY_WORDS.get(c, c) for c in sorted(s.capabilities)
                            if c in CAPABILITY_WORDS) or "declares no capability"
        why = f"policy {name!r} {does}, but {what} needs one that {CAPABILITY_WORDS.get(capability, capability)}"
    else:
        why = f"policy {name!r} works only on {', '.join(sorted(s.families))} scenarios, and {what} is {family}"
    raise IncompatiblePolicy(f"{why}; valid policies there: {valid}")


def check_options(s: PolicySpec, options: dict[str, Any]) -> None:
    """Refuse option names the policy does not take, and non-numbers for numeric options, naming the valid ones."""
    accepted = s.options()
    if accepted is None:
        return
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        valid = ", ".join(sorted(accepted)) or "none"
        raise OptionError(f"policy {s.name!r} has no option {', '.join(unknown)}; valid options: {valid}")
    for key, value in options.items():
        default = accepted[key].default
        numeric = isinstance(default, (int, float)) and not isinstance(default, bool)
        if numeric and (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)):
            raise OptionError(f"policy {s.name!r} option {key} takes a finite number (default {default}), "
                              f"not {value!r}")


def create(name: str, model: str | Path | None = None, **options: Any) -> Policy:
    """Build a registered policy; `model` is a model artifact path for learned policies."""
    s = spec(name)
    if s.model == "required" and model is None:
        raise OptionError(f"policy {name!r} needs a model artifact (--model PATH)")
    if s.model == "none" and model is not None:
        raise OptionError(f"policy {name!r} takes no model artifact; policies that do: "
                          f"{', '.join(p.name for p in available() if p.model != 'none')}")
    check_options(s, options)
    from policy_engine.artifact import ArtifactError

    try:
        if s.model == "none":
            return s.factory(**options)
        return s.factory(model=model, **options)
    except ArtifactError:
        raise
    except (ValueError, TypeError) as e:  # the factories validate their options with these
        raise OptionError(f"policy {name!r}: {e}") from e


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


def per_engine_state(policy: Policy) -> list[str]:
    """What this policy keeps per engine (empty for a stateless one): what would split, silently, across several
    server processes sharing a port."""
    reasons = [f"the engine keeps {name} for it" for name in sorted(policy.reads)]
    s = _REGISTRY.get(policy.name)
    if s is not None and s.learner and ONLINE_LEARNING in policy.capabilities:
        reasons.append("it learns online")
    return reasons
