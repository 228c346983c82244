# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""MultiClusterSim's per-decision work compiled (Cython): the event loop of `MultiClusterSim._python_loop`, the
routing step, the occupation log and the observation, step for step as in sim.py. The clusters' queues and the
calendar of finishing executions and batch releases are C arrays here (Episode, made by reset()); everything the
rest of the simulator reads (busy executors, capacities, the occupation log, per-job ratios, events) is the
simulator's own Python state. C integers for steps, clusters, jobs and executor counts; C stores into the float32
occupation log; float sums stay Python arithmetic (no contraction into fused multiply-adds).

Built by setup.py when Cython and a C compiler are there (`pip install -e .` fetches Cython from PyPI); without
it, or when this file changed since the build (SOURCE_SHA256, set by setup.py), sim.py runs the Python loop.
tests/test_multicluster_fast_path.py checks that both loops and ReferenceMultiClusterSim give identical episodes.
"""

from libc.stdlib cimport free as cfree, malloc, realloc
from libc.string cimport memmove

from policy_engine.types import ClusterState, DeadlineMissed, JobFinished, RouteObservation, RouteSequence

cdef extern from *:
    """
    #ifndef FASTLOOP_SOURCE_SHA256
    #define FASTLOOP_SOURCE_SHA256 ""
    #endif
    """
    const char *FASTLOOP_SOURCE_SHA256

SOURCE_SHA256 = FASTLOOP_SOURCE_SHA256.decode()
MAX_STEPS = 50_000_000


cdef inline void _log_ratio(float[:, ::1] occ, Py_ssize_t c, Py_ssize_t start, Py_ssize_t stop, double ratio):
    cdef float r = <float>ratio   # numpy's float64 -> float32 assignment: the same C conversion
    cdef Py_ssize_t k
    for k in range(start, stop):
        occ[c, k] = r


cdef struct Request:     # an execution waiting at its cluster for its executors
    long job, batch, executors, req, queued


cdef struct Due:         # an execution finishing, or a streaming batch released, at some step
    long c, job, batch, executors, req, next   # next: the following entry due at the same step (-1: none)


cdef class Episode:
    """One episode's state for the compiled code: the simulator's per-episode lists (made by reset(), read once
    instead of ~80 attribute lookups per decision), and in C arrays the clusters' queues and the calendar of
    executions finishing and batches released at each step (one linked list per step, in the order they were
    scheduled: the order of the Python loop's lists). Counters that change during the episode (t, next arrival,
    finished, decisions, events, the grown occupation log) stay on the simulator."""
    cdef list arrival, buffer, elastic, dirty, cluster_of, cap, busy, normal, since, stale, ratio
    cdef list run, std, dl, execs, period, counts_on, slots, ratio_delay, ratio_std, missed_on, job_missed
    cdef list cluster_ids, hetero, max_cap, route_jobs
    cdef tuple job_ids, is_elastic
    cdef dict index_of
    cdef object dist
    cdef str stream
    cdef long n_jobs, window, history, n_clusters
    cdef bint fifo
    cdef Request** queue      # per cluster: requests [queue_head, queue_len) in queue order
    cdef long* queue_head
    cdef long* queue_len
    cdef long* queue_cap
    cdef Due* pool
    cdef long pool_cap, pool_used, free_list, pending
    cdef long* finish_head    # per step: first and last entry of its finishing executions, -1 = none
    cdef long* finish_tail
    cdef long* release_head   # per step: first and last entry of its batch releases
    cdef long* release_tail
    cdef long steps_cap

    def __cinit__(self):
        self.queue = NULL
        self.queue_head = self.queue_len = self.queue_cap = NULL
        self.pool = NULL
        self.finish_head = self.finish_tail = self.release_head = self.release_tail = NULL
        self.n_clusters = 0

    def __init__(self, sim):
        self.arrival, self.buffer = sim._arrival, sim.buffer
        self.elastic, self.window = sim._elastic, sim.federation.elastic_window
        self.dirty, self.cluster_of = sim._dirty, sim._cluster_of
        self.cap, self.busy, self.normal = sim._cap, sim._busy, sim._normal
        self.since, self.stale, self.ratio = sim._since, sim._stale, sim._ratio
        self.run, self.std, self.dl, self.execs, self.period = sim._run, sim._std, sim._dl, sim._execs, sim._period
        self.counts_on, self.slots = sim._counts_on, sim._slots
        self.ratio_delay, self.ratio_std = sim._ratio_delay, sim._ratio_std
        self.missed_on, self.job_missed, self.job_ids = sim._missed, sim._job_missed, sim._job_ids
        self.cluster_ids, self.index_of, self.hetero = sim.cluster_ids, sim._index_of, sim._hetero
        self.max_cap, self.is_elastic, self.route_jobs = sim._max_capacity, sim._is_elastic, sim._route_jobs
        self.dist, self.n_jobs, self.history, self.fifo = sim._dist, sim.n_jobs, sim.history, sim._fifo
        self.stream = f"{sim.tag}/{sim.seed}"
        cdef long n = len(self.cluster_ids), c
        self.queue = <Request**>malloc(n * sizeof(Request*))
        self.queue_head = <long*>malloc(n * sizeof(long))
        self.queue_len = <long*>malloc(n * sizeof(long))
        self.queue_cap = <long*>malloc(n * sizeof(long))
        if not (self.queue and self.queue_head and self.queue_len and self.queue_cap):
            raise MemoryError()
        for c in range(n):
            self.queue[c] = NULL
        self.n_clusters = n
        for c in range(n):
            self.queue[c] = <Request*>malloc(16 * sizeof(Request))
            if not self.queue[c]:
                raise MemoryError()
            self.queue_head[c] = self.queue_len[c] = 0
            self.queue_cap[c] = 16
        self.pool_cap, self.pool_used, self.free_list, self.pending = 256, 0, -1, 0
        self.pool = <Due*>malloc(self.pool_cap * sizeof(Due))
        self.steps_cap = 0
        if not self.pool:
            raise MemoryError()
        _ensure_step(self, 4095)

    def __dealloc__(self):
        cdef long c
        if self.queue:
            for c in range(self.n_clusters):
                cfree(self.queue[c])
        cfree(self.queue)
        cfree(self.queue_head)
        cfree(self.queue_len)
        cfree(self.queue_cap)
        cfree(self.pool)
        cfree(self.finish_head)
        cfree(self.finish_tail)
        cfree(self.release_head)
        cfree(self.release_tail)


cdef int _ensure_step(Episode e, long step) except -1:
    if step < e.steps_cap:
        return 0
    cdef long cap = max(step + 1, 2 * e.steps_cap), k
    cdef long* arrays[4]
    arrays[0], arrays[1], arrays[2], arrays[3] = e.finish_head, e.finish_tail, e.release_head, e.release_tail
    for k in range(4):
        arrays[k] = <long*>realloc(arrays[k], cap * sizeof(long))
        if not arrays[k]:
            raise MemoryError()
    e.finish_head, e.finish_tail, e.release_head, e.release_tail = arrays[0], arrays[1], arrays[2], arrays[3]
    for k in range(e.steps_cap, cap):
        e.finish_head[k] = e.finish_tail[k] = e.release_head[k] = e.release_tail[k] = -1
    e.steps_cap = cap
    return 0


cdef int _schedule(Episode e, bint finishing, long step, long c, long job, long batch, long executors,
                   long req) except -1:
    """Append an entry to the step's list of finishing executions (or of batch releases)."""
    _ensure_step(e, step)
    cdef long i
    if e.free_list != -1:
        i = e.free_list
        e.free_list = e.pool[i].next
    else:
        if e.pool_used == e.pool_cap:
            e.pool = <Due*>realloc(e.pool, 2 * e.pool_cap * sizeof(Due))
            if not e.pool:
                raise MemoryError()
            e.pool_cap *= 2
        i = e.pool_used
        e.pool_used += 1
    e.pool[i].c, e.pool[i].job, e.pool[i].batch, e.pool[i].executors, e.pool[i].req = c, job, batch, executors, req
    e.pool[i].next = -1
    cdef long* head = e.finish_head if finishing else e.release_head
    cdef long* tail = e.finish_tail if finishing else e.release_tail
    if head[step] == -1:
        head[step] = i
    else:
        e.pool[tail[step]].next = i
    tail[step] = i
    e.pending += 1
    return 0


