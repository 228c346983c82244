"""DeepRM's view of a real YARN, built by the engine (Mao et al., HotNets 2016; the DeepRM reproduction).

DeepRM's policies (deeprm-pg, sjf, sjf-holdback, packer, deeprm-random) read a job-slot view: every waiting job
is one single-container ask tagged with its slot (JobMetadata.tags["slot"] = "0".."M-1" or "backlog", "slots" =
M), its length in expected_runtime_ms and the running containers with their remaining time
(policy_engine.features.deeprm). The emulator's `deeprm` scenario sends exactly that. A real heartbeat from the
plugin carries none of it; this module builds it from what the plugin does send, and keeps what outlives one
heartbeat in its own explicit state (the engine owns it; the policies stay pure functions of the view):

* **Jobs, slots, backlog.** A job is an application whose first container has not been allocated yet; its demand
  is its first pending ask (for a single-container job, the AM's). Jobs enter in the order the plugin lists them
  (submission order, then application id); the first empty of the M slots takes a new job, else it joins the
  backlog. A job leaves when it gets a container (this engine's decision, applied in assignment order as DeepRM's
  environment does: the freed slot takes the backlog's first job), or when its ask disappears (native fallback,
  killed); the freed slots then take the backlog's first jobs in slot order. Applications that already hold a
  container ("admitted": a running container on any node, or an earlier assignment) are not DeepRM jobs any more:
  their further asks are served first, in order, as far as they fit, and the policy sees the node without them.
* **Length** from the application tag `yarnrl.expected-runtime-ms` (JobTags passes it as expected_runtime_ms and,
  raw, in tags). Missing, malformed, zero/negative or longer than a week (`MAX_RUNTIME_MS`): the mean run time of
  the finished containers of the job's queue (from ContainerFinished reports, the last 100), else
  `default_runtime_ms`; counted per reason (`estimates`, exported as yarnrl_deeprm_runtime_estimates). Never a
  refusal.
* **Time.** One DeepRM step is `step_ms` of real time. Times are rounded to whole steps (now, submit and start
  times to the nearest step, lengths up), so heartbeat jitter below half a step changes nothing.
* **Resources.** DeepRM's machine has `res_slot` units of each resource. `image="node"` (the default): each
  heartbeat's node is DeepRM's machine (units = the node's total / res_slot), the image is that node's running
  containers; the policy decides for that node as DeepRM decides for its one machine. `image="pooled"`: the whole
  cluster is the machine (units = the cluster's total / res_slot), the image holds every node's running containers
  (each node's last heartbeat, kept current by ContainerStarted / ContainerFinished reports), jobs fit against this
  node's free resources. Demands round up to units, free resources down, so a job that fits in units fits for real.
  benchmarks/deeprm_real.py measures both mappings in the emulator.
"""

from __future__ import annotations

import math
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, replace

from policy_engine.features.deeprm import BACKLOG, DEFAULT_SLOTS, SLOT_TAG, SLOTS_TAG, ImageSpec
from policy_engine.types import (
    Assignment,
    Ask,
    Container,
    ContainerFinished,
    ContainerStarted,
    Event,
    JobFinished,
    JobMetadata,
    Locality,
    Node,
    Resource,
    ScheduleDecision,
    ScheduleObservation,
)

RUNTIME_TAG = "yarnrl.expected-runtime-ms"
MAX_RUNTIME_MS = 7 * 24 * 3600 * 1000   # a job tagged longer than a week is taken as a mistake
IMAGES = ("node", "pooled")
ESTIMATE_REASONS = ("missing", "malformed", "absurd")
FINISHED_KEPT = 100                      # finished container run times kept per queue for the estimate


