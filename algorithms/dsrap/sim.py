"""The DSRAP simulator (DSRAP): cluster managers allocate and forward tasks, one step at a time.

Each step, in this order:
  1. tasks whose service time is over finish and free their node's CPU and network;
  2. tasks in transit whose transfer time is over join the receiving manager's task set; tasks from outside
     join the entry clusters' sets (the whole step's arrivals are drawn at reset, so every approach sees the same
     workload for a seed);
  3. tasks that can no longer be allocated in time are abandoned (counted per type);
  4. every manager that holds tasks gets one decision (`decide(RouteObservation) -> RouteDecision`, the engine's
     Route call): which of its tasks to allocate on which of its nodes, and to which neighbour to forward which of
     the others (at most `transfer_limit`); the rest stay. Managers decide in cluster order on this step's state;
     what one forwards arrives `delay` steps later, so the order does not change the outcome;
  5. the step's utility rate (sum of the utility rates of running tasks), CPU and network utilization are logged.

The simulator re-checks every decision (a task allocated only where it fits, forwarded only to a neighbour, within
the transfer limit) as the YARN plugin re-validates the engine's answers; what does not hold is ignored and
counted in `rejected`.

In centralized mode there is one manager holding all nodes of all clusters, every task arrives at it directly,
and nothing is forwarded (the paper's "centralized allocation").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from algorithms.dsrap.config import TASK_TYPES, DsrapConfig
from policy_engine.types import ManagerView, RouteDecision, RouteObservation

_EMPTY_I = np.zeros(0, dtype=np.int64)


@dataclass
class EpisodeResult:
    utility_rate: float
    cpu: float
    network: float
    hops: float
    abandoned: dict[str, int]
    allocated: dict[str, int]
    curve: list[float]                  # utility rate averaged over each `curve_every` steps
    rejected: int = 0                   # decision parts the simulator refused (should stay 0 behind the engine)
    extra: dict = field(default_factory=dict)

    def metrics(self) -> dict[str, float]:
        out = {"utility_rate": self.utility_rate, "cpu": self.cpu, "network": self.network, "hops": self.hops}
        for name in TASK_TYPES:
            out[f"abandoned_{name.replace('-', '_')}"] = float(self.abandoned[name])
        out["abandoned_total"] = float(sum(self.abandoned.values()))
        return out


class Network:
    """The fixed part: nodes, their clusters and capacities, links and transfer times."""

    def __init__(self, config: DsrapConfig):
        self.config = config
        self.cluster_ids = sorted(config.nodes)
        counts = [config.nodes[c] for c in self.cluster_ids]
        rng = np.random.default_rng(config.topology_seed)
        lo, hi = config.capacity_range
        n = sum(counts)
        self.cpu_capacity = rng.integers(lo, hi + 1, size=n).astype(np.float64)
        self.net_capacity = rng.integers(lo, hi + 1, size=n).astype(np.float64)
        bounds = np.concatenate([[0], np.cumsum(counts)])
        self.node_slice = {c: slice(int(bounds[i]), int(bounds[i + 1])) for i, c in enumerate(self.cluster_ids)}
        self.node_cluster = np.repeat(np.arange(len(counts)), counts)
        nbrs: dict[int, list[int]] = {c: [] for c in self.cluster_ids}
        for a, b in config.links:
            nbrs[a].append(b)
            nbrs[b].append(a)
        self.neighbors = {c: np.asarray(sorted(v), dtype=np.int64) for c, v in nbrs.items()}
        self.delays = {c: np.full(len(v), config.delay, dtype=np.int64) for c, v in self.neighbors.items()}
        self.n_nodes = n


class DsrapSim:
    def __init__(self, config: DsrapConfig, centralized: bool = False, tag: str = "dsrap"):
        self.config = config
        self.net = Network(config)
        self.centralized = centralized
        self.tag = tag
        # managers: cluster ids, or [0] for the one central manager
        self.managers = [0] if centralized else list(self.net.cluster_ids)
        if centralized:
            self._slice = {0: slice(0, self.net.n_nodes)}
            self._neighbors = {0: _EMPTY_I}
            self._delays = {0: _EMPTY_I}
        else:
            self._slice = self.net.node_slice
            self._neighbors = self.net.neighbors
            self._delays = self.net.delays
        self.t = 0

    # ------------------------------------------------------------ workload

    def _draw_workload(self, seed: int) -> None:
        cfg = self.config
        rng = np.random.default_rng(seed)
        rates = cfg.arrival_rates
        entries = sorted(rates)
        lam = np.stack([rates[c] for c in entries])                       # (entries, types)
        counts = rng.poisson(lam, size=(cfg.steps, *lam.shape))          # (steps, entries, types)
        flat = counts.reshape(-1)
        n = int(flat.sum())
        types = np.tile(np.arange(lam.shape[1]), cfg.steps * len(entries))
        ttype = np.repeat(types, flat)
        feats = np.asarray(cfg.type_features, dtype=np.float64)
        self.ttype = ttype.astype(np.int64)
        self.cpu = np.maximum(1, rng.poisson(feats[ttype, 0])).astype(np.float64)
        self.netd = np.maximum(1, rng.poisson(feats[ttype, 1])).astype(np.float64)
        self.util = rng.poisson(feats[ttype, 2]).astype(np.float64)
        self.service = np.maximum(1, np.rint(rng.exponential(feats[ttype, 3]))).astype(np.int64)
        per_step_entry = counts.sum(axis=2)                               # (steps, entries)
        step_of = np.repeat(np.arange(cfg.steps), per_step_entry.sum(axis=1))
        self.deadline = step_of + cfg.max_wait
        self.hops = np.zeros(n, dtype=np.int64)
        # task ids arriving at each (step, entry): contiguous ranges
        ends = np.cumsum(per_step_entry.reshape(-1))
        starts = ends - per_step_entry.reshape(-1)
        self._arrival_ranges = (starts.reshape(cfg.steps, len(entries)), ends.reshape(cfg.steps, len(entries)))
        self._entries = entries
        self.n_tasks = n

    # ------------------------------------------------------------ episode

    def reset(self, seed: int) -> None:
        cfg = self.config
        self.seed = seed
        self._draw_workload(seed)
        self.cpu_free = self.net.cpu_capacity.copy()
        self.net_free = self.net.net_capacity.copy()
        self.queue = {m: _EMPTY_I for m in self.managers}
        self.transit: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}  # step -> [(destinations, tasks)]
        self.finishing: dict[int, tuple[list[int], list[int]]] = {}   # step -> (nodes, task ids)
        self.running_util = 0.0
        self.cluster_util = np.zeros(len(self.net.cluster_ids))     # utility rate running per cluster
        self.util_log = np.zeros(cfg.steps)
        self.cpu_log = np.zeros(cfg.steps)
        self.net_log = np.zeros(cfg.steps)
        n_types = len(cfg.type_features)
        self.abandoned = np.zeros(n_types, dtype=np.int64)      # in the window
        self.allocated = np.zeros(n_types, dtype=np.int64)      # in the window
        self.abandoned_all = np.zeros(n_types, dtype=np.int64)
        self.allocated_all = np.zeros(n_types, dtype=np.int64)
        self.hops_sum = 0
        self.rejected = 0
        self.step_utility = {m: 0.0 for m in self.managers}   # utility rate started by each manager this step
        self.t = 0
        self._cpu_total = float(self.net.cpu_capacity.sum())
        self._net_total = float(self.net.net_capacity.sum())

    @property
    def done(self) -> bool:
        return self.t >= self.config.steps

    def _in_window(self) -> bool:
        return self.t >= self.config.steps - self.config.window

    def _begin_step(self) -> None:
        t = self.t
        done = self.finishing.pop(t, None)
        if done:
            nodes = np.asarray(done[0], dtype=np.int64)
            tids = np.asarray(done[1], dtype=np.int64)
            np.add.at(self.cpu_free, nodes, self.cpu[tids])
            np.add.at(self.net_free, nodes, self.netd[tids])
            u = self.util[tids]
            self.running_util -= float(u.sum())
            np.subtract.at(self.cluster_util, self.net.node_cluster[nodes], u)
        arrivals: dict[int, list[np.ndarray]] = {}
        moving = self.transit.pop(t, None)
        if moving:
            dest = np.concatenate([d for d, _ in moving])
            tids = np.concatenate([x for _, x in moving])
            for m in np.unique(dest).tolist():
                arrivals[m] = [tids[dest == m]]
        starts, ends = self._arrival_ranges
        for k, c in enumerate(self._entries):
            a, b = starts[t, k], ends[t, k]
            if b > a:
                arrivals.setdefault(0 if self.centralized else c, []).append(np.arange(a, b, dtype=np.int64))
        window = self._in_window()
        n_types = len(self.abandoned)
        for m in self.managers:
            q = self.queue[m]
            if m in arrivals:
                q = np.concatenate([q, *arrivals[m]])
            if q.size:
                late = self.deadline[q] < t
                if late.any():
                    gone = np.bincount(self.ttype[q[late]], minlength=n_types)
                    self.abandoned_all += gone
                    if window:
                        self.abandoned += gone
                    q = q[~late]
            self.queue[m] = q
            self.step_utility[m] = 0.0

    def observation(self, m: int) -> RouteObservation:
        q = self.queue[m]
        sl = self._slice[m]
        view = ManagerView(
            cluster_id=m, cpu_free=self.cpu_free[sl].copy(), net_free=self.net_free[sl].copy(),
            cpu_capacity=self.net.cpu_capacity[sl], net_capacity=self.net.net_capacity[sl],
            neighbors=self._neighbors[m], delays=self._delays[m], task_id=q, task_type=self.ttype[q],
            task_cpu=self.cpu[q], task_net=self.netd[q], task_utility=self.util[q],
            task_wait=self.deadline[q] - self.t, task_hops=self.hops[q], transfer_limit=self.config.transfer_limit,
        )
        return RouteObservation(jobs=[], clusters=[], time=float(self.t),
                                request_id=f"{self.tag}:{self.seed}:{self.t}:{m}", manager=view)

    def apply(self, m: int, decision: RouteDecision) -> None:
        """Carry out one manager's decision, re-checking it; what does not hold is ignored and counted."""
        q = self.queue[m]
        if q.size == 0:
            return
        node_of = decision.task_node if decision.task_node is not None else np.full(q.size, -1)
        next_of = decision.task_next if decision.task_next is not None else np.full(q.size, -1)
        if len(node_of) != q.size or len(next_of) != q.size:
            self.rejected += q.size
            return
        sl = self._slice[m]
        base, n_local = sl.start, sl.stop - sl.start
        t = self.t
        keep = np.ones(q.size, dtype=bool)
        started_nodes, started_tids = [], []
        window = self._in_window()
        alloc = np.flatnonzero(node_of >= 0)
        if alloc.size and node_of[alloc].max() < n_local:
            g = base + node_of[alloc]
            tids = q[alloc]
            need_c = np.bincount(g - base, weights=self.cpu[tids], minlength=n_local)
            need_n = np.bincount(g - base, weights=self.netd[tids], minlength=n_local)
            if (need_c <= self.cpu_free[sl]).all() and (need_n <= self.net_free[sl]).all():
                self.cpu_free[sl] -= need_c           # all fit at once (the usual case): no per-task loop
                self.net_free[sl] -= need_n
                keep[alloc] = False
                started_nodes, started_tids = g.tolist(), tids.tolist()
                alloc = alloc[:0]
        for i in alloc:
            tid = int(q[i])
            node = int(node_of[i])
            if node >= n_local:
                self.rejected += 1
                continue
            g = base + node
            c, n = self.cpu[tid], self.netd[tid]
            if self.cpu_free[g] < c or self.net_free[g] < n:
                self.rejected += 1
                continue
            self.cpu_free[g] -= c
            self.net_free[g] -= n
            keep[i] = False
            started_nodes.append(g)
            started_tids.append(tid)
        if started_tids:
            tids = np.asarray(started_tids, dtype=np.int64)
            nodes = np.asarray(started_nodes, dtype=np.int64)
            u = self.util[tids]
            self.running_util += float(u.sum())
            np.add.at(self.cluster_util, self.net.node_cluster[nodes], u)
            self.step_utility[m] += float(u.sum())
            types = np.bincount(self.ttype[tids], minlength=len(self.allocated))
            self.allocated_all += types
            if window:
                self.allocated += types
                self.hops_sum += int(self.hops[tids].sum())
            fin = self.finishing
            for node, tid, end in zip(started_nodes, started_tids, (t + self.service[tids]).tolist()):
                slot = fin.get(end)
                if slot is None:
                    slot = fin[end] = ([], [])
                slot[0].append(node)
                slot[1].append(tid)
        fwd = np.flatnonzero((next_of >= 0) & keep)
        if fwd.size:
            nbrs, delays = self._neighbors[m], self._delays[m]
            limit = self.config.transfer_limit
            if fwd.size > limit:
                self.rejected += fwd.size - limit
                fwd = fwd[:limit]
            pos = np.searchsorted(nbrs, next_of[fwd]) if nbrs.size else np.zeros(fwd.size, dtype=np.int64)
            ok = (pos < nbrs.size) & (nbrs[np.minimum(pos, max(nbrs.size - 1, 0))] == next_of[fwd]) if nbrs.size \
                else np.zeros(fwd.size, dtype=bool)
            self.rejected += int((~ok).sum())
            fwd, pos = fwd[ok], pos[ok]
            tids = q[fwd]
            self.hops[tids] += 1
            keep[fwd] = False
            arrive = t + delays[pos]
            for step in np.unique(arrive).tolist():   # one transfer time on every link by default: one group
                sel = arrive == step
                self.transit.setdefault(step, []).append((nbrs[pos[sel]], tids[sel]))
        self.queue[m] = q[keep]

    def _end_step(self) -> None:
        t = self.t
        self.util_log[t] = self.running_util
        self.cpu_log[t] = 1.0 - self.cpu_free.sum() / self._cpu_total
        self.net_log[t] = 1.0 - self.net_free.sum() / self._net_total
        self.t += 1

    def step(self, decide: Callable[[RouteObservation], RouteDecision]) -> None:
        """One whole step: every manager holding tasks gets one decision from `decide`."""
        self._begin_step()
        for m in self.managers:
            if self.queue[m].size:
                self.apply(m, decide(self.observation(m)))
        self._end_step()

    def result(self) -> EpisodeResult:
        cfg = self.config
        w = slice(cfg.steps - cfg.window, cfg.steps)
        allocated = int(self.allocated.sum())
        every = cfg.curve_every
        n = cfg.steps // every
        curve = self.util_log[: n * every].reshape(n, every).mean(axis=1).tolist() if n else []
        return EpisodeResult(
            utility_rate=float(self.util_log[w].mean()), cpu=float(self.cpu_log[w].mean()),
            network=float(self.net_log[w].mean()), hops=self.hops_sum / allocated if allocated else 0.0,
            abandoned={name: int(v) for name, v in zip(TASK_TYPES, self.abandoned)},
            allocated={name: int(v) for name, v in zip(TASK_TYPES, self.allocated)},
            curve=curve, rejected=self.rejected,
        )