cdef int _enqueue(Episode e, long c, long job, long batch, long executors, long req, long queued) except -1:
    cdef long n = e.queue_len[c], head = e.queue_head[c]
    if n == e.queue_cap[c]:
        if head > 0:   # reuse the space of requests already started
            memmove(e.queue[c], e.queue[c] + head, (n - head) * sizeof(Request))
            n -= head
            e.queue_head[c] = 0
        else:
            e.queue[c] = <Request*>realloc(e.queue[c], 2 * e.queue_cap[c] * sizeof(Request))
            if not e.queue[c]:
                raise MemoryError()
            e.queue_cap[c] *= 2
    e.queue[c][n].job, e.queue[c][n].batch, e.queue[c][n].executors = job, batch, executors
    e.queue[c][n].req, e.queue[c][n].queued = req, queued
    e.queue_len[c] = n + 1
    return 0


cdef inline bint _halted_after(Request* a, Request* b, long t):
    """The Python loop's sort key (queued at t or later, job): a's key is greater than b's."""
    cdef bint fa = a.queued >= t, fb = b.queued >= t
    if fa != fb:
        return fa > fb
    return a.job > b.job


cdef Episode _episode(sim):
    e = sim._compiled_episode
    if e is None or (<Episode>e).buffer is not sim.buffer:
        raise RuntimeError("the compiled simulator has no state for this episode; call reset(seed)")
    return <Episode>e