@dataclass(frozen=True)
class DeepRMViewConfig:
    step_ms: int = 1000               # real milliseconds per DeepRM time step
    image: str = "node"               # "node": each node is DeepRM's machine; "pooled": the cluster is
    default_runtime_ms: int = 10_000  # a job's length when untagged and its queue has no finished container yet
    max_apps: int = 100_000           # applications remembered (lengths, admissions), oldest forgotten first

    def __post_init__(self):
        if not 1 <= self.step_ms <= 3_600_000:
            raise ValueError(f"DeepRM step must be 1 ms .. 1 h, got {self.step_ms} ms")
        if self.image not in IMAGES:
            raise ValueError(f"DeepRM image must be one of {', '.join(IMAGES)}, got {self.image!r}")
        if not 1 <= self.default_runtime_ms <= MAX_RUNTIME_MS:
            raise ValueError(f"default run time must be 1 ms .. a week, got {self.default_runtime_ms} ms")
        if self.max_apps < 1:
            raise ValueError("max_apps must be >= 1")


def policy_shape(policy) -> tuple[ImageSpec, int]:
    """The image spec and M a DeepRM policy decides with (deeprm-pg: its model's; the rules: the defaults)."""
    spec = getattr(policy, "spec", None)
    if not isinstance(spec, ImageSpec):
        spec = ImageSpec()
    m = getattr(policy, "num_slots", None)
    if not isinstance(m, int) or m < 1:
        m = spec.num_slots if isinstance(getattr(policy, "spec", None), ImageSpec) else DEFAULT_SLOTS
    return spec, m


class _Lru(OrderedDict):
    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def put(self, key, value) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


@dataclass
class _NodeImage:
    total: Resource
    running: dict[str, Container]


