# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""MultiClusterSim's per-decision work compiled (Cython): the event loop of `MultiClusterSim._python_loop`, the
routing step, the occupation log and the observation, statement for statement as in sim.py, on the same state
(the simulator's Python lists and dicts), with C integers for steps, clusters, jobs and executor counts and C
stores into the float32 occupation log. Float sums stay Python arithmetic (no contraction into fused operations).

Built by setup.py when Cython and a C compiler are there (`pip install -e .` fetches Cython from PyPI); without
it, or when this file changed since the build (SOURCE_SHA256, set by setup.py), sim.py runs the Python loop.
tests/test_multicluster_fast_path.py checks that both loops and ReferenceMultiClusterSim give identical episodes.
"""

from heapq import heappop, heappush

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


cdef class Episode:
    """The simulator's per-episode lists (made by reset()), read once instead of ~80 attribute lookups per
    decision. Counters that change during the episode (t, next arrival, finished, decisions, events, the grown
    occupation log) stay on the simulator."""
    cdef list arrival, buffer, due_steps, elastic, dirty, queues, cluster_of, cap, busy, normal, since, stale, ratio
    cdef list run, std, dl, execs, period, counts_on, slots, ratio_delay, ratio_std, missed_on, job_missed
    cdef list cluster_ids, hetero, max_cap, route_jobs
    cdef tuple job_ids, is_elastic
    cdef dict due_finish, due_release, index_of
    cdef object dist
    cdef str stream
    cdef long n_jobs, window, history
    cdef bint fifo

    def __init__(self, sim):
        self.arrival, self.buffer, self.due_steps = sim._arrival, sim.buffer, sim._due_steps
        self.due_finish, self.due_release = sim._due_finish, sim._due_release
        self.elastic, self.window = sim._elastic, sim.federation.elastic_window
        self.dirty, self.queues, self.cluster_of = sim._dirty, sim._queues, sim._cluster_of
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


cdef Episode _episode(sim):
    e = sim._compiled_episode
    if e is None or (<Episode>e).buffer is not sim.buffer:   # reset() made new lists
        e = Episode(sim)
        sim._compiled_episode = e
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
    cdef list cap = e.cap, busy = e.busy, missed = e.missed_on, queues = e.queues
    cdef list normal = e.normal, max_cap = e.max_cap, hetero = e.hetero
    cdef tuple elastic = e.is_elastic
    cdef list cluster_ids = e.cluster_ids
    cdef list clusters = []
    cdef Py_ssize_t i
    cdef long free
    for i in range(len(cluster_ids)):
        free = <long>cap[i] - <long>busy[i]
        clusters.append(ClusterState(cluster_ids[i], normal[i], max_cap[i], cap[i], free if free > 0 else 0,
                                     hetero[i], window[i], missed[i], len(<list>queues[i]), elastic[i]))
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
    (<list>e.queues[c]).append((job, 0, executors if executors < n else n, e.arrival[job], sim.t))
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
    cdef dict due_finish = e.due_finish, due_release = e.due_release
    cdef list due_steps = e.due_steps
    cdef list elastic = e.elastic
    cdef long window = e.window
    cdef list dirty = e.dirty, queues = e.queues, cluster_of = e.cluster_of
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
    cdef long at, c, job, batch, executors, req, s, run_c, deadline, ar, release, n, free, started, finish, tick
    cdef long nxt, qc
    cdef bint missed
    cdef list due, waiting, queue, keep
    cdef tuple q
    while True:
        if not routed:
            if na < n_jobs and <long>arrival[na] <= t:
                while na < n_jobs and <long>arrival[na] <= t:
                    buffer.append(na)
                    na += 1
                sim._next_arrival = na
            if due_steps and <long>due_steps[0] <= t:
                at = heappop(due_steps)
                due = due_finish.pop(at, None)
                if due is not None:
                    for q in due:
                        c, job, batch, executors, req = q
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
                            _finish(sim, e, job, c, t, events)
                due = due_release.pop(at, None)
                if due is not None:
                    for q in due:
                        job, batch = q
                        c = cluster_of[job]
                        executors = counts_on[job][slots[job][batch]]
                        n = normal[c]
                        queues[c].append((job, batch, executors if executors < n else n, t, t))
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
                queue = queues[c]
                if not queue:
                    continue
                free = <long>cap[c] - <long>busy[c]
                started = 0
                if fifo:
                    # strict arrival order: the head of the queue blocks everything behind it
                    while queue and <long>(<tuple>queue[0])[2] <= free:
                        q = queue.pop(0)
                        job, batch, executors, req = q[0], q[1], q[2], q[3]
                        free -= executors
                        started += executors
                        finish = t + <long>run[job][c]
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
                        job, batch, executors, req = q[0], q[1], q[2], q[3]
                        if executors <= free:
                            free -= executors
                            started += executors
                            finish = t + <long>run[job][c]
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
        if due_steps and <long>due_steps[0] < nxt:
            nxt = due_steps[0]
        if elastic:
            tick = (t // window + 1) * window
            if tick < nxt:
                nxt = tick
        if nxt > MAX_STEPS:
            raise RuntimeError(f"episode did not finish within {MAX_STEPS} steps")
        t = nxt
