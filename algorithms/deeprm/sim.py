"""The DeepRM setting (Mao et al., HotNets 2016; DeepRM) as one emulated YARN node.

One cluster with 2 resources of `res_slot` units each; time in steps. At each step a job arrives with
probability `job_rate` (set from the target `load`): 80 % are small (1-3 steps), 20 % large (10-15 steps); one
random resource is dominant with 0.25-0.5 of its capacity, the other 0.05-0.1. Arrivals fill the first empty of
the M = 10 job slots, then a backlog of 60 (jobs beyond it are dropped and counted). A placed job runs for its
length at once and without preemption (a YARN container starts when it is allocated; DeepRM's reference code can
also reserve a job's resources in the future, which has no counterpart in YARN). A job placed from a slot frees
that slot, which takes the backlog's first job.

`DeepRMSimulation` is driven the same way by the `deeprm` scenario (one Schedule call per time step: the node is
the cluster, every waiting job is a single-container ask tagged with its slot, the policy returns the jobs to
start now) and by the gymnasium environment `yarnrl/DeepRM-v0` (DeepRM's M+1 actions: start the job of slot i, or
the void action that lets time move on). Reward per step: -sum over jobs in the system of 1/T_j, so an episode's
return is minus the sum of slowdowns (finish - arrival) / T_j.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from policy_engine.features.deeprm import BACKLOG, SLOT_TAG, SLOTS_TAG, ImageSpec, image
from policy_engine.types import (
    ANY,
    Ask,
    ClusterSummary,
    Container,
    ContainerFinished,
    ContainerStarted,
    Event,
    JobFinished,
    JobMetadata,
    LocalityRequest,
    Node,
    Resource,
    ScheduleDecision,
    ScheduleObservation,
)


@dataclass(frozen=True)
class DeepRMConfig:
    spec: ImageSpec = ImageSpec()
    load: float = 0.75              # offered load per resource (DeepRM: 70-80 %); sets job_rate
    job_rate: float | None = None   # arrival probability per step; overrides load when given
    simu_len: int = 50              # steps with arrivals per episode (DeepRM's jobset length)
    small_prob: float = 0.8
    small_len: tuple[int, int] = (1, 3)
    large_len: tuple[int, int] = (10, 15)
    dominant: tuple[int, int] = (5, 10)  # units of res_slot = 20: 0.25-0.5 r
    other: tuple[int, int] = (1, 2)      # 0.05-0.1 r
    max_steps: int = 5000           # safety stop: a policy that never starts anything cannot run forever
    nodes: int = 1                  # machines of res_slot units each; arrivals scale with them (load per node)

    def __post_init__(self):
        s = self.spec
        if self.job_rate is None and not 0.0 < self.load <= self.max_load:
            raise ValueError(f"load must be in (0, {self.max_load:.3f}] (one Bernoulli arrival per step at most), "
                             f"got {self.load}")
        if self.job_rate is not None and not 0.0 < self.job_rate <= 1.0:
            raise ValueError(f"job_rate must be in (0, 1], got {self.job_rate}")
        if not 1 <= self.nodes <= 1000:
            raise ValueError(f"nodes must be between 1 and 1000, got {self.nodes}")
        if not 1 <= self.simu_len <= 100_000:
            raise ValueError(f"simu_len must be between 1 and 100000, got {self.simu_len}")
        if self.dominant[1] > min(s.res_slot, s.max_job_size) or self.large_len[1] > s.time_horizon:
            raise ValueError("job sizes must fit the image (max_job_size, res_slot) and lengths the time horizon")

    @property
    def mean_demand(self) -> float:
        """Expected demand per resource as a fraction of its capacity (dominant on one of num_res resources)."""
        n = self.spec.num_res
        dom, oth = sum(self.dominant) / 2, sum(self.other) / 2
        return (dom + (n - 1) * oth) / n / self.spec.res_slot

    @property
    def mean_length(self) -> float:
        return self.small_prob * sum(self.small_len) / 2 + (1 - self.small_prob) * sum(self.large_len) / 2

    @property
    def max_load(self) -> float:
        return self.mean_length * self.mean_demand

    @property
    def rate(self) -> float:
        return self.job_rate if self.job_rate is not None else self.load / self.max_load


class DeepRMSimulation:
    def __init__(self, config: DeepRMConfig, seed: int):
        self.cfg = cfg = config
        self.spec = spec = cfg.spec
        self.seed = int(seed)
        rng = np.random.default_rng(self.seed)
        if cfg.nodes == 1:
            arrive = rng.random(cfg.simu_len) < cfg.rate
            arrival = np.flatnonzero(arrive)
        else:  # up to one arrival per node and step: the same load on each of the nodes
            arrival = np.repeat(np.arange(cfg.simu_len), rng.binomial(cfg.nodes, cfg.rate, cfg.simu_len))
        n = int(arrival.size)
        small = rng.random(n) < cfg.small_prob
        lengths = np.where(small, rng.integers(cfg.small_len[0], cfg.small_len[1] + 1, n),
                           rng.integers(cfg.large_len[0], cfg.large_len[1] + 1, n))
        dominant = rng.integers(0, spec.num_res, n)
        res = rng.integers(cfg.other[0], cfg.other[1] + 1, (n, spec.num_res))
        res[np.arange(n), dominant] = rng.integers(cfg.dominant[0], cfg.dominant[1] + 1, n)
        self.length = lengths.astype(np.int64)
        self.demand = res.astype(np.int64)
        self.arrival = arrival.astype(np.int64)
        self.start = np.full(n, -1, dtype=np.int64)
        self.finish = np.full(n, -1, dtype=np.int64)
        self.dropped = 0
        self.num_jobs = n
        self.capacity = np.full(spec.num_res, spec.res_slot, dtype=np.int64)
        self.node_free = np.tile(self.capacity, (cfg.nodes, 1))
        self.free = self.node_free[0]   # node 0's row (a view): the single machine of DeepRM's setting
        self.node_of = np.zeros(n, dtype=np.int64)
        self.running: list[int] = []
        self.slots: list[int | None] = [None] * spec.num_slots
        self.backlog: deque[int] = deque()
        self.t = 0
        self.next_arrival = 0
        self.last_arrival = 0
        self.done_jobs = 0
        self._events: list[Event] = []
        self._requests = 0
        self._cluster_ts = 1_700_000_000_000 + self.seed % 1_000_000_000
        self._arrive()

    @classmethod
    def from_jobs(cls, config: DeepRMConfig, jobs: list[tuple[int, int, int, int]], seed: int = 0):
        """A simulation of a scripted job set: (arrival step, length in steps, memory units, vcore units) per job,
        in arrival order (the sim == real tests and the plugin's DeepRM integration test)."""
        sim = cls(config, seed)
        arrival = [int(j[0]) for j in jobs]
        if arrival != sorted(arrival) or any(a < 0 for a in arrival):
            raise ValueError("scripted jobs must come in arrival order, at steps >= 0")
        n = len(jobs)
        sim.arrival = np.asarray(arrival, dtype=np.int64)
        sim.length = np.asarray([int(j[1]) for j in jobs], dtype=np.int64)
        sim.demand = np.asarray([[int(j[2]), int(j[3])] for j in jobs], dtype=np.int64).reshape(n, 2)
        if (sim.length < 1).any() or (sim.demand < 0).any():
            raise ValueError("scripted jobs need lengths >= 1 and demands >= 0")
        sim.start = np.full(n, -1, dtype=np.int64)
        sim.finish = np.full(n, -1, dtype=np.int64)
        sim.node_of = np.zeros(n, dtype=np.int64)
        sim.num_jobs = n
        sim.slots = [None] * sim.spec.num_slots
        sim.backlog.clear()
        sim.next_arrival = sim.done_jobs = sim.dropped = 0
        sim._arrive()
        return sim

    # ------------------------------------------------------------------ dynamics

    def _arrive(self) -> None:
        while self.next_arrival < self.num_jobs and self.arrival[self.next_arrival] <= self.t:
            j = self.next_arrival
            self.next_arrival += 1
            self.last_arrival = self.t
            for k, s in enumerate(self.slots):
                if s is None:
                    self.slots[k] = j
                    break
            else:
                if len(self.backlog) < self.spec.backlog_size:
                    self.backlog.append(j)
                else:
                    self.dropped += 1
                    self.done_jobs += 1

    def step_reward(self) -> float:
        """-sum of 1/T_j over the jobs in the system (running, in slots, in the backlog)."""
        inv = 1.0 / self.length
        total = sum(inv[j] for j in self.running)
        total += sum(inv[j] for j in self.slots if j is not None)
        total += sum(inv[j] for j in self.backlog)
        return -float(total)

    def advance(self) -> float:
        """One time step: finish jobs, admit arrivals; returns the step's reward."""
        self.t += 1
        keep = []
        for j in self.running:
            if self.finish[j] <= self.t:
                self.node_free[self.node_of[j]] += self.demand[j]
                self.done_jobs += 1
                self._finished(j)
            else:
                keep.append(j)
        self.running = keep
        self._arrive()
        return self.step_reward()

    @property
    def done(self) -> bool:
        return self.next_arrival >= self.num_jobs and self.done_jobs >= self.num_jobs

    @property
    def truncated(self) -> bool:
        return self.t >= self.cfg.max_steps

    def fits(self, j: int, node: int = 0) -> bool:
        return bool((self.demand[j] <= self.node_free[node]).all())   # the method: np.all's dispatch costs 5x here

    def start_job(self, j: int, node: int = 0) -> None:
        if not self.fits(j, node):
            raise ValueError(f"job {j} does not fit the free resources {self.node_free[node].tolist()}")
        if j in self.slots:
            k = self.slots.index(j)
            self.slots[k] = self.backlog.popleft() if self.backlog else None
        elif j in self.backlog:
            self.backlog.remove(j)
        else:
            raise ValueError(f"job {j} is not waiting")
        self.node_free[node] -= self.demand[j]
        self.node_of[j] = node
        self.start[j] = self.t
        self.finish[j] = self.t + self.length[j]
        self.running.append(j)
        self._events.append(ContainerStarted(self._container_id(j), self._app_id(j), self._node_id(node),
                                             self._ask_id(j), timestamp_ms=self.t * self.spec.step_ms))

    def _finished(self, j: int) -> None:
        ms = self.spec.step_ms
        self._events.append(ContainerFinished(self._container_id(j), self._app_id(j), self._node_id(self.node_of[j]),
                                              int(self.length[j]) * ms, timestamp_ms=self.t * ms))
        self._events.append(JobFinished(self._app_id(j), runtime=float((self.finish[j] - self.arrival[j]) * ms),
                                        delay_ratio=float(self.finish[j] - self.arrival[j]) / float(self.length[j]),
                                        succeeded=True, timestamp_ms=self.t * ms))

    def take_events(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    # ------------------------------------------------------------------ protocol view

    # Ids as YARN writes them, with one ResourceManager start time per episode so that ids never repeat across
    # the episodes one engine serves.
    def _app_id(self, j: int) -> str:
        return f"application_{self._cluster_ts}_{j + 1:05d}"

    @staticmethod
    def _ask_id(j: int) -> str:
        return f"job-{j + 1}"

    def _container_id(self, j: int) -> str:
        return f"container_{self._cluster_ts}_01_{j + 1:06d}"

    @staticmethod
    def _node_id(node: int) -> str:
        return f"cluster:{node}" if node == 0 else f"node{node}:0"

    def _resource(self, units: np.ndarray) -> Resource:
        return Resource(int(units[0]) * self.spec.memory_unit_mb, int(units[1]) if units.shape[0] > 1 else 0)

    def waiting(self) -> list[tuple[int, str]]:
        """(job, slot tag) of every waiting job: slots in slot order, then the backlog."""
        out = [(j, str(k)) for k, j in enumerate(self.slots) if j is not None]
        out += [(j, BACKLOG) for j in self.backlog]
        return out

    def any_fits(self) -> bool:
        return any(j is not None and self.fits(j) for j in self.slots)

    def any_waiting_fits(self, node: int) -> bool:
        """Whether any waiting job (slots or backlog) fits this node: when YARN's plugin would ask the engine."""
        return any(self.fits(j, node) for j, _ in self.waiting())

    def observe_yarn(self, node: int = 0) -> ScheduleObservation:
        """The heartbeat of `node` as the plugin builds it (yarn_plugin Snapshots): every waiting job's ask in
        submission order, its length only as the application tag yarnrl.expected-runtime-ms (and, parsed,
        expected_runtime_ms, as JobTags passes it), the node's running containers with their start times but no
        remaining time, no slots. The engine builds DeepRM's view from it (algorithms.deeprm.view)."""
        ms = self.spec.step_ms
        waiting = sorted(j for j, _ in self.waiting())
        asks = []
        for j in waiting:
            runtime = int(self.length[j]) * ms
            asks.append(Ask(
                ask_id=f"{self._app_id(j)}/0/0", application_id=self._app_id(j), priority=0,
                resource=self._resource(self.demand[j]), num_containers=1, locality=(LocalityRequest(ANY, 1),),
                submit_time_ms=int(self.arrival[j]) * ms,
                job=JobMetadata(expected_runtime_ms=runtime, tags={"yarnrl.expected-runtime-ms": str(runtime)})))
        running = tuple(
            Container(self._container_id(j), self._app_id(j), self._resource(self.demand[j]), int(self.start[j]) * ms)
            for j in self.running if self.node_of[j] == node)
        total = self._resource(self.capacity)
        nodes = self.cfg.nodes
        cluster_total = self._resource(self.capacity * nodes)
        cluster_free = self._resource(self.node_free.sum(axis=0))
        n = Node(node_id=self._node_id(node), host=f"node{node}", rack="/default-rack", total=total,
                 unallocated=self._resource(self.node_free[node]), running=running, timestamp_ms=self.t * ms)
        self._requests += 1
        return ScheduleObservation(node=n, asks=asks, cluster=ClusterSummary(nodes, 1, cluster_total, cluster_free),
                                   request_id=f"{self.seed}-{self._requests}")

    def apply_yarn(self, decision: ScheduleDecision, node: int) -> int:
        """Start the decision's jobs on `node` (asks named as observe_yarn names them)."""
        by_ask = {f"{self._app_id(j)}/0/0": j for j, _ in self.waiting()}
        started = 0
        for a in decision.assignments:
            j = by_ask.pop(a.ask_id, None)
            if j is None or a.count != 1:
                raise ValueError(f"assignment {a.ask_id!r} x{a.count} does not name one waiting job")
            self.start_job(j, node)
            started += 1
        return started

    def observe(self) -> ScheduleObservation:
        ms = self.spec.step_ms
        asks = []
        for j, tag in self.waiting():
            asks.append(Ask(
                ask_id=self._ask_id(j), application_id=self._app_id(j), priority=0,
                resource=self._resource(self.demand[j]), num_containers=1, locality=(LocalityRequest(ANY, 1),),
                submit_time_ms=int(self.arrival[j]) * ms,
                job=JobMetadata(expected_runtime_ms=int(self.length[j]) * ms,
                                tags={SLOT_TAG: tag, SLOTS_TAG: str(self.spec.num_slots)})))
        running = tuple(
            Container(self._container_id(j), self._app_id(j), self._resource(self.demand[j]), int(self.start[j]) * ms,
                      int(self.finish[j] - self.t) * ms)
            for j in self.running)
        total = self._resource(self.capacity)
        free = self._resource(self.free)
        node = Node(node_id="cluster:0", host="cluster", rack="/default-rack", total=total, unallocated=free,
                    running=running, timestamp_ms=self.t * ms)
        self._requests += 1
        return ScheduleObservation(node=node, asks=asks, cluster=ClusterSummary(1, 1, total, free),
                                   request_id=f"{self.seed}-{self._requests}")

    def apply(self, decision: ScheduleDecision) -> int:
        """Start the decision's jobs (each ask is one job); returns how many started."""
        by_ask = {self._ask_id(j): j for j, _ in self.waiting()}
        started = 0
        for a in decision.assignments:
            j = by_ask.get(a.ask_id)
            if j is None or a.count != 1:
                raise ValueError(f"assignment {a.ask_id!r} x{a.count} does not name one waiting job")
            self.start_job(j)
            del by_ask[a.ask_id]
            started += 1
        return started

    def image(self) -> np.ndarray:
        return image(self.observe_light(), self.spec, self.t - self.last_arrival)

    def observe_light(self) -> ScheduleObservation:
        """observe() without counting a request (for the environment's image)."""
        obs = self.observe()
        self._requests -= 1
        return obs

    def metrics(self) -> dict[str, float]:
        fin = self.finish >= 0
        fin &= self.finish <= self.t
        slow = (self.finish[fin] - self.arrival[fin]) / self.length[fin]
        cap_steps = max(self.t, 1) * self.spec.num_res * self.spec.res_slot * self.cfg.nodes
        work = float((self.length[self.start >= 0][:, None] * self.demand[self.start >= 0]).sum())
        return {
            "slowdown": float(slow.mean()) if slow.size else float("nan"),
            "completion_time": float((self.finish[fin] - self.arrival[fin]).mean()) if slow.size else float("nan"),
            "jobs": float(self.num_jobs),
            "dropped": float(self.dropped),
            "utilization": work / cap_steps,
            "offered_load": self.cfg.rate * self.cfg.max_load,
        }
