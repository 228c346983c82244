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


cdef _finish(sim, long job, long c, long t, list ratio_delay, list ratio_std, list events):
    """MultiClusterSim._finish."""
    sim.finished += 1
    ratios = ratio_delay[job]
    mean_delay = sum(ratios) / len(ratios)
    sim.finished_delay += 100.0 * (mean_delay - 1.0)
    std = ratio_std[job]
    sim.finished_standard += 100.0 * sum(std) / len(std)
    events.append(JobFinished(sim._job_ids[job], sim.cluster_ids[c], float(t - <long>sim._arrival[job]),
                              mean_delay, sim._job_missed[job], True, timestamp_ms=t))


def log_until(sim, long t):
    """MultiClusterSim._log_until."""
    if t > <long>sim._occ_len:
        sim._grow(t)
    cdef float[:, ::1] occ = sim._occ
    cdef list since = sim._since, stale = sim._stale, ratio = sim._ratio, busy = sim._busy, cap = sim._cap
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
    cdef long t = sim.t
    cdef long history = sim.history
    cdef long lo = t - history if t > history else 0
    log_until(sim, t)
    window = sim._occ[:, lo:t]
    cdef list cap = sim._cap, busy = sim._busy, missed = sim._missed, queues = sim._queues
    cdef list normal = sim._normal, max_cap = sim._max_capacity, hetero = sim._hetero
    cdef tuple elastic = sim._is_elastic
    cdef list cluster_ids = sim.cluster_ids
    cdef list clusters = []
    cdef Py_ssize_t i
    cdef long free
    for i in range(len(cluster_ids)):
        free = <long>cap[i] - <long>busy[i]
        clusters.append(ClusterState(cluster_ids[i], normal[i], max_cap[i], cap[i], free if free > 0 else 0,
                                     hetero[i], window[i], missed[i], len(<list>queues[i]), elastic[i]))
    cdef list route_jobs = sim._route_jobs
    cdef list jobs = []
    for j in sim.buffer:
        rj = route_jobs[j]
        if rj is None:
            rj = route_jobs[j] = sim._make_route_job(j)
        jobs.append(rj)
    decisions = sim.decisions
    stream = f"{sim.tag}/{sim.seed}"
    return RouteObservation(jobs=jobs, clusters=clusters, time=float(t), request_id=f"{stream}:{decisions}",
                            sequence=RouteSequence(stream, decisions), occupation=window)


def step(sim, decision):
    """MultiClusterSim.step: the decision checked, the job's first execution asks its cluster (its request time
    is the job's submission), and the step goes on."""
    if sim.done:
        raise RuntimeError("episode is over; call reset(seed)")
    cdef list buffer = sim.buffer
    index = decision.job_index
    if not 0 <= index < len(buffer):
        raise ValueError(f"job index {decision.job_index} outside a buffer of {len(buffer)}")
    c_obj = sim._index_of.get(decision.cluster_id)
    if c_obj is None:
        raise ValueError(f"unknown cluster {decision.cluster_id}; clusters are {sim.cluster_ids}")
    cdef long c = c_obj
    cdef long job = buffer.pop(index)
    sim._route_jobs[job] = None
    sim._cluster_of[job] = c
    cdef list counts = sim._dist[job, c].tolist()   # its 10 executor counts there, read per execution
    sim._counts_on[job] = counts
    sim.decisions += 1
    cdef long executors = counts[sim._slots[job][0]]
    cdef long n = sim._normal[c]
    (<list>sim._queues[c]).append((job, 0, executors if executors < n else n, sim._arrival[job], sim.t))
    cdef list dirty = sim._dirty
    if c not in dirty:
        dirty.append(c)
    return run_until_decision(sim, True)


def run_until_decision(sim, bint routed):
    cdef long t = sim.t
    cdef long n_jobs = sim.n_jobs
    cdef list arrival = sim._arrival, buffer = sim.buffer
    cdef dict due_finish = sim._due_finish, due_release = sim._due_release
    cdef list due_steps = sim._due_steps
    cdef list elastic = sim._elastic
    cdef long window = sim.federation.elastic_window
    cdef list dirty = sim._dirty, queues = sim._queues, cluster_of = sim._cluster_of
    cdef list cap = sim._cap, busy = sim._busy, normal = sim._normal
    cdef list since = sim._since, stale = sim._stale, ratio = sim._ratio
    cdef float[:, ::1] occ = sim._occ
    cdef long occ_len = sim._occ_len
    cdef list run = sim._run, std = sim._std, dl = sim._dl, execs = sim._execs, period = sim._period
    cdef list counts_on = sim._counts_on, slots = sim._slots
    cdef list ratio_delay = sim._ratio_delay, ratio_std = sim._ratio_std
    cdef list missed_on = sim._missed, job_missed = sim._job_missed
    cdef tuple job_ids = sim._job_ids
    cdef list cluster_ids = sim.cluster_ids
    execution_log = sim.execution_log
    cdef list events = sim.events
    cdef bint fifo = sim._fifo
    cdef long na, at, c, job, batch, executors, req, s, run_c, deadline, ar, release, n, free, started, finish, tick
    cdef long nxt, qc
    cdef bint missed
    cdef list due, waiting, queue, keep
    cdef tuple q
    while True:
        if not routed:
            sim.t = t
            na = sim._next_arrival
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
                            _finish(sim, job, c, t, ratio_delay, ratio_std, events)
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
                return observation(sim)
            t += 1                   # a job was routed at t: one job per step
            routed = False
            continue
        routed = False
        if sim.finished == n_jobs:
            sim.t = t
            log_until(sim, t + 1)
            sim.done = True
            return None
        # jump to the next step where something happens
        na = sim._next_arrival
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
