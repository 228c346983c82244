"""The engine: one policy plus what every transport needs around it.

The gRPC server and the emulator's in-process driver both call an Engine with observation objects (the server
decodes and validates messages with policy_engine.codec first), so a decision does not depend on how it was asked
for. Around the pure policy the engine
  * owns all state that outlives one call, in one EngineState (like the Kubernetes scheduler's CycleState): each
    ask's count of missed scheduling opportunities across heartbeats, kept only when the policy declares that it
    reads it (Policy.reads), and the decision-id counter;
  * fills a Route request's turn (RouteObservation.sequence) from a `<stream>:<n>` request id when an older caller
    did not send RouteRequest.sequence;
  * enforces the safety invariant: no assignment beyond the node's unallocated resources, the ask's outstanding
    count, or its locality constraints, whatever the policy returned (learned policies included);
  * builds the policy's online learner from the registry and feeds it decision traces and Report events through
    a bounded queue (policy_engine.learning), off the decision path;
  * numbers decisions and counts them.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections import OrderedDict
from typing import Any, Callable, Iterable

import numpy as np

from policy_engine.learning import DEFAULT_CAPACITY, LearningLoop
from policy_engine.locality import AskOnNode, place
from algorithms.deeprm.view import DeepRMView, DeepRMViewConfig, policy_shape
from policy_engine.policy import (DEEPRM_JOBS, ROUTE, SCHEDULE, SCHEDULING_OPPORTUNITIES, ObservationMismatch, Policy,
                                  make_learner)
from policy_engine.types import (
    Assignment,
    Event,
    JobFinished,
    Locality,
    RouteDecision,
    RouteObservation,
    RouteSequence,
    ScheduleDecision,
    ScheduleObservation,
)

log = logging.getLogger(__name__)

EventListener = Callable[[Event], None]


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
            if getattr(obs.asks, "unique_ids", False):  # the batched path's lists: ids unique, placed asks early
                ask_id, ask = a.ask_id, None
                for x in obs.asks:
                    if x.ask_id == ask_id:
                        ask = x
                        break
            else:
                if asks is None:
                    asks = {ask.ask_id: ask for ask in obs.asks}
                ask = asks.get(a.ask_id)
            if ask is None:
                cut += a.count
                continue
            view = views[a.ask_id] = AskOnNode(ask, node)
        free, placed = place(out, view, free, limit=a.count, merge=True)
        cut += a.count - placed
    return ScheduleDecision(out), cut


def sequence_from_request_id(request_id: str) -> RouteSequence | None:
    """Older callers' turn: a request id of the form `<stream>:<n>` (the emulator's before RouteRequest.sequence)."""
    stream, sep, n = request_id.rpartition(":")
    if not sep or not n.isdigit():
        return None
    return RouteSequence(stream, int(n))


class EngineState:
    """Everything an engine keeps between calls, in one place (the engine owns it; policies read what they declare
    through their observations, learners keep their own state behind the learning queue)."""

    def __init__(self, track_opportunities: bool, deeprm: DeepRMView | None = None):
        self.opportunities = OpportunityTracker() if track_opportunities else None
        # DeepRM's job slots, backlog, lengths and cluster image from plugin heartbeats (policies that read them)
        self.deeprm = deeprm
        self.decisions = itertools.count(1)
        self.id_prefix = os.urandom(4).hex()

    def next_decision_id(self) -> str:
        return f"{self.id_prefix}-{next(self.decisions)}"


def fits_together(v, tasks: np.ndarray, nodes: np.ndarray) -> bool:
    """Do these tasks all fit on these nodes of the manager's view at once."""
    size = v.cpu_free.size
    need_c = np.bincount(nodes, weights=v.task_cpu[tasks], minlength=size)
    need_n = np.bincount(nodes, weights=v.task_net[tasks], minlength=size)
    return bool((need_c <= v.cpu_free).all() and (need_n <= v.net_free).all())


