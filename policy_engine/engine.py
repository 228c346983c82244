"""The engine: one policy plus what every transport needs around it.

The gRPC server and the emulator's in-process driver both call an Engine, so a decision does not depend on how it
was asked for. Around the pure policy the engine
  * decodes and validates requests (policy_engine.codec),
  * keeps each ask's count of missed scheduling opportunities across heartbeats (for delay-style policies),
  * enforces the safety invariant: no assignment beyond the node's unallocated resources, the ask's outstanding
    count, or its locality constraints, whatever the policy returned (learned policies included),
  * numbers decisions, counts them, and hands Report events to listeners (online learners, logs).
"""

from __future__ import annotations

import itertools
import logging
import os
from collections import OrderedDict
from typing import Callable, Iterable

from policy_engine import PROTOCOL_VERSION, __version__
from policy_engine.codec import (
    InvalidRequest,
    decode_route,
    decode_schedule,
    encode_route_decision,
    encode_schedule_decision,
)
from policy_engine.locality import AskOnNode
from policy_engine.policy import REPORT_CAPABILITY, ROUTE, SCHEDULE, Policy
from policy_engine.proto import pb
from policy_engine.types import (
    Assignment,
    Locality,
    RouteDecision,
    RouteObservation,
    ScheduleDecision,
    ScheduleObservation,
)

log = logging.getLogger(__name__)

EventListener = Callable[[pb.Event], None]
DecisionListener = Callable[[ScheduleObservation, ScheduleDecision], None]


class OpportunityTracker:
    """Missed scheduling opportunities per (application attempt, scheduler key), bounded in size (LRU)."""

    def __init__(self, max_keys: int = 200_000):
        self.max_keys = max_keys
        self._counts: OrderedDict[tuple, int] = OrderedDict()

    def offer(self, obs: ScheduleObservation) -> None:
        """Count this heartbeat as an opportunity for every ask that has pending containers and fits the node."""
        free = obs.node.unallocated
        counts = self._counts
        for ask in obs.asks:
            key = ask.key
            n = counts.pop(key, 0)
            if ask.num_containers > 0 and ask.resource.fits_in(free):
                n += 1
            counts[key] = n  # re-insert at the end: most recently seen
            ask.scheduling_opportunities = n
        while len(counts) > self.max_keys:
            counts.popitem(last=False)

    def settle(self, obs: ScheduleObservation, decision: ScheduleDecision) -> None:
        """Reset the count of every ask that got a node- or rack-local container (CapacityScheduler's rule)."""
        by_id = None
        for a in decision.assignments:
            if a.locality != Locality.OFF_SWITCH:
                if by_id is None:
                    by_id = {ask.ask_id: ask for ask in obs.asks}
                self._counts[by_id[a.ask_id].key] = 0

    def forget_application(self, application_id: str) -> None:
        for key in [k for k in self._counts if k[0] == application_id]:
            del self._counts[key]

    def __len__(self) -> int:
        return len(self._counts)


def clip_schedule(obs: ScheduleObservation, decision: ScheduleDecision) -> tuple[ScheduleDecision, int]:
    """Return the largest prefix-respecting part of `decision` that is valid, and how many containers were cut.

    Assignments are applied in order; each is cut to what still fits the node, the ask's outstanding count and its
    locality constraints, and relabelled with the locality level it really has on this node.
    """
    node = obs.node
    free = node.unallocated
    views: dict[str, AskOnNode] = {}
    asks = None
    out: list[Assignment] = []
    cut = 0
    for a in decision.assignments:
        if a.count <= 0:
            cut += max(-a.count, 0)
            continue
        view = views.get(a.ask_id)
        if view is None:
            if asks is None:
                asks = {ask.ask_id: ask for ask in obs.asks}
            ask = asks.get(a.ask_id)
            if ask is None:
                cut += a.count
                continue
            view = views[a.ask_id] = AskOnNode(ask, node)
        want = a.count
        for level in tuple(view.best_levels()):
            if want <= 0:
                break
            n = min(want, view.available(level), view.ask.resource.max_copies_in(free))
            if n <= 0:
                continue
            view.take(level, n)
            free = free.minus(view.ask.resource, n)
            want -= n
            if out and out[-1].ask_id == a.ask_id and out[-1].locality == level:
                out[-1].count += n
            else:
                out.append(Assignment(a.ask_id, n, level))
        cut += want
    return ScheduleDecision(out), cut


class EngineMetrics:
    """Prometheus metrics of one engine, in their own registry (several engines can live in one process)."""

    def __init__(self):
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry()
        self.decisions = Counter("yarnrl_decisions", "Decisions made", ["rpc", "policy"], registry=self.registry)
        self.latency = Histogram(
            "yarnrl_decision_latency_seconds", "Time to answer one request inside the engine", ["rpc"],
            buckets=(5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.5),
            registry=self.registry,
        )
        self.errors = Counter("yarnrl_request_errors", "Requests refused or failed", ["rpc", "code"],
                              registry=self.registry)
        self.containers = Counter("yarnrl_assigned_containers", "Containers assigned", ["locality"],
                                  registry=self.registry)
        self.clipped = Counter("yarnrl_clipped_containers",
                               "Containers a policy assigned beyond capacity or count, removed by the engine",
                               registry=self.registry)
        self.reports = Counter("yarnrl_report_events", "Feedback events received", ["kind"], registry=self.registry)
        self.asks = Counter("yarnrl_asks", "Asks seen by the policy, by whether they carried input block locations",
                            ["blocks"], registry=self.registry)