class DeepRMView:
    """The engine-kept state behind DeepRM's view of a YARN cluster (see the module docstring)."""

    def __init__(self, spec: ImageSpec, num_slots: int, config: DeepRMViewConfig = DeepRMViewConfig()):
        self.spec, self.m, self.cfg = spec, int(num_slots), config
        self.slots: list[str | None] = [None] * self.m
        self.backlog: list[str] = []
        self.admitted: _Lru = _Lru(config.max_apps)
        self.runtime_ms: _Lru = _Lru(config.max_apps)    # application -> length used (real ms)
        self.resource: _Lru = _Lru(config.max_apps)      # application -> its job's container resource
        self.queue: _Lru = _Lru(config.max_apps)         # application -> queue
        self.finished: dict[str, deque] = {}             # queue -> recent container run times (ms)
        self.nodes: dict[str, _NodeImage] = {}
        self.estimates: Counter = Counter()
        self.on_estimate = None                          # callback(reason), for the engine's metrics

    # ------------------------------------------------------------------ lengths

    def _estimate(self, queue: str) -> int:
        recent = self.finished.get(queue)
        if recent:
            return max(1, int(sum(recent) / len(recent)))
        return self.cfg.default_runtime_ms

    def length_ms(self, ask: Ask) -> int:
        """The job's length in real ms: its tag, or an estimate (counted once per application and reason)."""
        app = ask.application_id
        known = self.runtime_ms.get(app)
        if known is not None:
            return known
        job = ask.job
        raw = job.tags.get(RUNTIME_TAG) if job is not None else None
        value = job.expected_runtime_ms if job is not None else 0
        reason = None
        if raw is None and value <= 0:
            reason = "missing"
        else:
            if raw is not None:
                try:
                    value = int(raw.strip())
                except ValueError:
                    reason = "malformed"
            if reason is None and not 0 < value <= MAX_RUNTIME_MS:
                reason = "absurd"
        if reason is not None:
            value = self._estimate(ask.queue)
            self.estimates[reason] += 1
            if self.on_estimate is not None:
                self.on_estimate(reason)
        self.runtime_ms.put(app, value)
        self.queue.put(app, ask.queue)
        return value

    def _app_length_ms(self, app: str) -> int:
        known = self.runtime_ms.get(app)
        return known if known is not None else self._estimate(self.queue.get(app, ""))

    # ------------------------------------------------------------------ time and units

    def _step(self, ms: int) -> int:
        return int(math.floor(ms / self.cfg.step_ms + 0.5))

    def _steps_up(self, ms: int) -> int:
        return max(1, -(-int(ms) // self.cfg.step_ms))

    def _units(self, obs: ScheduleObservation) -> tuple[float, float]:
        """Real memory (MB) and vcores per DeepRM unit."""
        if self.cfg.image == "pooled":
            total = obs.cluster.total
            if total.memory_mb <= 0 or total.vcores <= 0:
                mem = sum(n.total.memory_mb for n in self.nodes.values())
                vc = sum(n.total.vcores for n in self.nodes.values())
                total = Resource(mem, vc)
        else:
            total = obs.node.total
        rs = self.spec.res_slot
        return max(total.memory_mb, 1) / rs, max(total.vcores, 1) / rs

    def _scaled(self, r: Resource, per: tuple[float, float], up: bool) -> Resource:
        """`r` in DeepRM units, as a Resource the policy's ImageSpec.units reads back (memory_unit_mb per unit)."""
        rnd = (lambda x: math.ceil(x - 1e-9)) if up else (lambda x: math.floor(x + 1e-9))
        mem = max(0, rnd(r.memory_mb / per[0]))
        vc = max(0, rnd(r.vcores / per[1]))
        return Resource(mem * self.spec.memory_unit_mb, vc)

    # ------------------------------------------------------------------ the view

    def _admit(self, app: str) -> None:
        self.admitted.put(app, True)

    def _leave(self, app: str, refill: bool) -> None:
        """The job of `app` left DeepRM's queue; with `refill` its slot takes the backlog's first job now."""
        if app in self.slots:
            k = self.slots.index(app)
            self.slots[k] = self.backlog.pop(0) if (refill and self.backlog) else None
        elif app in self.backlog:
            self.backlog.remove(app)

    def observe(self, obs: ScheduleObservation) -> tuple[ScheduleObservation, list[Assignment]] | None:
        """DeepRM's view of a plugin heartbeat, and the assignments of admitted applications' asks served first; None
        when the observation already is a DeepRM view (the emulator's `deeprm` scenario), to be passed through."""
        for ask in obs.asks:
            if ask.job is not None and SLOT_TAG in ask.job.tags:
                return None
        node = obs.node
        for c in node.running:
            self._admit(c.application_id)
        self._remember_node(node)
        # admitted applications' asks first, in order, as far as they fit; the policy sees the rest of the node
        free = node.unallocated
        first: list[Assignment] = []
        waiting: OrderedDict[str, Ask] = OrderedDict()
        for ask in obs.asks:
            if ask.num_containers <= 0:
                continue
            app = ask.application_id
            self.length_ms(ask)   # the tag holds for all the application's containers
            if app in self.admitted:
                n = min(ask.num_containers, ask.resource.max_copies_in(free))
                if n > 0:
                    first.append(Assignment(ask.ask_id, n, Locality.OFF_SWITCH))
                    free = free.minus(ask.resource, n)
            elif app not in waiting:
                waiting[app] = ask
                if app not in self.resource:
                    self.resource.put(app, ask.resource)
        # jobs gone without this engine's decision free their slots, which take the backlog's first jobs
        known = set(s for s in self.slots if s is not None) | set(self.backlog)
        gone = known - waiting.keys()
        if gone:
            self.backlog = [a for a in self.backlog if a not in gone]
            for k, a in enumerate(self.slots):
                if a in gone:
                    self.slots[k] = None
            for k, a in enumerate(self.slots):
                if a is None and self.backlog:
                    self.slots[k] = self.backlog.pop(0)
        for app in waiting:
            if app in known:
                continue
            for k, a in enumerate(self.slots):
                if a is None:
                    self.slots[k] = app
                    break
            else:
                self.backlog.append(app)
        return self._render(obs, waiting, free), first

    def _remember_node(self, node: Node) -> None:
        self.nodes[node.node_id] = _NodeImage(node.total, {c.container_id: c for c in node.running})

    def _render(self, obs: ScheduleObservation, waiting: dict[str, Ask], free: Resource) -> ScheduleObservation:
        spec, node = self.spec, obs.node
        per = self._units(obs)
        unit_ms = spec.step_ms
        now = self._step(node.timestamp_ms)
        asks: list[Ask] = []
        order = [(a, str(k)) for k, a in enumerate(self.slots) if a is not None] + [(a, BACKLOG) for a in self.backlog]
        m = str(self.m)
        for app, tag in order:
            ask = waiting[app]
            steps = self._steps_up(self.runtime_ms[app])
            asks.append(replace(ask, resource=self._scaled(ask.resource, per, up=True),
                                submit_time_ms=self._step(ask.submit_time_ms) * unit_ms,
                                job=JobMetadata(expected_runtime_ms=steps * unit_ms,
                                                tags={SLOT_TAG: tag, SLOTS_TAG: m})))
        if self.cfg.image == "pooled":
            containers = [c for n in self.nodes.values() for c in n.running.values()]
            total = Resource(spec.res_slot * spec.memory_unit_mb, spec.res_slot)
        else:
            containers = list(node.running)
            total = self._scaled(node.total, per, up=False)
        running = []
        for c in containers:
            start = self._step(c.start_time_ms)
            left = max(1, start + self._steps_up(self._app_length_ms(c.application_id)) - now)
            running.append(Container(c.container_id, c.application_id, self._scaled(c.resource, per, up=True),
                                     start * unit_ms, left * unit_ms))
        view = replace(node, total=total, unallocated=self._scaled(free, per, up=False), running=tuple(running),
                       timestamp_ms=now * unit_ms)
        return ScheduleObservation(node=view, asks=asks, cluster=obs.cluster, request_id=obs.request_id)

    def settle(self, view: ScheduleObservation, decision: ScheduleDecision) -> None:
        """The jobs the (checked) decision started leave DeepRM's queue in assignment order, as in DeepRM's
        environment: a started slot job's slot takes the backlog's first job at once."""
        by_id = {a.ask_id: a.application_id for a in view.asks}
        for a in decision.assignments:
            app = by_id.get(a.ask_id)
            if app is None or app in self.admitted:
                continue
            self._admit(app)
            self._leave(app, refill=True)
            node = self.nodes.get(view.node.node_id)
            if node is not None and app in self.resource:
                # pooled image: the job holds its resources from now on, until this node's next heartbeat says
                cid = f"pending:{app}"
                node.running[cid] = Container(cid, app, self.resource[app], view.node.timestamp_ms
                                              * self.cfg.step_ms // self.spec.step_ms, 0)

    def event(self, ev: Event) -> None:
        """Report events: container starts and finishes keep the pooled image current; finished run times feed the
        estimate of untagged jobs."""
        if isinstance(ev, ContainerStarted):
            self._admit(ev.application_id)
            node = self.nodes.get(ev.node_id)
            res = self.resource.get(ev.application_id)
            if node is not None and res is not None:
                node.running.pop(f"pending:{ev.application_id}", None)
                node.running[ev.container_id] = Container(ev.container_id, ev.application_id, res,
                                                          ev.timestamp_ms, 0)
        elif isinstance(ev, ContainerFinished):
            node = self.nodes.get(ev.node_id)
            if node is not None:
                node.running.pop(ev.container_id, None)
            if ev.runtime_ms > 0:
                q = self.queue.get(ev.application_id, "")
                self.finished.setdefault(q, deque(maxlen=FINISHED_KEPT)).append(int(ev.runtime_ms))
        elif isinstance(ev, JobFinished) and ev.job_id:
            self._leave(ev.job_id, refill=True)
            for n in self.nodes.values():
                n.running.pop(f"pending:{ev.job_id}", None)
