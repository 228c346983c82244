"""Discrete-time multi-cluster simulator shared by the RL-FC and RL-LSFC scenarios and the gymnasium envs.

Time advances in integer steps. Jobs arrive in a global buffer; while the buffer is non-empty the global manager
routes one job per step (`step(decision)`); a routed job's executions queue at its cluster, whose local scheduler
starts an execution only when all the executors it requests are free (no partial grants). Streaming jobs release
a batch every `period` steps (or when the previous batch finishes, if later), each batch requesting one of its 10
equally likely executor counts and releasing its executors when it finishes.

No per-executor objects: a cluster is a few integers (busy executors, capacity in effect, missed deadlines; read
them as numpy arrays through `busy`, `capacity`, `missed`) plus its row of a (clusters x steps) float32 log of
occupation ratios. Steps where nothing happens are skipped and logged with one numpy slice assignment, so an
episode costs time per event (arrival, routing, start, finish, batch release, elasticity tick), not per step.

Measured per execution: AR = finish - request (the request of a job's first execution is its submission to the
global buffer, so time spent waiting for a routing decision counts as delay, like waiting at the cluster; later
batches request at their release). A deadline is missed when AR exceeds the execution's deadline on that cluster;
the miss is counted, and reported, when the execution finishes.
"""

from __future__ import annotations

import hashlib
import heapq
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from emulator.multicluster import metrics
from emulator.multicluster.workload import ArrivalPattern, JobProfile, Workload, generate
from policy_engine.types import (
    ClusterDemand,
    ClusterState,
    DeadlineMissed,
    Event,
    JobCategory,
    JobFinished,
    RouteDecision,
    RouteJob,
    RouteObservation,
    RouteSequence,
)

FIFO = "fifo"                  # RL-FC: strict arrival order, the head of the queue blocks the rest
HALTED_FIRST = "halted-first"  # RL-LSFC: halted requests first, then this step's, each started if it fits

MAX_STEPS = 50_000_000         # an episode that has not finished by then is a bug, not a long episode


def _load_compiled():
    """The compiled per-decision work (_fastloop.pyx, built by setup.py): a module with step, observation and
    run_until_decision; None when it was not built or is older than the .pyx beside it (then the Python code runs:
    the same events, slower)."""
    try:
        from emulator.multicluster import _fastloop
    except ImportError:
        return None
    pyx = Path(__file__).with_name("_fastloop.pyx")
    if pyx.exists() and hashlib.sha256(pyx.read_bytes()).hexdigest() != _fastloop.SOURCE_SHA256:
        warnings.warn(f"{pyx} changed since its extension was built; the emulator runs its Python event loop "
                      "(rebuild: pip install -e .)", RuntimeWarning, stacklevel=2)
        return None
    return _fastloop


COMPILED = _load_compiled()


_CATEGORY = {int(c): c for c in JobCategory}


@lru_cache(maxsize=16)
def _job_ids(n: int) -> tuple[str, ...]:
    return tuple(f"j{i}" for i in range(n))


@dataclass(frozen=True)
class Federation:
    """The clusters: executors, heterogeneity factors and elasticity (RL-LSFC's controller)."""

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
    ratio_delay: list[list[float]]     # per job, AR / OR per execution (RL-FC's AJDR)
    ratio_standard: list[list[float]]  # per job, AR / SR per execution (RL-LSFC's AJER)
    missed_per_job: np.ndarray
    cluster_of_job: np.ndarray
    steps: int
    decisions: int

    def ajdr(self) -> float:
        return metrics.ajdr(self.ratio_delay)

    def ajer(self) -> float:
        return metrics.ajer(self.ratio_standard)