class Engine:
    def __init__(self, policy: Policy, metrics: EngineMetrics | None = None):
        self.policy = policy
        self.metrics = metrics
        self.opportunities = OpportunityTracker()
        self.listeners: list[EventListener] = []
        # Called on each observation before the policy sees it, to add what the caller did not send (for example
        # policy_engine.hdfs.BlockLocator.annotate: HDFS block locations of the asks' input paths).
        self.annotators: list[Callable[[ScheduleObservation], None]] = []
        # Called on each Report event before the listeners (for example policy_engine.labels.LocalityLabeler.label:
        # the read level of a map container from the job's blocks).
        self.event_annotators: list[EventListener] = []
        self.asks_seen = 0
        self.asks_with_blocks = 0
        # Called with (observation, clipped decision) after every Schedule: online learners pair them with Reports.
        self.decision_listeners: list[DecisionListener] = []
        self.learner = None
        self._ids = itertools.count(1)
        self._id_prefix = os.urandom(4).hex()
        self._locality_labels = {loc: loc.name.lower() for loc in Locality}

    # ------------------------------------------------------------ observation level (in-process callers)

    def schedule(self, obs: ScheduleObservation) -> ScheduleDecision:
        if SCHEDULE not in self.policy.capabilities:
            raise NotImplementedError(f"policy {self.policy.name!r} does not schedule on node heartbeats")
        for annotate in self.annotators:
            annotate(obs)
        with_blocks = sum(1 for ask in obs.asks if ask.job is not None and ask.job.input_blocks)
        self.asks_seen += len(obs.asks)
        self.asks_with_blocks += with_blocks
        self.opportunities.offer(obs)
        decision, cut = clip_schedule(obs, self.policy.schedule(obs))
        self.opportunities.settle(obs, decision)
        m = self.metrics
        if m is not None:
            m.decisions.labels("schedule", self.policy.name).inc()
            for a in decision.assignments:
                m.containers.labels(self._locality_labels[a.locality]).inc(a.count)
            if cut:
                m.clipped.inc(cut)
            if with_blocks:
                m.asks.labels("yes").inc(with_blocks)
            if len(obs.asks) > with_blocks:
                m.asks.labels("no").inc(len(obs.asks) - with_blocks)
        if cut:
            log.debug("policy %s assigned %d containers beyond what node %s allows; removed", self.policy.name, cut,
                      obs.node.node_id)
        for listener in self.decision_listeners:
            listener(obs, decision)
        return decision

    def attach_learner(self):
        """Attach the policy's online learner, if it has one (a policy may define `make_learner()` returning an
        object with `attach(engine)` and `close()`); the server and the in-process driver both call this, so a
        learning policy learns the same way behind either. Returns the learner or None."""
        make = getattr(self.policy, "make_learner", None)
        learner = make() if make is not None else None
        if learner is not None:
            learner.attach(self)
            self.learner = learner
        return learner

    def close(self) -> None:
        """Let the learner persist what it learned (on shutdown)."""
        if self.learner is not None:
            self.learner.close()

    def route(self, obs: RouteObservation) -> RouteDecision:
        if ROUTE not in self.policy.capabilities:
            raise NotImplementedError(f"policy {self.policy.name!r} does not route jobs to clusters")
        decision = self.policy.route(obs)
        if not (0 <= decision.job_index < len(obs.jobs)):
            raise RuntimeError(f"policy {self.policy.name!r} chose job index {decision.job_index} "
                               f"of a buffer of {len(obs.jobs)}")
        if all(c.cluster_id != decision.cluster_id for c in obs.clusters):
            raise RuntimeError(f"policy {self.policy.name!r} chose unknown cluster {decision.cluster_id}")
        if self.metrics is not None:
            self.metrics.decisions.labels("route", self.policy.name).inc()
        return decision

    def report(self, events: Iterable[pb.Event]) -> int:
        n = 0
        for ev in events:
            kind = ev.WhichOneof("kind")
            if kind is None:
                raise InvalidRequest(f"events[{n}]: no event kind set")
            if kind == "job_finished" and ev.job_finished.job_id:
                self.opportunities.forget_application(ev.job_finished.job_id)
            if self.metrics is not None:
                self.metrics.reports.labels(kind).inc()
            for annotate in self.event_annotators:
                annotate(ev)
            for listener in self.listeners:
                listener(ev)
            n += 1
        return n

    # ------------------------------------------------------------ message level (the gRPC server)

    def next_decision_id(self) -> str:
        return f"{self._id_prefix}-{next(self._ids)}"

    def schedule_pb(self, req: pb.ScheduleRequest) -> pb.ScheduleResponse:
        obs = decode_schedule(req)
        decision = self.schedule(obs)
        return encode_schedule_decision(decision, req.request_id, self.next_decision_id(), self.policy.name,
                                        self.policy.model_version)

    def route_pb(self, req: pb.RouteRequest) -> pb.RouteResponse:
        obs = decode_route(req)
        decision = self.route(obs)
        return encode_route_decision(decision, obs, self.next_decision_id(), self.policy.name,
                                     self.policy.model_version)

    def report_pb(self, req: pb.ReportRequest) -> pb.ReportResponse:
        return pb.ReportResponse(accepted=self.report(req.events))

    def info_pb(self) -> pb.GetInfoResponse:
        caps = sorted(self.policy.capabilities | {REPORT_CAPABILITY})
        return pb.GetInfoResponse(
            protocol_version=PROTOCOL_VERSION, policy=self.policy.name, model_version=self.policy.model_version,
            model_checksum=self.policy.model_checksum, capabilities=caps, engine_version=__version__,
        )