cdef _finish(sim, Episode e, long job, long c, long t, list events):
    """MultiClusterSim._finish."""
    sim.finished += 1
    ratios = e.ratio_delay[job]
    mean_delay = sum(ratios) / len(ratios)
    sim.finished_delay += 100.0 * (mean_delay - 1.0)
    std = e.ratio_std[job]
    sim.finished_standard += 100.0 * sum(std) / len(std)
    events.append(JobFinished(e.job_ids[job], e.cluster_ids[c], float(t - <long>e.arrival[job]),
                              mean_delay, e.job_missed[job], True, timestamp_ms=t))


def log_until(sim, long t):
    """MultiClusterSim._log_until."""
    _log_until(sim, _episode(sim), t)


cdef _log_until(sim, Episode e, long t):
    if t > <long>sim._occ_len:
        sim._grow(t)
    cdef float[:, ::1] occ = sim._occ
    cdef list since = e.since, stale = e.stale, ratio = e.ratio, busy = e.busy, cap = e.cap
    cdef Py_ssize_t c
    cdef long s
    for c in range(len(since)):
        s = since[c]
        if s < t:
            if stale[c]:
                ratio[c] = <double>(<long>busy[c]) / <double>(<long>cap[c])
                stale[c] = False
            _log_ratio(occ, c, s, t, ratio[c])
            since[c] = t


def observation(sim):
    """MultiClusterSim.observation."""
    return _observation(sim, _episode(sim))


cdef _observation(sim, Episode e):
    cdef long t = sim.t
    cdef long lo = t - e.history if t > e.history else 0
    _log_until(sim, e, t)
    window = sim._occ[:, lo:t]
    cdef list cap = e.cap, busy = e.busy, missed = e.missed_on
    cdef list normal = e.normal, max_cap = e.max_cap, hetero = e.hetero
    cdef tuple elastic = e.is_elastic
    cdef list cluster_ids = e.cluster_ids
    cdef list clusters = []
    cdef Py_ssize_t i
    cdef long free
    for i in range(len(cluster_ids)):
        free = <long>cap[i] - <long>busy[i]
        clusters.append(ClusterState(cluster_ids[i], normal[i], max_cap[i], cap[i], free if free > 0 else 0,
                                     hetero[i], window[i], missed[i], e.queue_len[i] - e.queue_head[i], elastic[i]))
    cdef list route_jobs = e.route_jobs
    cdef list jobs = []
    for j in e.buffer:
        rj = route_jobs[j]
        if rj is None:
            rj = route_jobs[j] = sim._make_route_job(j)
        jobs.append(rj)
    decisions = sim.decisions
    return RouteObservation(jobs=jobs, clusters=clusters, time=float(t), request_id=f"{e.stream}:{decisions}",
                            sequence=RouteSequence(e.stream, decisions), occupation=window)