def _fill(occ: np.ndarray, rows: list[memoryview], c: int, start: int, stop: int, ratio: float) -> None:
    """occ[c, start:stop] = ratio. Most runs are a few steps long (the ratio changes with every start and finish),
    where item writes through a memoryview cost a fraction of one numpy slice assignment; both round the float to
    float32 alike."""
    if stop - start <= 8:
        row = rows[c]
        for k in range(start, stop):
            row[k] = ratio
    else:
        occ[c, start:stop] = ratio


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
        self.episode_jobs = n_jobs   # jobs drawn per episode
        self.n_jobs = n_jobs         # jobs of the current episode
        self.local_scheduler = local_scheduler
        self.history = history
        self.tag = tag
        self.cluster_ids = list(range(1, federation.n + 1))   # the papers number clusters 1..C
        self._index_of = {cid: i for i, cid in enumerate(self.cluster_ids)}
        self.done = True
        # Set to a list to record every finished execution as (finish, cluster, job, execution, request, start,
        # missed): what learners need beyond the engine's feedback (RL-LSFC: did the execution wait to start?).
        # Never cleared by reset(): the caller empties it between episodes.
        self.execution_log: list[tuple[int, int, int, int, int, int, bool]] | None = None
        # Run the compiled step, event loop and observation when they were built (COMPILED); set to False
        # for the Python code (tests compare them). Read by reset(): an episode runs one or the other.
        self.compiled = COMPILED is not None
        self._compiled_episode = None

    # ------------------------------------------------------------ episode

    def reset(self, seed: int, workload: Workload | None = None) -> RouteObservation | None:
        """Start the episode of `seed` (its workload drawn from the seed, or the given one)."""
        fed = self.federation
        if workload is None:
            hetero = np.asarray(fed.hetero_factors, dtype=float) if fed.hetero_factors is not None else None
            workload = generate(self.episode_jobs, self.pattern, self.profile, fed.n, seed, hetero)
        elif workload.run.shape[1] != fed.n:
            raise ValueError(f"workload is for {workload.run.shape[1]} clusters, the federation has {fed.n}")
        w = self.workload = workload
        n = self.n_jobs = w.n_jobs
        self.seed = seed
        c = fed.n
        # per-cluster counters: Python ints (updated several times per step; numpy scalar updates cost ~4x more)
        self._normal = list(fed.capacities)
        self._cap = list(fed.capacities)                       # in effect (elastic expansion included)
        self._busy = [0] * c
        self._missed = [0] * c
        self._is_elastic = fed.is_elastic
        self._elastic = [i for i, e in enumerate(self._is_elastic) if e]
        self._max_capacity = [cap + (fed.elastic_max if e else 0) for cap, e in zip(fed.capacities, fed.is_elastic)]
        self._hetero = [float(h) for h in fed.hetero_factors] if fed.hetero_factors is not None else [0.0] * c
        # occupation ratio per cluster per step, written lazily: cluster c's row holds steps < _since[c]; its ratio
        # since then is _ratio[c], to be recomputed first if its executors changed at step _since[c] (_stale[c])
        self._occ = np.zeros((c, 4096), dtype=np.float32)
        self._occ_len = self._occ.shape[1]
        self._occ_rows = [memoryview(row) for row in self._occ]  # item writes without numpy's per-call cost
        self._ratio = [0.0] * c
        self._since = [0] * c
        self._stale = [False] * c
        self._queues: list[list[tuple]] = [[] for _ in range(c)]  # (job, batch, executors, request, queued at)
        self._dirty: list[int] = []                           # clusters whose queue or free executors changed
        self._reset_events()
        self.buffer: list[int] = []
        self._route_jobs: list[RouteJob | None] = [None] * n
        self._next_arrival = 0
        self._cluster_of = [-1] * n
        self._counts_on: list[list[int] | None] = [None] * n  # executor counts of a routed job on its cluster
        self._job_missed = [0] * n
        self._ratio_delay: list[list[float]] = [[] for _ in range(n)]
        self._ratio_std: list[list[float]] = [[] for _ in range(n)]
        self.finished = 0
        self.finished_delay = 0.0      # sum over finished jobs of 100 * mean(AR/OR - 1): AJDR * N at the end
        self.finished_standard = 0.0   # sum over finished jobs of 100 * mean(AR/SR): AJER * N at the end
        self.decisions = 0
        self.events: list[Event] = []
        self.t = 0
        self.done = False
        # the workload as Python lists for the event loop (scalar access to numpy arrays is slow)
        self._arrival = w.arrival.tolist()
        self._execs = w.executions.tolist()
        self._period = w.period.tolist()
        self._run = w.run.tolist()
        self._std = w.standard_runtime.tolist()
        self._dl = w.cluster_deadline.tolist()
        self._dist = w.distribution
        self._slots = w.slot.tolist()
        self._job_ids = _job_ids(n)
        self._fifo = self.local_scheduler == FIFO
        self._job_fields = {   # RouteJob fields as Python numbers, converted once per episode
            "category": [_CATEGORY[v] for v in w.category.tolist()],
            "runtime": w.standard_runtime.astype(float).tolist(),
            "deadline": w.deadline.astype(float).tolist(), "duration": w.duration.astype(float).tolist(),
            "expected_hetero": w.expected_hetero.astype(float).tolist(), "sensitivity": w.sensitivity.tolist(),
        }
        if fed.hetero_factors is not None:   # per-cluster demands (RouteJob.per_cluster) only where they differ
            self._job_fields["cluster_std"] = w.cluster_standard_runtime.astype(float).tolist()
            self._job_fields["cluster_deadline"] = w.cluster_deadline.astype(float).tolist()
        # the compiled code's state of this episode (its queues and calendar in C): `compiled` is read here, once
        # per episode
        self._compiled_episode = COMPILED.Episode(self) if self.compiled and COMPILED is not None else None
        return self._run_until_decision()

    def step(self, decision: RouteDecision) -> RouteObservation | None:
        if self._compiled_episode is not None:
            return COMPILED.step(self, decision)
        if self.done:
            raise RuntimeError("episode is over; call reset(seed)")
        if not 0 <= decision.job_index < len(self.buffer):
            raise ValueError(f"job index {decision.job_index} outside a buffer of {len(self.buffer)}")
        c = self._index_of.get(decision.cluster_id)
        if c is None:
            raise ValueError(f"unknown cluster {decision.cluster_id}; clusters are {self.cluster_ids}")
        job = self.buffer.pop(decision.job_index)
        self._route_jobs[job] = None
        self._cluster_of[job] = c
        self._counts_on[job] = self._dist[job, c].tolist()  # its 10 executor counts there, read per execution
        self.decisions += 1
        return self._routed(job, c)

    def take_events(self) -> list[Event]:
        ev, self.events = self.events, []
        return ev

    # numpy views of the per-cluster counters, for callers outside the event loop
    @property
    def busy(self) -> np.ndarray:
        return np.array(self._busy, dtype=np.int64)

    @property
    def capacity(self) -> np.ndarray:
        return np.array(self._cap, dtype=np.int64)

    @property
    def missed(self) -> np.ndarray:
        return np.array(self._missed, dtype=np.int64)

    @property
    def occupation(self) -> np.ndarray:
        """Occupation ratio per cluster of every step so far, shape (C, t)."""
        self._log_until(self.t)
        return self._occ[:, :self.t]

    def result(self) -> EpisodeResult:
        if not self.done:
            raise RuntimeError("episode not finished")
        return EpisodeResult(tmdl=sum(self._missed), ratio_delay=self._ratio_delay, ratio_standard=self._ratio_std,
                             missed_per_job=np.array(self._job_missed), cluster_of_job=np.array(self._cluster_of),
                             steps=self.t, decisions=self.decisions)

    # ------------------------------------------------------------ observation

    def request_id(self) -> str:
        """`<scenario>/<seed>:<n>`: n is the number of jobs routed before this decision in this episode."""
        return f"{self.tag}/{self.seed}:{self.decisions}"

    def observation(self) -> RouteObservation:
        if self._compiled_episode is not None:
            return COMPILED.observation(self)
        t = self.t
        lo = t - self.history if t > self.history else 0
        self._log_until(t)
        window = self._occ[:, lo:t]   # every cluster's history, as rows of one array (RouteObservation.occupation)
        cap, busy, missed, queues = self._cap, self._busy, self._missed, self._queues
        normal, max_cap, hetero, elastic = self._normal, self._max_capacity, self._hetero, self._is_elastic
        clusters = []
        for i, cid in enumerate(self.cluster_ids):
            free = cap[i] - busy[i]
            clusters.append(ClusterState(cid, normal[i], max_cap[i], cap[i], free if free > 0 else 0, hetero[i],
                                         window[i], missed[i], len(queues[i]), elastic[i]))
        route_jobs = self._route_jobs
        jobs = []
        for j in self.buffer:
            rj = route_jobs[j]
            if rj is None:
                rj = route_jobs[j] = self._make_route_job(j)
            jobs.append(rj)
        stream = f"{self.tag}/{self.seed}"
        return RouteObservation(jobs=jobs, clusters=clusters, time=float(t), request_id=f"{stream}:{self.decisions}",
                                sequence=RouteSequence(stream, self.decisions), occupation=window)

    def _make_route_job(self, j: int) -> RouteJob:
        w = self.workload
        f = self._job_fields
        per_cluster = ()
        if self.federation.hetero_factors is not None:
            std, dl = f["cluster_std"][j], f["cluster_deadline"][j]
            per_cluster = tuple(ClusterDemand(cid, w.distribution[j, i], std[i], dl[i])
                                for i, cid in enumerate(self.cluster_ids))
        return RouteJob(
            job_id=self._job_ids[j], category=f["category"][j],
            request_distribution=w.base_distribution[j], executor_runtime=f["runtime"][j],
            deadline=f["deadline"][j], duration=f["duration"][j], executions=self._execs[j],
            submit_time=float(self._arrival[j]), expected_hetero_factor=f["expected_hetero"][j],
            hetero_sensitivity=f["sensitivity"][j], per_cluster=per_cluster)

    # ------------------------------------------------------------ the event loop

    def _reset_events(self) -> None:
        # The calendar: what is due at each step, in the order it was scheduled (the order of a heap keyed by
        # (step, sequence number)), and a heap of the steps that have anything due.
        self._due_finish: dict[int, list[tuple]] = {}   # step -> [(cluster, job, batch, executors, request)]
        self._due_release: dict[int, list[tuple]] = {}  # step -> [(job, batch)]
        self._due_steps: list[int] = []

    def _routed(self, job: int, c: int) -> RouteObservation | None:
        """The job's first execution asks cluster c (its request time is the job's submission), and the step goes on."""
        executors = self._counts_on[job][self._slots[job][0]]
        normal = self._normal[c]
        self._queues[c].append((job, 0, executors if executors < normal else normal, self._arrival[job], self.t))
        if c not in self._dirty:
            self._dirty.append(c)
        return self._run_until_decision(routed=True)

    def _run_until_decision(self, routed: bool = False) -> RouteObservation | None:
        if self._compiled_episode is not None:
            return COMPILED.run_until_decision(self, routed)
        return self._python_loop(routed)

    def _python_loop(self, routed: bool = False) -> RouteObservation | None:
        """Run steps until the global buffer holds a job (return the observation) or every job has finished (None).

        One loop with every event inlined: an episode runs ~8 executions per routing decision, and at that rate
        method calls, heap tuples and attribute reads were most of the simulator's cost. Per step, in this order:
        arrivals join the buffer; executions due to finish finish (in the order they started), then streaming
        batches due for release ask their cluster (in the order they were scheduled); the elasticity controller
        ticks; the local scheduler of every cluster whose queue or free executors changed starts what it can.
        `routed`: a job was just routed at this step: only the local schedulers run before the next step.
        ReferenceMultiClusterSim (sim_reference.py) is the same loop written one method per event, and is tested
        to give identical episodes."""
        t = self.t
        n_jobs, arrival, buffer = self.n_jobs, self._arrival, self.buffer
        due_finish, due_release, due_steps = self._due_finish, self._due_release, self._due_steps
        heappush, heappop = heapq.heappush, heapq.heappop
        elastic, window = self._elastic, self.federation.elastic_window
        dirty, queues, cluster_of = self._dirty, self._queues, self._cluster_of
        cap, busy, normal = self._cap, self._busy, self._normal
        since, stale, ratio = self._since, self._stale, self._ratio
        occ, rows, occ_len = self._occ, self._occ_rows, self._occ_len
        run, std, dl, execs, period = self._run, self._std, self._dl, self._execs, self._period
        counts_on, slots = self._counts_on, self._slots
        ratio_delay, ratio_std = self._ratio_delay, self._ratio_std
        execution_log, events = self.execution_log, self.events
        fifo = self._fifo
        while True:
            if not routed:
                self.t = t
                na = self._next_arrival
                if na < n_jobs and arrival[na] <= t:
                    while na < n_jobs and arrival[na] <= t:
                        buffer.append(na)
                        na += 1
                    self._next_arrival = na
                if due_steps and due_steps[0] <= t:
                    at = heappop(due_steps)
                    due = due_finish.pop(at, None)
                    if due is not None:
                        for c, job, batch, executors, req in due:
                            s = since[c]
                            if s < t:   # c's executors change at t: log its occupation ratio of the steps before t
                                if stale[c]:
                                    ratio[c] = busy[c] / cap[c]
                                if t > occ_len:
                                    self._grow(t)
                                    occ, rows, occ_len = self._occ, self._occ_rows, self._occ_len
                                r = ratio[c]
                                if t - s <= 8:    # as _fill
                                    row = rows[c]
                                    for k in range(s, t):
                                        row[k] = r
                                else:
                                    occ[c, s:t] = r
                                since[c] = t
                            stale[c] = True
                            busy[c] -= executors
                            if c not in dirty:
                                dirty.append(c)
                            ar = t - req
                            run_c = run[job][c]
                            ratio_delay[job].append(ar / run_c)
                            ratio_std[job].append(ar / std[job])
                            deadline = dl[job][c]
                            missed = bool(deadline and ar > deadline)
                            if missed:
                                self._missed[c] += 1
                                self._job_missed[job] += 1
                                events.append(DeadlineMissed(self._job_ids[job], self.cluster_ids[c], timestamp_ms=t))
                            if execution_log is not None:
                                execution_log.append((t, c, job, batch, req, t - run_c, missed))
                            batch += 1
                            if batch < execs[job]:
                                release = arrival[job] + batch * period[job]
                                if release <= t:   # the next batch is late already: it asks now
                                    executors = counts_on[job][slots[job][batch]]
                                    n = normal[c]
                                    queues[c].append((job, batch, executors if executors < n else n, t, t))
                                else:
                                    waiting = due_release.get(release)
                                    if waiting is None:
                                        due_release[release] = [(job, batch)]
                                        if release not in due_finish:
                                            heappush(due_steps, release)
                                    else:
                                        waiting.append((job, batch))
                            else:
                                self._finish(job, c, t)
                    due = due_release.pop(at, None)
                    if due is not None:
                        for job, batch in due:
                            c = cluster_of[job]
                            executors = counts_on[job][slots[job][batch]]
                            n = normal[c]
                            queues[c].append((job, batch, executors if executors < n else n, t, t))
                            if c not in dirty:
                                dirty.append(c)
                if elastic and t % window == 0 and t > 0:
                    self._elasticity(t)
                    occ, rows, occ_len = self._occ, self._occ_rows, self._occ_len
            if dirty:
                # the local schedulers of the clusters whose queue or free executors changed at t
                for c in dirty:
                    queue = queues[c]
                    if not queue:
                        continue
                    free = cap[c] - busy[c]
                    started = 0
                    if fifo:
                        # strict arrival order: the head of the queue blocks everything behind it
                        while queue and queue[0][2] <= free:
                            job, batch, executors, req, _ = queue.pop(0)
                            free -= executors
                            started += executors
                            finish = t + run[job][c]
                            due = due_finish.get(finish)
                            if due is None:
                                due_finish[finish] = [(c, job, batch, executors, req)]
                                if finish not in due_release:
                                    heappush(due_steps, finish)
                            else:
                                due.append((c, job, batch, executors, req))
                    else:
                        # halted requests (queued at earlier steps) first, then this step's; each in job arrival order
                        if len(queue) > 1:
                            queue.sort(key=lambda r: (r[4] >= t, r[0]))
                        keep = []
                        for q in queue:
                            job, batch, executors, req, _ = q
                            if executors <= free:
                                free -= executors
                                started += executors
                                finish = t + run[job][c]
                                due = due_finish.get(finish)
                                if due is None:
                                    due_finish[finish] = [(c, job, batch, executors, req)]
                                    if finish not in due_release:
                                        heappush(due_steps, finish)
                                else:
                                    due.append((c, job, batch, executors, req))
                            else:
                                keep.append(q)
                        queues[c] = keep
                    if started:
                        s = since[c]
                        if s < t:
                            if stale[c]:
                                ratio[c] = busy[c] / cap[c]
                            if t > occ_len:
                                self._grow(t)
                                occ, rows, occ_len = self._occ, self._occ_rows, self._occ_len
                            r = ratio[c]
                            if t - s <= 8:
                                row = rows[c]
                                for k in range(s, t):
                                    row[k] = r
                            else:
                                occ[c, s:t] = r
                            since[c] = t
                        stale[c] = True
                        busy[c] += started
                dirty.clear()
            if buffer:
                if not routed:           # the global manager decides
                    return self.observation()
                t += 1                   # a job was routed at t: one job per step
                routed = False
                continue
            routed = False
            if self.finished == n_jobs:
                self.t = t
                self._log_until(t + 1)
                self.done = True
                return None
            # jump to the next step where something happens
            na = self._next_arrival
            nxt = arrival[na] if na < n_jobs else MAX_STEPS + 1
            if due_steps and due_steps[0] < nxt:
                nxt = due_steps[0]
            if elastic:
                tick = (t // window + 1) * window
                if tick < nxt:
                    nxt = tick
            if nxt > MAX_STEPS:
                raise RuntimeError(f"episode did not finish within {MAX_STEPS} steps")
            t = nxt

    def _touch(self, c: int, t: int) -> None:
        """Cluster c's busy executors or capacity change at step t: log its ratio of the steps before t."""
        since = self._since[c]
        if since < t:
            if self._stale[c]:
                self._ratio[c] = self._busy[c] / self._cap[c]
            if t > self._occ_len:
                self._grow(t)
            _fill(self._occ, self._occ_rows, c, since, t, self._ratio[c])
            self._since[c] = t
        self._stale[c] = True

    def _log_until(self, t: int) -> None:
        """Write every cluster's occupation ratio of the steps before t (nothing changed since its last change)."""
        if t > self._occ_len:
            self._grow(t)
        occ, rows, since, stale, ratio = self._occ, self._occ_rows, self._since, self._stale, self._ratio
        for c in range(len(since)):
            if since[c] < t:
                if stale[c]:
                    ratio[c] = self._busy[c] / self._cap[c]
                    stale[c] = False
                _fill(occ, rows, c, since[c], t, ratio[c])
                since[c] = t

    def _grow(self, t: int) -> None:
        grown = np.zeros((self._occ.shape[0], max(t, 2 * self._occ_len)), dtype=np.float32)
        grown[:, :self._occ_len] = self._occ
        self._occ = grown
        self._occ_len = grown.shape[1]
        self._occ_rows = [memoryview(row) for row in grown]

    def _finish(self, job: int, c: int, t: int) -> None:
        self.finished += 1
        ratios = self._ratio_delay[job]
        mean_delay = sum(ratios) / len(ratios)
        self.finished_delay += 100.0 * (mean_delay - 1.0)
        std = self._ratio_std[job]
        self.finished_standard += 100.0 * sum(std) / len(std)
        self.events.append(JobFinished(self._job_ids[job], self.cluster_ids[c], float(t - self._arrival[job]),
                                       mean_delay, self._job_missed[job], True, timestamp_ms=t))

    def _elasticity(self, t: int) -> None:
        """RL-LSFC's controller, once per window: +increment (up to max) if the occupation ratio reached the
        threshold at any step of the past window, else give back one increment. Executors given back while busy
        leave as their executions finish (no preemption): new starts wait until busy < capacity."""
        fed = self.federation
        self._log_until(t)
        occ = self._occ
        for c in self._elastic:
            expansion = self._cap[c] - self._normal[c]
            if occ[c, t - fed.elastic_window:t].max() >= fed.elastic_threshold:
                expansion = min(expansion + fed.elastic_increment, fed.elastic_max)
            else:
                expansion = max(expansion - fed.elastic_increment, 0)
            if expansion != self._cap[c] - self._normal[c]:
                self._touch(c, t)
                self._cap[c] = self._normal[c] + expansion
                if c not in self._dirty:
                    self._dirty.append(c)
