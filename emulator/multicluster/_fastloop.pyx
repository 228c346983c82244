# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""MultiClusterSim's event loop compiled (Cython): the loop of `MultiClusterSim._python_loop`, statement for
statement, on the same state (the simulator's Python lists and dicts), with C integers for steps, clusters, jobs
and executor counts and C stores into the float32 occupation log.

Built by setup.py when Cython and a C compiler are there (`pip install -e .` fetches Cython from PyPI); without
it, or when this file changed since the build (SOURCE_SHA256, set by setup.py), sim.py runs the Python loop.
tests/test_multicluster_fast_path.py checks that both loops and ReferenceMultiClusterSim give identical episodes.
"""

from heapq import heappop, heappush

from policy_engine.types import DeadlineMissed

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
    cdef list missed_on = sim._missed, job_missed = sim._job_missed, job_ids = sim._job_ids
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
                            sim._finish(job, c, t)
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
                return sim.observation()
            t += 1                   # a job was routed at t: one job per step
            routed = False
            continue
        routed = False
        if sim.finished == n_jobs:
            sim.t = t
            sim._log_until(t + 1)
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
