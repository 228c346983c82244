"""Scenario family `trace`: a user's own workload trace on the node-heartbeat emulator (emulator.yarn).

    emulator run --scenario trace --param format=sls|synth|rumen --param path=FILE [--param nodes=NODES.json] ...

The trace (emulator.yarn.traces) gives the jobs, their submission times, their map and reduce tasks with
durations and, for maps, the hosts holding their input (SLS container hosts, Rumen preferred locations); a nodes
file or the trace's hosts give the cluster. The ResourceManager, ApplicationMasters, heartbeats, HDFS replicas and
cache are emulator.yarn.cluster's: every heartbeat with placeable work is one Schedule call, every container start
and finish and job end one Report event. Parameters:

  path            trace file (required)
  format          sls, synth or rumen (required)
  nodes           SLS nodes file (racks, optional memory_mb / vcores per node)        default: the trace's hosts
  node_memory_mb  memory of a node the nodes file does not size                        default 8192
  node_vcores     vcores of such a node                                                default 8
  block_mb        input block size: a map reads one block                              default 128
  cache_gb        centralized cache over the maps' input blocks                        default 0
  replication     replicas per input block (hinted hosts first, then HDFS placement)   default 3
  map_memory_mb   map container memory (tasks that name their own use the largest)     default 1024
  reduce_memory_mb                                                                     default 1024
  app             read-rate profile scaling a map's trace (disk-local) duration at
                  other locality levels: wordcount, sort, terasort, ...                default sort
  heartbeat_ms, am_heartbeat_ms, slowstart                                            as locality-*

Metrics: those of the locality scenarios.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from emulator.drivers import Driver
from emulator.scenario import Scenario, register_scenario, reject_unknown_params
from emulator.yarn.cluster import ClusterConfig, WorkloadConfig, YarnSimulation
from emulator.yarn.hdfs import GB, MB, InputFile, Topology, fill_cache, place_replicas
from emulator.yarn.timing import TimeModel
from emulator.yarn.traces import FORMATS, TraceError, TraceWorkload, read_trace
from emulator.yarn.workloads import APPS, map_runtime_s
from policy_engine.features.locality import NUM_STATES, ReadLocality
from policy_engine.policy import SCHEDULE
from policy_engine.types import BlockInfo, Resource

PARAMS = ("path", "format", "nodes", "node_memory_mb", "node_vcores", "block_mb", "cache_gb", "replication",
          "map_memory_mb", "reduce_memory_mb", "app", "heartbeat_ms", "am_heartbeat_ms", "slowstart")


class TraceSimulation(YarnSimulation):
    """YarnSimulation whose jobs, tasks, durations and cluster come from a trace instead of HiBench profiles."""

    def __init__(self, trace: TraceWorkload, workload: WorkloadConfig, seed: int, cluster: ClusterConfig,
                 topology: Topology, node_memory: np.ndarray, node_vcores: np.ndarray,
                 max_idle_heartbeats: int = 50_000):
        self.cluster_cfg = cluster
        # traces carry their own durations: the default (uncalibrated) time model, no shaped transfers
        self.times = TimeModel()
        self._calibrated = False
        self._links = None
        self.workload = workload
        self.seed = int(seed)
        self.app = workload.profile
        self.topology = topo = topology
        n = topo.num_nodes
        root = np.random.SeedSequence(self.seed)
        hdfs_rng, _, phase_rng = (np.random.default_rng(s) for s in root.spawn(3))
        self._block_bytes = block_bytes = workload.block_mb * MB
        self._cache_per_node = int(workload.cache_gb * GB / n)
        self.hosts = topo.hosts
        self.node_ids = tuple(f"{h}:8041" for h in topo.hosts)
        self.node_racks = tuple(topo.racks[r] for r in topo.rack_of)
        self.total_mem = np.asarray(node_memory, dtype=np.int64)
        self.total_vcores = np.asarray(node_vcores, dtype=np.int64)
        self.free_mem = self.total_mem.copy()
        self.free_vcores = self.total_vcores.copy()
        self.running = [[] for _ in range(n)]
        self.interval = cluster.heartbeat_ms
        phases = phase_rng.integers(0, self.interval, size=n)
        self._order = np.argsort(phases, kind="stable")
        self._phases = phases
        self._beat, self._slot, self.node, self.now = 0, -1, -1, 0
        self._cluster_ts = 1_700_000_000_000 + self.seed % 1_000_000_000
        self.jobs = []
        self._apps = 0
        index = {h: i for i, h in enumerate(topo.hosts)}
        t0 = min(j.submit_ms for j in trace.jobs)
        dl_ms = float(map_runtime_s(self.app, block_bytes, int(ReadLocality.DL))) * 1000
        self._queue = []
        inputs = []
        for k, tj in enumerate(trace.jobs):
            data = self._data(self._trace_input(hdfs_rng, tj, index, f"{tj.job_id}_in"))
            inputs.append(data.input)
            submit = tj.submit_ms - t0
            job = self._new_job(k, 0, self.app, data, submit, submit)
            job.num_maps = len(tj.maps)
            job.pending = np.ones(job.num_maps, dtype=bool)
            # a map read disk-local takes its trace duration; other levels scale by the read-rate model
            job.map_noise = np.array([t.duration_ms / dl_ms for t in tj.maps]) if tj.maps else np.ones(0)
            job.num_reduces = len(tj.reduces)
            durations = np.array([t.duration_ms for t in tj.reduces], float)
            job.reduce_ms = float(durations.mean()) if durations.size else 1.0
            job.reduce_noise = durations / job.reduce_ms if durations.size else np.ones(1)
            job.map_expected_ms = int(np.mean([t.duration_ms for t in tj.maps])) if tj.maps else 0
            self._queue.append(job)
        self._queue.sort(key=lambda jb: jb.submit_ms)
        self._inputs = inputs
        self.input = inputs[0]
        self.state_table = self.jobs[0].data.state_table
        self._next_submit = 0
        self.expected_maps = sum(len(tj.maps) for tj in trace.jobs)
        self.unfinished = len(trace.jobs)
        self._by_ask, self._events = {}, []
        self._containers = self._requests = self._idle = 0
        self.max_idle_heartbeats = max_idle_heartbeats
        self.map_states = np.zeros(NUM_STATES, dtype=np.int64)
        self.map_runtime_ms_total = 0
        self.cluster_total = Resource(int(self.total_mem.sum()), int(self.total_vcores.sum()))

    def _trace_input(self, rng: np.random.Generator, tj, index: dict[str, int], name: str) -> InputFile:
        """One block per map: its hinted hosts first, then replicas placed as HDFS does up to `replication`."""
        topo = self.topology
        r = min(self.workload.replication, topo.num_nodes)
        b = len(tj.maps)
        lengths = np.full(b, self._block_bytes, dtype=np.int64)
        placed = place_replicas(rng, topo, b, r) if b else np.zeros((0, r), np.int64)
        replicas = np.empty((b, r), dtype=np.int64)
        for i, t in enumerate(tj.maps):
            chosen = list(dict.fromkeys(index[h] for h in t.hosts))[:r]
            for h in placed[i]:
                if len(chosen) >= r:
                    break
                if int(h) not in chosen:
                    chosen.append(int(h))
            for h in range(topo.num_nodes):  # placement collided with the hints: any unused node
                if len(chosen) >= r:
                    break
                if h not in chosen:
                    chosen.append(h)
            replicas[i] = chosen
        cached = fill_cache(rng, replicas, lengths, self._cache_per_node, topo.num_nodes)
        infos = tuple(BlockInfo(block_id=f"{name}_blk_{i:05d}", length=int(lengths[i]),
                                hosts=tuple(topo.hosts[h] for h in replicas[i]),
                                cached_hosts=(topo.hosts[int(cached[i])],) if cached[i] >= 0 else (),
                                racks=tuple(topo.racks[topo.rack_of[h]] for h in replicas[i])) for i in range(b))
        return InputFile(lengths, replicas, cached, infos)

    def metrics(self) -> dict[str, float]:
        out = super().metrics()
        blocks = sum(i.num_blocks for i in self._inputs)
        out["cached_input"] = (sum(float((i.cached >= 0).sum()) for i in self._inputs) / blocks) if blocks else 0.0
        return out


class TraceScenario(Scenario):
    family = "trace"
    needs = SCHEDULE
    metrics = ("local_task_rate", "cache_locality", "data_locality", "rack_locality", "off_rack", "job_time_s",
               "makespan_s")
    default_episodes = 1
    default_policies = ("fifo", "delay", "acl")

    def __init__(self, path: str | None = None, format: str | None = None, nodes: str | None = None,  # noqa: A002
                 node_memory_mb: int = 8192, node_vcores: int = 8, block_mb: int = 128, cache_gb: float = 0.0,
                 replication: int = 3, map_memory_mb: int | None = None, reduce_memory_mb: int | None = None,
                 app: str = "sort", heartbeat_ms: int = 1000, am_heartbeat_ms: int = 1000, slowstart: float = 1.0,
                 **unknown: Any):
        self.name = "trace"
        reject_unknown_params(self.name, unknown, PARAMS)
        if path is None or format is None:
            raise ValueError("needs --param path=FILE and --param format=" + "|".join(FORMATS))
        if format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
        for key, v in (("node_memory_mb", node_memory_mb), ("node_vcores", node_vcores),
                       ("heartbeat_ms", heartbeat_ms)):
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"{key} must be a positive integer, not {v!r}")
        if app not in APPS:
            raise ValueError(f"app must be one of {', '.join(sorted(APPS))}, not {app!r}")
        self.path, self.format, self.nodes = str(path), format, (str(nodes) if nodes is not None else None)
        self.node_memory_mb, self.node_vcores = node_memory_mb, node_vcores
        self.cluster = ClusterConfig(heartbeat_ms=int(heartbeat_ms))
        # Read now (SYNTH with seed 0) so a bad file is reported before any episode runs.
        first = read_trace(self.path, self.format, 0, self.nodes)
        mem = [t.memory_mb for j in first.jobs for t in j.maps if t.memory_mb]
        rmem = [t.memory_mb for j in first.jobs for t in j.reduces if t.memory_mb]
        self.workload = WorkloadConfig(
            app=app, maps=1, block_mb=int(block_mb), cache_gb=float(cache_gb), jobs=1,
            map_memory_mb=int(map_memory_mb or (max(mem) if mem else 1024)),
            reduce_memory_mb=int(reduce_memory_mb or (max(rmem) if rmem else 1024)),
            slowstart=float(slowstart), am_heartbeat_ms=int(am_heartbeat_ms), replication=int(replication))
        self._first = first
        self._check_fits(first)

    def _cluster(self, trace: TraceWorkload):
        nodes = list(trace.nodes)
        if not nodes:
            raise TraceError(f"trace {self.path}: names no hosts; give a nodes file (--param nodes=FILE)")
        known = {n.host for n in nodes}
        for job in trace.jobs:  # hosts a trace names but its nodes do not (SLS/Rumen without a nodes file)
            for t in job.maps:
                for h in t.hosts:
                    if h not in known:
                        raise TraceError(f"trace {self.path}: job {job.job_id} names host {h!r} of no rack")
        if len(nodes) < 2:
            raise TraceError(f"trace {self.path}: the cluster needs at least 2 nodes, the trace names {len(nodes)}; "
                             "give a nodes file (--param nodes=FILE)")
        racks = tuple(dict.fromkeys(n.rack for n in nodes))
        topo = Topology(tuple(n.host for n in nodes), racks, np.array([racks.index(n.rack) for n in nodes]))
        mem = np.array([n.memory_mb or self.node_memory_mb for n in nodes], np.int64)
        vc = np.array([n.vcores or self.node_vcores for n in nodes], np.int64)
        return topo, mem, vc

    def _check_fits(self, trace: TraceWorkload) -> None:
        _, mem, _ = self._cluster(trace)
        biggest = max(self.workload.map_memory_mb, self.workload.reduce_memory_mb)
        if biggest > mem.max():
            raise ValueError(f"containers of {biggest} MB fit on no node (largest {mem.max()} MB); "
                             "set node_memory_mb or the nodes file's memory_mb")

    def trace(self, seed: int) -> TraceWorkload:
        return self._first if self.format != "synth" else read_trace(self.path, "synth", seed, self.nodes)

    def simulation(self, seed: int) -> TraceSimulation:
        trace = self.trace(seed)
        topo, mem, vc = self._cluster(trace)
        return TraceSimulation(trace, self.workload, seed, self.cluster, topo, mem, vc)

    def run_episode(self, driver: Driver, seed: int) -> dict[str, float]:
        sim = self.simulation(seed)
        while sim.advance():
            events = sim.take_events()
            if events:
                driver.report(events)
            sim.apply(driver.schedule(sim.observe()))
        events = sim.take_events()
        if events:
            driver.report(events)
        return sim.metrics()

    def describe(self) -> dict[str, Any]:
        t = self._first
        return {"path": self.path, "format": self.format, "nodes": self.nodes, "jobs": len(t.jobs),
                "maps": sum(len(j.maps) for j in t.jobs), "reduces": sum(len(j.reduces) for j in t.jobs),
                "map_memory_mb": self.workload.map_memory_mb, "reduce_memory_mb": self.workload.reduce_memory_mb,
                "block_mb": self.workload.block_mb, "cache_gb": self.workload.cache_gb, "app": self.workload.app}


register_scenario(
    "trace", "a workload trace (SLS JSON, SYNTH description or Rumen job history) on the node-heartbeat emulator; "
             "params path, format=sls|synth|rumen, nodes", TraceScenario,
    family=TraceScenario.family, needs=TraceScenario.needs)