def clip_manager(obs: RouteObservation, decision: RouteDecision) -> tuple[RouteDecision, int]:
    """A DSRAP manager's decision cut to what holds (the Route counterpart of clip_schedule): every allocation on a
    node of its own cluster with room left (in task order), every forward to a neighbour, of a task not allocated,
    within the transfer limit. Returns the checked decision and how many task decisions were removed."""
    v = obs.manager
    n = v.task_id.size
    node = np.full(n, -1, dtype=np.int64) if decision.task_node is None else np.asarray(decision.task_node, np.int64)
    nxt = np.full(n, -1, dtype=np.int64) if decision.task_next is None else np.asarray(decision.task_next, np.int64)
    if node.shape != (n,) or nxt.shape != (n,):
        raise RuntimeError(f"policy answered for {node.size} / {nxt.size} tasks of a manager holding {n}")
    node, nxt = node.copy(), nxt.copy()
    cut = 0
    alloc = np.flatnonzero(node >= 0)
    if alloc.size and not (node[alloc].max() < v.cpu_free.size and fits_together(v, alloc, node[alloc])):
        cpu_free, net_free = v.cpu_free.copy(), v.net_free.copy()
        for i in alloc.tolist():  # the slow path: keep allocations in task order while they fit
            k = int(node[i])
            if k >= cpu_free.size or cpu_free[k] < v.task_cpu[i] or net_free[k] < v.task_net[i]:
                node[i] = -1
                cut += 1
                continue
            cpu_free[k] -= v.task_cpu[i]
            net_free[k] -= v.task_net[i]
    bad = (nxt >= 0) & ((node >= 0) | ~(nxt[:, None] == v.neighbors[None, :]).any(axis=1))
    nxt[bad] = -1
    cut += int(bad.sum())
    fwd = np.flatnonzero(nxt >= 0)
    if fwd.size > v.transfer_limit:
        nxt[fwd[v.transfer_limit:]] = -1
        cut += fwd.size - v.transfer_limit
    return RouteDecision(decision.job_index, v.cluster_id, node, nxt, decision.trace), cut


class EngineMetrics:
    """Prometheus metrics of one engine, in their own registry (several engines can live in one process)."""

    def __init__(self):
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

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
        self.learner_dropped = Counter("yarnrl_learner_dropped", "Decisions and Report batches the online learner "
                                       "could not take (its queue was full)", ["kind"], registry=self.registry)
        self.learner_errors = Gauge("yarnrl_learner_errors", "Learner failures so far (logged, never fatal)",
                                    registry=self.registry)
        self.learner_queue = Gauge("yarnrl_learner_queue", "Decisions and Report batches waiting for the learner",
                                   registry=self.registry)
        self.decision_log_dropped = Counter(
            "yarnrl_decision_log_dropped", "Decisions and Report batches the decision log could not take (its "
            "queue was full: the disk or the writer is behind)", ["kind"], registry=self.registry)
        self.reloads = Counter("yarnrl_model_reloads", "Live model reloads (SIGHUP or --watch) by result: ok, "
                               "refused (bad file; the old model kept serving), unchanged", ["result"],
                               registry=self.registry)
        self.deeprm_estimates = Counter(
            "yarnrl_deeprm_runtime_estimates", "DeepRM jobs whose length was estimated (the queue's finished "
            "containers, else the default) because the yarnrl.expected-runtime-ms tag was missing, malformed or "
            "absurd", ["reason"], registry=self.registry)
        self.unauthenticated = Counter("yarnrl_unauthenticated", "RPCs refused for a missing or wrong bearer "
                                       "token (--token-file)", registry=self.registry)
        # Shadow mode (ScheduleRequest.shadow): the engine's decision is not applied; YARN's placements come back as
        # ContainerStarted events naming the decision (policy_engine/shadow.py).
        self.shadow_decisions = Counter("yarnrl_shadow_decisions", "Shadow-mode decisions (answered, not applied)",
                                        registry=self.registry)
        self.shadow_containers = Counter(
            "yarnrl_shadow_containers", "Shadow mode: containers by who placed them (engine: what it would have "
            "placed; yarn: what YARN placed on the same heartbeats) and locality", ["placed_by", "locality"],
            registry=self.registry)
        self.shadow_placements = Counter(
            "yarnrl_shadow_placements", "ContainerStarted events matched to a shadow decision, by whether the "
            "engine had chosen the same node for that ask (agree) or not", ["outcome"], registry=self.registry)
        # Labelled children, looked up once (labels() costs microseconds on every decision otherwise).
        self._decided: dict[tuple[str, str], Any] = {}
        self._placed: dict[Locality, Any] = {}
        self._asks: dict[bool, Any] = {}
        self._reported: dict[str, Any] = {}

    def decided(self, rpc: str, policy: str) -> None:
        child = self._decided.get((rpc, policy))
        if child is None:
            child = self._decided[(rpc, policy)] = self.decisions.labels(rpc, policy)
        child.inc()

    def asks_with_blocks(self, blocks: bool, n: int) -> None:
        child = self._asks.get(blocks)
        if child is None:
            child = self._asks[blocks] = self.asks.labels("yes" if blocks else "no")
        child.inc(n)

    def reported(self, events: list) -> None:
        """yarnrl_report_events by kind, one increment per kind of the batch."""
        kinds: dict[str, int] = {}
        for ev in events:
            kinds[ev.kind] = kinds.get(ev.kind, 0) + 1
        for kind, n in kinds.items():
            child = self._reported.get(kind)
            if child is None:
                child = self._reported[kind] = self.reports.labels(kind)
            child.inc(n)

    def placed(self, locality: Locality, n: int) -> None:
        child = self._placed.get(locality)
        if child is None:
            child = self._placed[locality] = self.containers.labels(locality.name.lower())
        child.inc(n)