def step(sim, decision):
    """MultiClusterSim.step: the decision checked, the job's first execution asks its cluster (its request time
    is the job's submission), and the step goes on."""
    if sim.done:
        raise RuntimeError("episode is over; call reset(seed)")
    cdef Episode e = _episode(sim)
    cdef list buffer = e.buffer
    index = decision.job_index
    if not 0 <= index < len(buffer):
        raise ValueError(f"job index {decision.job_index} outside a buffer of {len(buffer)}")
    c_obj = e.index_of.get(decision.cluster_id)
    if c_obj is None:
        raise ValueError(f"unknown cluster {decision.cluster_id}; clusters are {e.cluster_ids}")
    cdef long c = c_obj
    cdef long job = buffer.pop(index)
    e.route_jobs[job] = None
    e.cluster_of[job] = c
    cdef list counts = e.dist[job, c].tolist()   # its 10 executor counts there, read per execution
    e.counts_on[job] = counts
    sim.decisions += 1
    cdef long executors = counts[e.slots[job][0]]
    cdef long n = e.normal[c]
    _enqueue(e, c, job, 0, executors if executors < n else n, e.arrival[job], sim.t)
    cdef list dirty = e.dirty
    if c not in dirty:
        dirty.append(c)
    return _run(sim, e, True)


def run_until_decision(sim, bint routed):
    """MultiClusterSim._python_loop."""
    return _run(sim, _episode(sim), routed)


