"""Discrete-time multi-cluster simulator shared by the seed 000 and seed 002 scenarios and the gymnasium envs.

Time advances in integer steps. Jobs arrive in a global buffer; while the buffer is non-empty the global manager
routes one job per step (`step(decision)`); a routed job's executions queue at its cluster, whose local scheduler
starts an execution only when all the executors it requests are free (no partial grants). Streaming jobs release
a batch every `period` steps (or when the previous batch finishes, if later), each batch requesting one of its 10
equally likely executor counts and releasing its executors when it finishes.

Per-cluster state is a handful of numpy arrays (busy executors, capacity in effect, missed deadlines) plus a
(clusters x steps) float32 log of occupation ratios; steps where nothing happens are skipped in one numpy slice
assignment, so an episode costs time per event, not per step.

Measured per execution: AR = finish - request (the request of a job's first execution is its submission to the
global buffer, so time spent waiting for a routing decision counts as delay, like waiting at the cluster; later
batches request at their release). A deadline is missed when AR exceeds the execution's deadline on that cluster.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from emulator.multicluster import metrics
from emulator.multicluster.workload import ArrivalPattern, JobProfile, Workload, generate
from policy_engine.proto import pb
from policy_engine.types import ClusterDemand, ClusterState, JobCategory, RouteDecision, RouteJob, RouteObservation

FIFO = "fifo"                  # seed 000: strict arrival order, the head of the queue blocks the rest
HALTED_FIRST = "halted-first"  # seed 002: halted requests first, then this step's, each started if it fits

MAX_STEPS = 50_000_000         # an episode that has not finished by then is a bug, not a long episode


@dataclass(frozen=True)
class Federation:
    """The clusters: executors, heterogeneity factors and elasticity (seed 002's controller)."""

    capacities: tuple[int, ...]
    hetero_factors: tuple[float, ...] | None = None
    elastic: tuple[bool, ...] = ()
    elastic_increment: int = 100
    elastic_max: int = 200
    elastic_window: int = 100
    elastic_threshold: float = 0.95

    def __post_init__(self):
        if not self.capacities or min(self.capacities) < 1:
            raise ValueError(f"clusters need positive capacities, got {self.capacities}")
        if self.hetero_factors is not None and len(self.hetero_factors) != len(self.capacities):
            raise ValueError("one heterogeneity factor per cluster")
        if self.elastic and len(self.elastic) != len(self.capacities):
            raise ValueError("one elasticity flag per cluster")

    @property
    def n(self) -> int:
        return len(self.capacities)

    @property
    def is_elastic(self) -> tuple[bool, ...]:
        return self.elastic or (False,) * self.n


@dataclass
class EpisodeResult:
    tmdl: int
    ratio_delay: list[list[float]]     # per job, AR / OR per execution (seed 000's AJDR)
    ratio_standard: list[list[float]]  # per job, AR / SR per execution (seed 002's AJER)
    missed_per_job: np.ndarray
    cluster_of_job: np.ndarray
    steps: int
    decisions: int
    extra: dict = field(default_factory=dict)

    def ajdr(self) -> float:
        return metrics.ajdr(self.ratio_delay)

    def ajer(self) -> float:
        return metrics.ajer(self.ratio_standard)


class MultiClusterSim:
    """One federation and workload family; `reset(seed)` draws an episode, `step(decision)` routes one job.

    Both return the next RouteObservation, or None once every job has finished. Feedback for the policy engine
    (JobFinished, DeadlineMissed) accumulates in `events` until `take_events()`.
    """

    def __init__(self, federation: Federation, pattern: ArrivalPattern, profile: JobProfile, n_jobs: int,
                 local_scheduler: str = FIFO, history: int = 100, tag: str = "multicluster"):
        if local_scheduler not in (FIFO, HALTED_FIRST):
            raise ValueError(f"local scheduler must be {FIFO!r} or {HALTED_FIRST!r}, not {local_scheduler!r}")
        if history < 1:
            raise ValueError(f"history must be at least 1 step, not {history}")
        self.federation = federation
        self.pattern = pattern
        self.profile = profile
        self.n_jobs = n_jobs
        self.local_scheduler = local_scheduler
        self.history = history
        self.tag = tag
        self.cluster_ids = list(range(1, federation.n + 1))   # the papers number clusters 1..C
        self._index_of = {cid: i for i, cid in enumerate(self.cluster_ids)}
        self.done = True

    # ------------------------------------------------------------ episode

    def reset(self, seed: int) -> RouteObservation | None:
        fed = self.federation
        hetero = np.asarray(fed.hetero_factors, dtype=float) if fed.hetero_factors is not None else None
        w = generate(self.n_jobs, self.pattern, self.profile, fed.n, seed, hetero)
        self.workload = w
        self.seed = seed
        c = fed.n
        self._normal = np.asarray(fed.capacities, dtype=np.int64)
        self.capacity = self._normal.copy()                    # in effect (elastic expansion included)
        self.busy = np.zeros(c, dtype=np.int64)
        self.missed = np.zeros(c, dtype=np.int64)
        self._elastic = [i for i, e in enumerate(fed.is_elastic) if e]
        self._max_capacity = self._normal + np.where(fed.is_elastic, fed.elastic_max, 0)
        self._occ = np.zeros((c, 4096), dtype=np.float32)     # occupation ratio per cluster per step
        self._queues: list[list[tuple]] = [[] for _ in range(c)]
        self._dirty = [False] * c
        self._completions: list[tuple] = []                   # (finish, seq, cluster, job, batch, executors, req)
        self._releases: list[tuple] = []                      # (time, seq, job, batch)
        self._seq = 0
        self.buffer: list[int] = []
        self._route_jobs: list[RouteJob | None] = [None] * w.n_jobs
        self._next_arrival = 0
        self.cluster_of = np.full(w.n_jobs, -1, dtype=np.int64)
        self.job_missed = np.zeros(w.n_jobs, dtype=np.int64)
        self._ratio_delay: list[list[float]] = [[] for _ in range(w.n_jobs)]
        self._ratio_std: list[list[float]] = [[] for _ in range(w.n_jobs)]
        self.finished = 0
        self.decisions = 0
        self.events: list[pb.Event] = []
        self.t = 0
        self.done = False
        # hot-loop views as Python lists (scalar access to numpy arrays is slow)
        self._arrival = w.arrival.tolist()
        self._execs = w.executions.tolist()
        self._period = w.period.tolist()
        self._run = w.run.tolist()
        self._std = w.standard_runtime.tolist()
        self._dl = w.cluster_deadline.tolist()
        self._dist = w.distribution
        self._slot = w.slot
        self._job_ids = [f"j{i}" for i in range(w.n_jobs)]
        self._fifo = self.local_scheduler == FIFO
        return self._run_until_decision()

    def step(self, decision: RouteDecision) -> RouteObservation | None:
        if self.done:
            raise RuntimeError("episode is over; call reset(seed)")
        if not 0 <= decision.job_index < len(self.buffer):
            raise ValueError(f"job index {decision.job_index} outside a buffer of {len(self.buffer)}")
        c = self._index_of.get(decision.cluster_id)
        if c is None:
            raise ValueError(f"unknown cluster {decision.cluster_id}; clusters are {self.cluster_ids}")
        job = self.buffer.pop(decision.job_index)
        self._route_jobs[job] = None
        self.cluster_of[job] = c
        self.decisions += 1
        self._request(job, 0, c, self._arrival[job])
        t = self.t
        self._schedule_dirty(t)
        nxt = t + 1 if self.buffer else self._next_event_time(t)
        self._record(t, nxt)
        self.t = nxt
        return self._run_until_decision()

    def take_events(self) -> list[pb.Event]:
        ev, self.events = self.events, []
        return ev

    def result(self) -> EpisodeResult:
        if not self.done:
            raise RuntimeError("episode not finished")
        return EpisodeResult(tmdl=int(self.missed.sum()), ratio_delay=self._ratio_delay,
                             ratio_standard=self._ratio_std, missed_per_job=self.job_missed,
                             cluster_of_job=self.cluster_of, steps=self.t, decisions=self.decisions)

    # ------------------------------------------------------------ observation

    def request_id(self) -> str:
        """`<scenario>/<seed>:<n>`: n is the number of jobs routed before this decision in this episode."""
        return f"{self.tag}/{self.seed}:{self.decisions}"

    def observation(self) -> RouteObservation:
        t = self.t
        lo = max(0, t - self.history)
        occ = self._occ
        cap = self.capacity.tolist()
        busy = self.busy.tolist()
        missed = self.missed.tolist()
        normal = self._normal.tolist()
        max_cap = self._max_capacity.tolist()
        hetero = self.federation.hetero_factors
        elastic = self.federation.is_elastic
        clusters = [
            ClusterState(self.cluster_ids[i], normal[i], max_cap[i], cap[i], max(cap[i] - busy[i], 0),
                         float(hetero[i]) if hetero is not None else 0.0, occ[i, lo:t], missed[i],
                         len(self._queues[i]), elastic[i])
            for i in range(len(cap))
        ]
        jobs = []
        for j in self.buffer:
            rj = self._route_jobs[j]
            if rj is None:
                rj = self._route_jobs[j] = self._make_route_job(j)
            jobs.append(rj)
        return RouteObservation(jobs=jobs, clusters=clusters, time=float(t), request_id=self.request_id())

    def _make_route_job(self, j: int) -> RouteJob:
        w = self.workload
        per_cluster = ()
        if self.federation.hetero_factors is not None:
            per_cluster = tuple(
                ClusterDemand(cid, w.distribution[j, i], float(w.cluster_standard_runtime[j, i]),
                              float(w.cluster_deadline[j, i]))
                for i, cid in enumerate(self.cluster_ids))
        return RouteJob(
            job_id=self._job_ids[j], category=JobCategory(int(w.category[j])),
            request_distribution=w.base_distribution[j], executor_runtime=float(w.standard_runtime[j]),
            deadline=float(w.deadline[j]), duration=float(w.duration[j]), executions=int(w.executions[j]),
            submit_time=float(w.arrival[j]), expected_hetero_factor=float(w.expected_hetero[j]),
            hetero_sensitivity=int(w.sensitivity[j]), per_cluster=per_cluster)

    # ------------------------------------------------------------ the event loop

    def _run_until_decision(self) -> RouteObservation | None:
        n_jobs = self.n_jobs
        while True:
            t = self.t
            if t > MAX_STEPS:
                raise RuntimeError(f"episode did not finish within {MAX_STEPS} steps")
            arrival = self._arrival
            while self._next_arrival < n_jobs and arrival[self._next_arrival] <= t:
                self.buffer.append(self._next_arrival)
                self._next_arrival += 1
            if self._completions and self._completions[0][0] <= t:
                self._complete(t)
            if self._releases and self._releases[0][0] <= t:
                self._release(t)
            if self._elastic and t > 0 and t % self.federation.elastic_window == 0:
                self._elasticity(t)
            self._schedule_dirty(t)
            if self.buffer:
                return self.observation()
            if self.finished == n_jobs:
                self._record(t, t + 1)
                self.done = True
                return None
            nxt = self._next_event_time(t)
            self._record(t, nxt)
            self.t = nxt

    def _next_event_time(self, t: int) -> int:
        nxt = MAX_STEPS + 1
        if self._next_arrival < self.n_jobs:
            nxt = self._arrival[self._next_arrival]
        if self._completions and self._completions[0][0] < nxt:
            nxt = self._completions[0][0]
        if self._releases and self._releases[0][0] < nxt:
            nxt = self._releases[0][0]
        if self._elastic:
            win = self.federation.elastic_window
            tick = (t // win + 1) * win
            if tick < nxt:
                nxt = tick
        return max(nxt, t + 1)

    def _record(self, t: int, until: int) -> None:
        """Occupation ratio of steps [t, until): constant, since nothing happens in between."""
        occ = self._occ
        if until > occ.shape[1]:
            grown = np.zeros((occ.shape[0], max(until, 2 * occ.shape[1])), dtype=np.float32)
            grown[:, :occ.shape[1]] = occ
            self._occ = occ = grown
        occ[:, t:until] = (self.busy / self.capacity)[:, None]

    def _request(self, job: int, batch: int, c: int, req_time: int) -> None:
        executors = int(self._dist[job, c, self._slot[job, batch]])
        executors = min(executors, int(self._normal[c]))   # a request never exceeds a whole cluster
        self._queues[c].append((job, batch, executors, req_time, self.t))
        self._dirty[c] = True

    def _complete(self, t: int) -> None:
        comp = self._completions
        busy = self.busy
        std = self._std
        dl = self._dl
        while comp and comp[0][0] <= t:
            _, _, c, job, batch, executors, req = heapq.heappop(comp)
            busy[c] -= executors
            self._dirty[c] = True
            ar = t - req
            self._ratio_delay[job].append(ar / self._run[job][c])
            self._ratio_std[job].append(ar / std[job])
            deadline = dl[job][c]
            if deadline and ar > deadline:
                self.missed[c] += 1
                self.job_missed[job] += 1
                self.events.append(pb.Event(timestamp_ms=t, deadline_missed=pb.DeadlineMissed(
                    job_id=self._job_ids[job], cluster_id=self.cluster_ids[c])))
            if batch + 1 < self._execs[job]:
                release = max(self._arrival[job] + (batch + 1) * self._period[job], t)
                if release <= t:
                    self._request(job, batch + 1, c, t)
                else:
                    self._seq += 1
                    heapq.heappush(self._releases, (release, self._seq, job, batch + 1))
            else:
                self._finish(job, c, t)

    def _finish(self, job: int, c: int, t: int) -> None:
        self.finished += 1
        ratios = self._ratio_delay[job]
        self.events.append(pb.Event(timestamp_ms=t, job_finished=pb.JobFinished(
            job_id=self._job_ids[job], cluster_id=self.cluster_ids[c], runtime=float(t - self._arrival[job]),
            delay_ratio=sum(ratios) / len(ratios), missed_deadlines=int(self.job_missed[job]), succeeded=True)))

    def _release(self, t: int) -> None:
        rel = self._releases
        while rel and rel[0][0] <= t:
            _, _, job, batch = heapq.heappop(rel)
            self._request(job, batch, int(self.cluster_of[job]), t)

    def _elasticity(self, t: int) -> None:
        """Seed 002's controller, once per window: +increment (up to max) if the occupation ratio reached the
        threshold at any step of the past window, else give back one increment. Executors given back while busy
        leave as their executions finish (no preemption): new starts wait until busy < capacity."""
        fed = self.federation
        occ = self._occ
        for c in self._elastic:
            expansion = int(self.capacity[c] - self._normal[c])
            if occ[c, t - fed.elastic_window:t].max() >= fed.elastic_threshold:
                expansion = min(expansion + fed.elastic_increment, fed.elastic_max)
            else:
                expansion = max(expansion - fed.elastic_increment, 0)
            self.capacity[c] = self._normal[c] + expansion
            self._dirty[c] = True

    def _schedule_dirty(self, t: int) -> None:
        dirty = self._dirty
        for c in range(len(dirty)):
            if dirty[c]:
                dirty[c] = False
                if self._queues[c]:
                    self._schedule(c, t)

    def _schedule(self, c: int, t: int) -> None:
        queue = self._queues[c]
        free = int(self.capacity[c] - self.busy[c])
        started = 0
        if self._fifo:
            while queue and queue[0][2] <= free:
                job, batch, executors, req, _ = queue.pop(0)
                free -= executors
                started += executors
                self._start(c, job, batch, executors, req, t)
        else:
            # halted requests (queued at earlier steps) first, then this step's; each in job arrival order
            if len(queue) > 1:
                queue.sort(key=lambda r: (r[4] >= t, r[0]))
            keep = []
            for r in queue:
                if r[2] <= free:
                    free -= r[2]
                    started += r[2]
                    self._start(c, r[0], r[1], r[2], r[3], t)
                else:
                    keep.append(r)
            self._queues[c] = keep
        if started:
            self.busy[c] += started

    def _start(self, c: int, job: int, batch: int, executors: int, req: int, t: int) -> None:
        self._seq += 1
        heapq.heappush(self._completions, (t + self._run[job][c], self._seq, c, job, batch, executors, req))