class Engine:
    """`learning`: "thread" runs the policy's online learner in its own thread behind a bounded queue (what
    `policy-engine serve` does); "inline" runs it in the caller's thread in the same order (the emulator's
    in-process driver and offline training: deterministic, nothing dropped)."""

    def __init__(self, policy: Policy, metrics: EngineMetrics | None = None, learning: str = "inline",
                 queue_capacity: int = DEFAULT_CAPACITY, deeprm: DeepRMViewConfig | None = None):
        if learning not in ("thread", "inline"):
            raise ValueError(f"learning must be 'thread' or 'inline', not {learning!r}")
        self.policy = policy
        self.metrics = metrics
        self.deeprm_config = deeprm or DeepRMViewConfig()
        self.state = EngineState(SCHEDULING_OPPORTUNITIES in policy.reads, self._deeprm_view(policy))
        # In-process observers of Report events (offline training logs); online learners go through `learning`.
        self.listeners: list[EventListener] = []
        # Called on each observation before the policy sees it, to add what the caller did not send (for example
        # policy_engine.hdfs.BlockLocator.annotate: HDFS block locations of the asks' input paths).
        self.annotators: list[Callable[[ScheduleObservation], None]] = []
        # Called on each Report event before listeners and the learner see it (for example
        # policy_engine.labels.LocalityLabeler.label: the read level of a map container from the job's blocks).
        self.event_annotators: list[EventListener] = []
        self.asks_seen = 0
        self.asks_with_blocks = 0
        self.learner = None
        self.learning: LearningLoop | None = None
        self.decision_log = None  # policy_engine.decision_log.DecisionLog, when attached
        self._shadow = None  # policy_engine.shadow.ShadowRecorder, made on the first shadow request
        self._learning_mode = learning
        self._queue_capacity = queue_capacity

    def _deeprm_view(self, policy: Policy) -> DeepRMView | None:
        if DEEPRM_JOBS not in policy.reads:
            return None
        view = DeepRMView(*policy_shape(policy), self.deeprm_config)
        view.on_estimate = self._count_estimate
        return view

    def _count_estimate(self, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.deeprm_estimates.labels(reason).inc()

    @property
    def opportunities(self) -> OpportunityTracker | None:
        return self.state.opportunities

    # ------------------------------------------------------------ observation level

    def schedule(self, obs: ScheduleObservation, count_opportunities: bool = True) -> ScheduleDecision:
        """`count_opportunities` False: the caller has counted this heartbeat's missed opportunities into the asks
        and resets them after the decision itself (policy_engine.batch.BatchOpportunities)."""
        policy = self.policy
        if SCHEDULE not in policy.capabilities:
            raise NotImplementedError(f"policy {policy.name!r} does not schedule on node heartbeats")
        for annotate in self.annotators:
            annotate(obs)
        with_blocks = getattr(obs.asks, "with_blocks", -1)  # the batched path counts them once per batch
        if with_blocks < 0:
            with_blocks = sum(1 for ask in obs.asks if ask.job is not None and ask.job.input_blocks)
        self.asks_seen += len(obs.asks)
        self.asks_with_blocks += with_blocks
        opportunities = self.state.opportunities if count_opportunities else None
        if opportunities is not None:
            opportunities.offer(obs)
        learning = self.learning
        deeprm = self.state.deeprm
        seen = deeprm.observe(obs) if deeprm is not None else None
        if seen is not None:
            # a plugin heartbeat: the policy decides on DeepRM's view of it, the answer is checked against the real
            # node (after the admitted applications' own asks, which the view serves first)
            view, first = seen
            if learning is None:
                raw = policy.schedule(view)
            else:
                raw, trace = policy.schedule_traced(view)
            decision, cut = clip_schedule(obs, ScheduleDecision(first + list(raw.assignments)))
            deeprm.settle(view, decision)
        elif learning is None:
            decision, cut = clip_schedule(obs, policy.schedule(obs))
        else:
            raw, trace = policy.schedule_traced(obs)
            decision, cut = clip_schedule(obs, raw)
        if opportunities is not None:
            opportunities.settle(obs, decision)
        m = self.metrics
        if m is not None:
            m.decided("schedule", policy.name)
            for a in decision.assignments:
                m.placed(a.locality, a.count)
            if cut:
                m.clipped.inc(cut)
            if with_blocks:
                m.asks_with_blocks(True, with_blocks)
            if len(obs.asks) > with_blocks:
                m.asks_with_blocks(False, len(obs.asks) - with_blocks)
        if cut:
            log.debug("policy %s assigned %d containers beyond what node %s allows; removed", policy.name, cut,
                      obs.node.node_id)
        if learning is not None:
            learning.decision(trace)  # never blocks: dropped and counted when the learner is behind
        return decision

    def attach_learner(self):
        """Build the policy's online learner from the registry (if it has one and learns) and start feeding it;
        the server and the in-process driver both call this, so a learning policy learns the same way behind
        either. Returns the learner or None."""
        learner = make_learner(self.policy)
        if learner is not None:
            self.learner = learner
            # A policy whose algorithm learns between its own decisions (DSRAP's FAL: Algorithm 4 learns inside the
            # allocation loop, and each manager's next step reads the updated tables) declares `learns_inline`; its
            # learner then runs in the caller's thread even behind the server (updates only, no I/O).
            threaded = self._learning_mode == "thread" and not getattr(self.policy, "learns_inline", False)
            self.learning = LearningLoop(learner, self._queue_capacity, threaded=threaded, on_drop=self._count_drop)
            self.bind_metrics()
        return learner

    def swap_policy(self, policy: Policy):
        """Serve `policy` (a reloaded model of the same policy) from the next call on. The caller runs this between
        calls (the server's event loop). A learning policy gets a new learner; the old LearningLoop is returned
        for the caller to close off the decision path (its final publish and save), or None."""
        if policy.name != self.policy.name:
            raise ValueError(f"cannot swap policy {self.policy.name!r} for {policy.name!r}")
        old = self.learning
        self.policy = policy
        if self.state.deeprm is not None and policy_shape(policy) != (self.state.deeprm.spec, self.state.deeprm.m):
            self.state.deeprm = self._deeprm_view(policy)  # a model of another shape: its jobs start afresh
        if old is not None:
            self.learner, self.learning = None, None
            self.attach_learner()
        return old

    def bind_metrics(self) -> None:
        """Expose the learner's error count and queue length as gauges (read when Prometheus scrapes)."""
        if self.metrics is not None and self.learning is not None:
            learning = self.learning
            self.metrics.learner_errors.set_function(lambda: learning.learner.errors)
            self.metrics.learner_queue.set_function(learning.pending)

    def attach_decision_log(self, directory, rotate_mb: float | None = None, threaded: bool | None = None,
                            **options):
        """Log every decision made through schedule_logged / route_logged, and every Report event, to Parquet in
        `directory` (policy_engine.decision_log). `threaded` defaults to the learning mode: a writer thread behind
        a bounded queue for the server, inline (deterministic) for in-process runs."""
        from policy_engine.decision_log import DEFAULT_ROTATE_MB, DecisionLog

        if threaded is None:
            threaded = self._learning_mode == "thread"
        self.decision_log = DecisionLog(directory, rotate_mb=rotate_mb or DEFAULT_ROTATE_MB, threaded=threaded,
                                        on_drop=self._count_log_drop, **options)
        return self.decision_log

    def _count_log_drop(self, kind: str) -> None:
        if self.metrics is not None:
            self.metrics.decision_log_dropped.labels(kind).inc()

    def schedule_logged(self, obs: ScheduleObservation, raw: bytes | None = None,
                        count_opportunities: bool = True) -> tuple[ScheduleDecision, str]:
        """schedule(), numbered, and logged when a decision log is attached (never blocks on it). `raw`: the
        serialized request `obs` was decoded from, logged as it is unless annotators edit the observation."""
        t0 = time.perf_counter()
        decision = self.schedule(obs, count_opportunities)
        decision_id = self.state.next_decision_id()
        if obs.shadow:
            self.shadow.decided(decision_id, obs, decision)
        dlog = self.decision_log
        if dlog is not None:
            dlog.schedule(obs, decision, decision_id, self.policy, time.perf_counter() - t0,
                          raw=None if self.annotators else raw)
        return decision, decision_id

    @property
    def shadow(self):
        """What this engine would have placed against what YARN placed, for shadow requests (policy_engine.shadow)."""
        if self._shadow is None:
            from policy_engine.shadow import ShadowRecorder

            self._shadow = ShadowRecorder(self.metrics)
        return self._shadow

    def route_logged(self, obs: RouteObservation) -> tuple[RouteDecision, str]:
        t0 = time.perf_counter()
        decision = self.route(obs)
        decision_id = self.state.next_decision_id()
        dlog = self.decision_log
        if dlog is not None:
            dlog.route(obs, decision, decision_id, self.policy, time.perf_counter() - t0)
        return decision, decision_id

    def _count_drop(self, kind: str) -> None:
        if self.metrics is not None:
            self.metrics.learner_dropped.labels(kind).inc()

    def close(self) -> None:
        """Let the learner finish what is queued and persist what it learned, and close the decision log's files
        (on shutdown)."""
        if self.decision_log is not None:
            self.decision_log.close()
        if self.learning is not None:
            self.learning.close()

    def route(self, obs: RouteObservation) -> RouteDecision:
        if ROUTE not in self.policy.capabilities:
            raise NotImplementedError(f"policy {self.policy.name!r} does not route jobs to clusters")
        observes = getattr(self.policy, "route_observes", "jobs")
        if (obs.manager is not None) != (observes == "manager"):
            raise ObservationMismatch(
                f"policy {self.policy.name!r} decides for DSRAP cluster managers: the request needs `manager`"
                if observes == "manager" else
                f"policy {self.policy.name!r} routes buffered jobs to clusters: a DSRAP `manager` request is not "
                "for it")
        if obs.sequence is None:
            obs.sequence = sequence_from_request_id(obs.request_id)
        decision = self.policy.route(obs)
        if obs.manager is not None:
            return self._manager_decision(obs, decision)
        if not (0 <= decision.job_index < len(obs.jobs)):
            raise RuntimeError(f"policy {self.policy.name!r} chose job index {decision.job_index} "
                               f"of a buffer of {len(obs.jobs)}")
        cluster_id = decision.cluster_id
        for c in obs.clusters:
            if c.cluster_id == cluster_id:
                break
        else:
            raise RuntimeError(f"policy {self.policy.name!r} chose unknown cluster {decision.cluster_id}")
        if self.metrics is not None:
            self.metrics.decided("route", self.policy.name)
        return decision

    def _manager_decision(self, obs: RouteObservation, decision: RouteDecision) -> RouteDecision:
        """A DSRAP manager's step: checked by clip_manager, then handed to the learner with what the policy saw."""
        decision, cut = clip_manager(obs, decision)
        if cut:
            log.debug("policy %s: %d task decisions for manager %d did not hold; removed", self.policy.name, cut,
                      obs.manager.cluster_id)
        m = self.metrics
        if m is not None:
            m.decided("route", self.policy.name)
            if cut:
                m.clipped.inc(cut)
        if self.learning is not None:
            self.learning.decision((obs, decision))
        return decision

    def report(self, events: Iterable[Event], done: Callable[[], None] | None = None) -> int:
        """Take feedback events; `done()` is called once the learner (if any) has taken them in, at once
        otherwise. Returns how many were accepted."""
        events = list(events)
        for i, ev in enumerate(events):
            if not isinstance(ev, Event) or not ev.kind:
                raise InvalidEvent(f"events[{i}]: not a feedback event ({type(ev).__name__})")
        if not events:
            if done is not None:
                done()
            return 0
        if self.decision_log is not None:
            self.decision_log.events(events)
        opportunities = self.state.opportunities
        deeprm = self.state.deeprm
        m = self.metrics
        if m is not None:
            m.reported(events)
        for ev in events:
            if opportunities is not None and isinstance(ev, JobFinished) and ev.job_id:
                opportunities.forget_application(ev.job_id)
            if deeprm is not None:
                deeprm.event(ev)
            for annotate in self.event_annotators:
                annotate(ev)
            if self._shadow is not None:  # after the labeler: YARN's placement with the engine's read level
                self._shadow.observe(ev)
            for listener in self.listeners:
                listener(ev)
        if self.learning is not None:
            if not self.learning.events(events, done) and done is not None:
                done()  # dropped (queue full): nothing to wait for
        elif done is not None:
            done()
        return len(events)

    def next_decision_id(self) -> str:
        return self.state.next_decision_id()


class InvalidEvent(ValueError):
    """Something that is not a feedback event was reported (an in-process caller's bug)."""