cdef _run(sim, Episode e, bint routed):
    cdef long t = sim.t
    cdef long n_jobs = e.n_jobs
    cdef list arrival = e.arrival, buffer = e.buffer
    cdef list elastic = e.elastic
    cdef long window = e.window
    cdef list dirty = e.dirty, cluster_of = e.cluster_of
    cdef list cap = e.cap, busy = e.busy, normal = e.normal
    cdef list since = e.since, stale = e.stale, ratio = e.ratio
    cdef float[:, ::1] occ = sim._occ
    cdef long occ_len = sim._occ_len
    cdef list run = e.run, std = e.std, dl = e.dl, execs = e.execs, period = e.period
    cdef list counts_on = e.counts_on, slots = e.slots
    cdef list ratio_delay = e.ratio_delay, ratio_std = e.ratio_std
    cdef list missed_on = e.missed_on, job_missed = e.job_missed
    cdef tuple job_ids = e.job_ids
    cdef list cluster_ids = e.cluster_ids
    execution_log = sim.execution_log
    cdef list events = sim.events
    cdef bint fifo = e.fifo
    cdef long na = sim._next_arrival
    cdef long i, nexti, c, job, batch, executors, req, s, run_c, deadline, ar, release, n, free, started, tick
    cdef long nxt, qc, head, length, k, m, keep
    cdef bint missed
    cdef Request r
    cdef Request* q
    while True:
        if not routed:
            if na < n_jobs and <long>arrival[na] <= t:
                while na < n_jobs and <long>arrival[na] <= t:
                    buffer.append(na)
                    na += 1
                sim._next_arrival = na
            if e.pending and t < e.steps_cap:
                i = e.finish_head[t]
                e.finish_head[t] = e.finish_tail[t] = -1
                while i != -1:
                    c, job, batch, executors, req = e.pool[i].c, e.pool[i].job, e.pool[i].batch, \
                        e.pool[i].executors, e.pool[i].req
                    nexti = e.pool[i].next
                    e.pool[i].next = e.free_list
                    e.free_list = i
                    e.pending -= 1
                    i = nexti
                    s = since[c]
                    if s < t:   # c's executors change at t: log its occupation ratio of the steps before t
                        if stale[c]:
                            ratio[c] = <double>(<long>busy[c]) / <double>(<long>cap[c])
                        if t > occ_len:
                            sim._grow(t)
                            occ = sim._occ
                            occ_len = sim._occ_len
                        _log_ratio(occ, c, s, t, ratio[c])
                        since[c] = t
                    stale[c] = True
                    busy[c] = <long>busy[c] - executors
                    if c not in dirty:
                        dirty.append(c)
                    ar = t - req
                    run_c = run[job][c]
                    ratio_delay[job].append(<double>ar / <double>run_c)
                    ratio_std[job].append(<double>ar / <double>(<long>std[job]))
                    deadline = dl[job][c]
                    missed = deadline != 0 and ar > deadline
                    if missed:
                        missed_on[c] = <long>missed_on[c] + 1
                        job_missed[job] = <long>job_missed[job] + 1
                        events.append(DeadlineMissed(job_ids[job], cluster_ids[c], timestamp_ms=t))
                    if execution_log is not None:
                        execution_log.append((t, c, job, batch, req, t - run_c, missed))
                    batch += 1
                    if batch < <long>execs[job]:
                        release = <long>arrival[job] + batch * <long>period[job]
                        if release <= t:   # the next batch is late already: it asks now
                            executors = counts_on[job][slots[job][batch]]
                            n = normal[c]
                            _enqueue(e, c, job, batch, executors if executors < n else n, t, t)
                        else:
                            _schedule(e, False, release, c, job, batch, 0, 0)
                    else:
                        _finish(sim, e, job, c, t, events)
                i = e.release_head[t]
                e.release_head[t] = e.release_tail[t] = -1
                while i != -1:
                    job, batch = e.pool[i].job, e.pool[i].batch
                    nexti = e.pool[i].next
                    e.pool[i].next = e.free_list
                    e.free_list = i
                    e.pending -= 1
                    i = nexti
                    c = cluster_of[job]
                    executors = counts_on[job][slots[job][batch]]
                    n = normal[c]
                    _enqueue(e, c, job, batch, executors if executors < n else n, t, t)
                    if c not in dirty:
                        dirty.append(c)
            if elastic and t % window == 0 and t > 0:
                sim.t = t
                sim._elasticity(t)
                occ = sim._occ
                occ_len = sim._occ_len
        if dirty:
            # the local schedulers of the clusters whose queue or free executors changed at t
            for qc in range(len(dirty)):
                c = dirty[qc]
                head, length = e.queue_head[c], e.queue_len[c]
                if head == length:
                    continue
                q = e.queue[c]
                free = <long>cap[c] - <long>busy[c]
                started = 0
                if fifo:
                    # strict arrival order: the head of the queue blocks everything behind it
                    while head < length and q[head].executors <= free:
                        r = q[head]
                        head += 1
                        free -= r.executors
                        started += r.executors
                        _schedule(e, True, t + <long>run[r.job][c], c, r.job, r.batch, r.executors, r.req)
                    if head == length:
                        head = length = 0
                    e.queue_head[c], e.queue_len[c] = head, length
                else:
                    # halted requests (queued at earlier steps) first, then this step's; each in job arrival
                    # order (a stable insertion sort by the Python loop's key)
                    for k in range(head + 1, length):
                        r = q[k]
                        m = k
                        while m > head and _halted_after(&q[m - 1], &r, t):
                            q[m] = q[m - 1]
                            m -= 1
                        q[m] = r
                    keep = head
                    for k in range(head, length):
                        r = q[k]
                        if r.executors <= free:
                            free -= r.executors
                            started += r.executors
                            _schedule(e, True, t + <long>run[r.job][c], c, r.job, r.batch, r.executors, r.req)
                        else:
                            q[keep] = r
                            keep += 1
                    if keep == head:
                        head = keep = 0
                    e.queue_head[c], e.queue_len[c] = head, keep
                if started:
                    s = since[c]
                    if s < t:
                        if stale[c]:
                            ratio[c] = <double>(<long>busy[c]) / <double>(<long>cap[c])
                        if t > occ_len:
                            sim._grow(t)
                            occ = sim._occ
                            occ_len = sim._occ_len
                        _log_ratio(occ, c, s, t, ratio[c])
                        since[c] = t
                    stale[c] = True
                    busy[c] = <long>busy[c] + started
            del dirty[:]
        if buffer:
            if not routed:           # the global manager decides
                sim.t = t
                return _observation(sim, e)
            t += 1                   # a job was routed at t: one job per step
            routed = False
            continue
        routed = False
        if sim.finished == n_jobs:
            sim.t = t
            _log_until(sim, e, t + 1)
            sim.done = True
            return None
        # jump to the next step where something happens
        nxt = arrival[na] if na < n_jobs else MAX_STEPS + 1
        if e.pending:    # every entry is due after t and before steps_cap
            k = t + 1
            while k < nxt and e.finish_head[k] == -1 and e.release_head[k] == -1:
                k += 1
            nxt = k
        if elastic:
            tick = (t // window + 1) * window
            if tick < nxt:
                nxt = tick
        if nxt > MAX_STEPS:
            raise RuntimeError(f"episode did not finish within {MAX_STEPS} steps")
        t = nxt
