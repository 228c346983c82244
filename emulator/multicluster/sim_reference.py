"""The multi-cluster simulator's event loop as first written: one method per kind of event, completions and batch
releases on two heaps ordered by (step, sequence number).

`MultiClusterSim` runs the same events in one inlined loop over a calendar of steps (emulator/multicluster/sim.py).
This class is the reference it is tested against (tests/test_multicluster_fast_path.py: identical decisions,
events, execution log, occupation and metrics on every scenario family); it is slower, not different. It is kept
for that test alone (nothing else imports it): an independent, readable statement of the event rules that the two
fast loops (inlined Python, compiled _fastloop.pyx) must match. Everything outside the event loop (observations,
occupation log, elasticity, results) is shared.
"""

from __future__ import annotations

import heapq

from emulator.multicluster.sim import MAX_STEPS, MultiClusterSim
from policy_engine.types import DeadlineMissed, RouteObservation


class ReferenceMultiClusterSim(MultiClusterSim):
    """MultiClusterSim with the per-event methods of the original event loop (never the compiled code)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.compiled = False

    def _reset_events(self) -> None:
        self._completions: list[tuple] = []                   # (finish, seq, cluster, job, batch, executors, req)
        self._releases: list[tuple] = []                      # (time, seq, job, batch)
        self._seq = 0

    def _routed(self, job: int, c: int) -> RouteObservation | None:
        t = self.t
        self._request(job, 0, c, self._arrival[job], t)
        self._schedule_dirty(t)
        self.t = t + 1 if self.buffer else self._next_event_time(t)
        return self._run_until_decision()

    def _run_until_decision(self) -> RouteObservation | None:
        n_jobs = self.n_jobs
        arrival = self._arrival
        comp = self._completions
        rel = self._releases
        buffer = self.buffer
        elastic = self._elastic
        window = self.federation.elastic_window
        while True:
            t = self.t
            na = self._next_arrival
            if na < n_jobs and arrival[na] <= t:
                while na < n_jobs and arrival[na] <= t:
                    buffer.append(na)
                    na += 1
                self._next_arrival = na
            if comp and comp[0][0] <= t:
                self._complete(t)
            if rel and rel[0][0] <= t:
                self._release(t)
            if elastic and t % window == 0 and t > 0:
                self._elasticity(t)
            if self._dirty:
                self._schedule_dirty(t)
            if buffer:
                return self.observation()
            if self.finished == n_jobs:
                self._log_until(t + 1)
                self.done = True
                return None
            # jump to the next step where something happens
            nxt = arrival[na] if na < n_jobs else MAX_STEPS + 1
            if comp and comp[0][0] < nxt:
                nxt = comp[0][0]
            if rel and rel[0][0] < nxt:
                nxt = rel[0][0]
            if elastic:
                tick = (t // window + 1) * window
                if tick < nxt:
                    nxt = tick
            if nxt > MAX_STEPS:
                raise RuntimeError(f"episode did not finish within {MAX_STEPS} steps")
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

    def _request(self, job: int, batch: int, c: int, req_time: int, t: int) -> None:
        """Execution `batch` of `job` asks cluster `c` for its executors (never more than the whole cluster)."""
        executors = self._counts_on[job][self._slots[job][batch]]
        normal = self._normal[c]
        self._queues[c].append((job, batch, executors if executors < normal else normal, req_time, t))
        if c not in self._dirty:
            self._dirty.append(c)

    def _complete(self, t: int) -> None:
        comp = self._completions
        busy = self._busy
        dirty = self._dirty
        run, std, dl = self._run, self._std, self._dl
        ratio_delay, ratio_std = self._ratio_delay, self._ratio_std
        execs = self._execs
        touch, since, stale = self._touch, self._since, self._stale
        execution_log = self.execution_log
        heappop = heapq.heappop
        while comp and comp[0][0] <= t:
            _, _, c, job, batch, executors, req = heappop(comp)
            if since[c] < t:
                touch(c, t)
            else:
                stale[c] = True  # what _touch does when the steps before t are already logged
            busy[c] -= executors
            if c not in dirty:
                dirty.append(c)
            ar = t - req
            ratio_delay[job].append(ar / run[job][c])
            ratio_std[job].append(ar / std[job])
            deadline = dl[job][c]
            missed = bool(deadline and ar > deadline)
            if missed:
                self._missed[c] += 1
                self._job_missed[job] += 1
                self.events.append(DeadlineMissed(self._job_ids[job], self.cluster_ids[c], timestamp_ms=t))
            if execution_log is not None:
                execution_log.append((t, c, job, batch, req, t - run[job][c], missed))
            batch += 1
            if batch < execs[job]:
                release = self._arrival[job] + batch * self._period[job]
                if release <= t:
                    self._request(job, batch, c, t, t)
                else:
                    self._seq += 1
                    heapq.heappush(self._releases, (release, self._seq, job, batch))
            else:
                self._finish(job, c, t)

    def _release(self, t: int) -> None:
        rel = self._releases
        cluster_of = self._cluster_of
        while rel and rel[0][0] <= t:
            _, _, job, batch = heapq.heappop(rel)
            self._request(job, batch, cluster_of[job], t, t)

    def _schedule_dirty(self, t: int) -> None:
        """Run the local scheduler of every cluster whose queue or free executors changed at step t."""
        dirty = self._dirty
        queues = self._queues
        cap, busy = self._cap, self._busy
        comp = self._completions
        run = self._run
        fifo = self._fifo
        seq = self._seq
        heappush = heapq.heappush
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
                    seq += 1
                    heappush(comp, (t + run[job][c], seq, c, job, batch, executors, req))
            else:
                # halted requests (queued at earlier steps) first, then this step's; each in job arrival order
                if len(queue) > 1:
                    queue.sort(key=lambda r: (r[4] >= t, r[0]))
                keep = []
                for r in queue:
                    if r[2] <= free:
                        free -= r[2]
                        started += r[2]
                        seq += 1
                        heappush(comp, (t + run[r[0]][c], seq, c, r[0], r[1], r[2], r[3]))
                    else:
                        keep.append(r)
                queues[c] = keep
            if started:
                self._touch(c, t)
                busy[c] += started
        self._seq = seq
        dirty.clear()
