"""An emulated YARN cluster running MapReduce jobs, driven one node heartbeat at a time.

What is modelled, and how it maps onto YARN:
  * NodeManagers on the HDFS DataNodes (emulator.yarn.hdfs.Topology), each with memory and vcores, heartbeating
    every `heartbeat_ms` with a fixed random phase. A container that ends is released, and reported, on its
    node's next heartbeat (as the NodeManager reports completed containers).
  * One ApplicationMaster per job, asking as MapReduce's RMContainerAllocator does: every pending map task adds
    one container to the ask of each host holding a replica of its block, one to each of those hosts' racks
    (once per rack) and one to ANY, all at priority 20; reduces ask ANY at priority 10 once `slowstart` of the
    maps are done. The AM sends its asks on its own allocate heartbeat (`am_heartbeat_ms`, MapReduce's
    yarn.app.mapreduce.am.scheduler.heartbeat.interval-ms); in between, the ResourceManager's copy is only
    decremented per allocation as AppSchedulingInfo does (node-local: host, rack and ANY; rack-local: rack and
    ANY; off-switch: ANY). So the host counts of a map's other replica hosts stay stale until the next allocate
    call, and a container the scheduler placed "node-local" can find no local map left: a real source of lost
    locality in YARN. am_heartbeat_ms=0 makes the AM update its asks at once.
  * When a container lands on a node, the AM runs there its pending map whose block is best placed for that node
    (cached, disk, cached-in-rack, disk-in-rack, anywhere; ties by task number, MapReduce's request order).
    `am_cache_aware=False` gives stock MapReduce, which does not know about the cache (cache-local only by luck).
  * Heartbeats on which no pending ask fits the node are not sent to the policy: nothing could be placed, and
    the engine counts scheduling opportunities only for asks that fit, so the counts are the same.

`YarnSimulation` is the one simulator behind the locality scenarios (emulator.scenarios.locality) and the
gymnasium environment (emulator.envs.locality): `advance()` moves to the next heartbeat that needs a decision,
`observe()` builds its ScheduleObservation, `apply()` starts the containers of a decision, `take_events()` returns
the Report events since the last call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from emulator.yarn.hdfs import GB, MB, InputFile, Topology, make_input
from emulator.yarn.timing import SharedLink, TimeModel
from emulator.yarn.workloads import APPS, RUNTIME_NOISE_SIGMA, AppProfile, map_runtime_s, profile, reduce_runtime_s
from policy_engine.features.locality import NUM_STATES, TO_PROTOCOL, ReadLocality
from policy_engine.types import (
    ANY,
    Ask,
    ClusterSummary,
    Container,
    ContainerFinished,
    ContainerStarted,
    Event,
    JobCategory,
    JobFinished,
    JobMetadata,
    Locality,
    LocalityRequest,
    Node,
    Resource,
    ScheduleDecision,
    ScheduleObservation,
)

MAP_PRIORITY = 20     # MapReduce's RMContainerAllocator.PRIORITY_MAP
BLOCK_MB_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
REDUCE_PRIORITY = 10  # PRIORITY_REDUCE


class SimulationError(RuntimeError):
    """The simulation cannot go on: an invalid decision, or a policy that never places pending work."""


@dataclass(frozen=True)
class ClusterConfig:
    """CLQLMRS's cluster: six DataNodes, odd ones in /rack1 and even ones in /rack2, with 4, 6 and 8 GB."""

    node_memory_mb: tuple[int, ...] = (4096, 6144, 8192, 4096, 6144, 8192)
    node_vcores: int = 8
    num_racks: int = 2
    heartbeat_ms: int = 1000

    def __post_init__(self):
        if len(self.node_memory_mb) < 2 or min(self.node_memory_mb) <= 0:
            raise ValueError(f"need at least 2 nodes with positive memory, got {self.node_memory_mb}")
        if self.node_vcores <= 0 or self.heartbeat_ms <= 0:
            raise ValueError("node_vcores and heartbeat_ms must be positive")
        if not 1 <= self.num_racks <= len(self.node_memory_mb):
            raise ValueError(f"num_racks must be between 1 and the node count, got {self.num_racks}")


@dataclass(frozen=True)
class WorkloadConfig:
    """Jobs of one HiBench application, all reading one input file (as repeated HiBench runs do).

    The default is a short HiBench session: four runs of a 10-map job over the same input, 5 s apart.

    Input: `maps` blocks of `block_mb` each, or, when `size` (tiny/small/large) is given, HiBench's input size for
    the application split into blocks of `block_mb` (maps = ceil(size / block)). `cache_gb` is the cluster's total
    centralized cache, split evenly into per-DataNode limits.
    """

    app: str = "wordcount"
    maps: int = 10
    size: str | None = None
    block_mb: int = 128
    cache_gb: float = 2.0
    reduces: int | None = None
    jobs: int = 4
    interarrival_s: float = 5.0
    map_memory_mb: int = 1024
    reduce_memory_mb: int = 1024
    slowstart: float = 1.0
    am_cache_aware: bool = True
    am_heartbeat_ms: int = 1000
    replication: int = 3
    # MB/s cap of a read from another node (rack-local or off-rack), e.g. a worker's shaped egress; None: no cap
    remote_read_mb_s: float | None = None
    # MB/s cap of a read from a DataNode's disk (DL, DRL, NO: a replica not in its cache), e.g. a worker's
    # throttled disk (docker_cluster up --worker-disk-read-mbps); None: no cap
    disk_read_mb_s: float | None = None
    # blocks of the input per node (in host order dn1, dn2, ...): each block's first replica, for a layout
    # measured on a real cluster (real_locality's blocks_per_node); None: HDFS's placement at random
    layout: tuple[int, ...] | None = None

    def __post_init__(self):
        if self.app not in APPS:
            raise ValueError(f"unknown application {self.app!r}; known: {', '.join(sorted(APPS))}")
        if self.size is not None and not APPS[self.app].hibench_bytes:
            raise ValueError(f"no HiBench input sizes are known for {self.app}; give maps instead of size")
        if self.size is not None and self.size not in APPS[self.app].hibench_bytes:
            raise ValueError(f"unknown HiBench size {self.size!r}; known: tiny, small, large")
        if self.block_mb not in BLOCK_MB_CHOICES:
            raise ValueError(f"block_mb must be one of {', '.join(map(str, BLOCK_MB_CHOICES))} (HDFS sizes; the "
                             f"small ones for calibrated test clusters), got {self.block_mb}")
        if not 1 <= self.maps <= 10_000:
            raise ValueError(f"maps must be between 1 and 10000, got {self.maps}")
        if self.cache_gb < 0:
            raise ValueError(f"cache_gb must be >= 0, got {self.cache_gb}")
        if self.reduces is not None and not 0 <= self.reduces <= 1000:
            raise ValueError(f"reduces must be between 0 and 1000, got {self.reduces}")
        if not 1 <= self.jobs <= 1000:
            raise ValueError(f"jobs must be between 1 and 1000, got {self.jobs}")
        if self.interarrival_s < 0 or not 0.0 <= self.slowstart <= 1.0:
            raise ValueError("interarrival_s must be >= 0 and slowstart in [0, 1]")
        if self.map_memory_mb <= 0 or self.reduce_memory_mb <= 0:
            raise ValueError("container memory must be positive")
        if self.am_heartbeat_ms < 0:
            raise ValueError(f"am_heartbeat_ms must be >= 0, got {self.am_heartbeat_ms}")
        if self.remote_read_mb_s is not None and not (math.isfinite(self.remote_read_mb_s)
                                                      and self.remote_read_mb_s > 0):
            raise ValueError(f"remote_read_mb_s must be a positive number, got {self.remote_read_mb_s}")
        if self.disk_read_mb_s is not None and not (math.isfinite(self.disk_read_mb_s) and self.disk_read_mb_s > 0):
            raise ValueError(f"disk_read_mb_s must be a positive number, got {self.disk_read_mb_s}")
        if self.layout is not None:
            parts = self.layout.split(",") if isinstance(self.layout, str) else self.layout
            try:
                object.__setattr__(self, "layout", tuple(int(x) for x in parts))
            except (TypeError, ValueError):
                raise ValueError(f"layout must be block counts per node, e.g. 2,2,2,2; got {self.layout!r}") from None
            if any(x < 0 for x in self.layout) or not sum(self.layout):
                raise ValueError(f"layout must give non-negative block counts per node, got {self.layout}")

    @property
    def profile(self) -> AppProfile:
        return APPS[self.app]

    @property
    def input_bytes(self) -> int:
        if self.size is not None:
            return int(self.profile.hibench_bytes[self.size])
        return self.maps * self.block_mb * MB


class _Container:
    __slots__ = ("container_id", "job", "is_map", "task", "state", "start_ms", "end_ms", "memory_mb", "ask_id")

    def __init__(self, container_id, job, is_map, task, state, start_ms, end_ms, memory_mb, ask_id):
        self.container_id, self.job, self.is_map, self.task = container_id, job, is_map, task
        self.state, self.start_ms, self.end_ms, self.memory_mb, self.ask_id = state, start_ms, end_ms, memory_mb, ask_id


@dataclass
class _Data:
    """One input file with how each node reads each of its blocks."""

    input: InputFile
    state_table: np.ndarray                 # (nodes, blocks): CL, DL, CRL, DRL or NO
    pick_key: np.ndarray                    # what the AM minimises when it picks a map for a node


@dataclass
class _Job:
    index: int                              # the workload job (a multi-stage application's stages share it)
    stage: int
    app: AppProfile
    data: _Data
    app_id: str
    submit_ms: int
    root_submit_ms: int                     # submission of the application's first stage
    num_maps: int
    num_reduces: int
    reduce_ms: float
    pending: np.ndarray                     # (maps,) bool: map task not yet started
    map_noise: np.ndarray                   # (maps,) run-time factors
    reduce_noise: np.ndarray                # (reduces,)
    reducer_nodes: list = field(default_factory=list)
    map_output: np.ndarray | None = None    # (nodes,) map output bytes written on each node (calibrated shuffle)
    start_ms: int = 0                       # the AM's first allocate: submit + AM start-up
    map_expected_ms: int = 0                # a full block's noise-free map time, read disk-local
    am_phase_ms: int = 0                    # offset of the AM's allocate heartbeats from submission
    am_synced_ms: int = -1                  # time of the last allocate call the RM has applied
    rm_hosts: np.ndarray | None = None      # the RM's copy of the map ask: per-host counts,
    rm_racks: np.ndarray | None = None      # per-rack counts,
    rm_any: int = 0                         # and the ANY count,
    rm_blocks: tuple = ()                   # with the blocks the NameNode reported for the pending maps then
    rm_reduces: int = 0                     # the RM's count of the reduce ask
    active: bool = False
    maps_running: int = 0
    maps_done: int = 0
    reduces_started: int = 0
    reduces_running: int = 0
    reduces_done: int = 0
    finish_ms: int = -1
    version: int = 0                        # bumped whenever the pending work changes
    asks_version: int = -1
    asks: tuple = field(default_factory=tuple)

    @property
    def pending_maps(self) -> int:
        return int(self.num_maps - self.maps_running - self.maps_done)

    @property
    def pending_reduces(self) -> int:
        return self.num_reduces - self.reduces_started

    @property
    def finished(self) -> bool:
        return self.finish_ms >= 0


class YarnSimulation:
    def __init__(self, workload: WorkloadConfig, seed: int, cluster: ClusterConfig | None = None,
                 max_idle_heartbeats: int = 50_000, times: TimeModel | None = None):
        self.cluster_cfg = cluster = cluster or ClusterConfig()
        self.times = times = times or TimeModel()
        self._calibrated = not times.is_default
        self.workload = workload
        self.seed = int(seed)
        self.app = workload.profile
        self.topology = topo = Topology.odd_even(len(cluster.node_memory_mb), cluster.num_racks)
        n = topo.num_nodes
        root = np.random.SeedSequence(self.seed)
        hdfs_rng, task_rng, phase_rng = (np.random.default_rng(s) for s in root.spawn(3))

        self._block_bytes = block_bytes = workload.block_mb * MB
        self._cache_per_node = int(workload.cache_gb * GB / n)
        # The application's input, with the cache directive on it; the same for every policy given the seed.
        writers = None
        if workload.layout is not None:
            if len(workload.layout) != n:
                raise ValueError(f"layout gives {len(workload.layout)} nodes, the cluster has {n}")
            blocks = -(-workload.input_bytes // block_bytes)
            if sum(workload.layout) != blocks:
                raise ValueError(f"layout places {sum(workload.layout)} blocks, the input has {blocks}")
            writers = hdfs_rng.permutation(np.repeat(np.arange(n), workload.layout))
        primary = self._data(make_input(hdfs_rng, topo, workload.input_bytes, block_bytes, self._cache_per_node,
                                        workload.replication, name=f"hibench_{workload.app}", writers=writers))
        self.input: InputFile = primary.input
        self.state_table = primary.state_table

        # Nodes.
        rack_of = topo.rack_of
        self.hosts = topo.hosts
        self.node_ids = tuple(f"{h}:8041" for h in topo.hosts)
        self.node_racks = tuple(topo.racks[r] for r in rack_of)
        self.total_mem = np.asarray(cluster.node_memory_mb, dtype=np.int64)
        self.total_vcores = np.full(n, cluster.node_vcores, dtype=np.int64)
        self.free_mem = self.total_mem.copy()
        self.free_vcores = self.total_vcores.copy()
        self.running: list[list[_Container]] = [[] for _ in range(n)]
        self.interval = cluster.heartbeat_ms
        phases = phase_rng.integers(0, self.interval, size=n)
        self._order = np.argsort(phases, kind="stable")
        self._phases = phases
        self._beat = 0
        self._slot = -1
        self.node = -1
        self.now = 0

        # Jobs: the workload's submissions; later stages of multi-stage applications start as earlier ones end.
        # Application ids as YARN writes them: the ResourceManager's start time (one per episode) and a sequence.
        self._cluster_ts = 1_700_000_000_000 + self.seed % 1_000_000_000
        self.jobs: list[_Job] = []
        self._apps = 0
        gap = int(round(workload.interarrival_s * 1000))
        self._queue = [self._new_job(j, 0, self.app, primary, j * gap, j * gap) for j in range(workload.jobs)]
        self._next_submit = 0
        stages, maps_per_job, size = 1, primary.input.num_blocks, float(primary.input.block_bytes.sum())
        app = self.app
        while app.next_stage is not None:
            size *= app.map_output_ratio * app.output_ratio
            app = profile(app.next_stage)
            stages += 1
            maps_per_job += -(-int(max(size, 1)) // block_bytes)
        self.expected_maps = maps_per_job * workload.jobs
        self.unfinished = workload.jobs * stages
        self._by_ask: dict[str, tuple[_Job, bool]] = {}
        self._events: list[Event] = []
        self._containers = 0
        self._requests = 0
        self._idle = 0
        self.max_idle_heartbeats = max_idle_heartbeats
        self.map_states = np.zeros(NUM_STATES, dtype=np.int64)
        self.map_runtime_ms_total = 0
        self.cluster_total = Resource(int(self.total_mem.sum()), int(self.total_vcores.sum()))
        # calibrated model: ends of the remote reads in flight from each node (they share its shaped egress)
        link = workload.remote_read_mb_s
        self._links = ([SharedLink(times.link_efficiency * link) for _ in range(n)]
                       if self._calibrated and times.shaped_transfers and link is not None else None)

    def _data(self, inp: InputFile) -> _Data:
        n = self.topology.num_nodes
        rack_of = self.topology.rack_of
        on_node = (inp.replicas[None, :, :] == np.arange(n)[:, None, None]).any(axis=2)
        cached_on = inp.cached[None, :] == np.arange(n)[:, None]
        cache_rack = np.where(inp.cached >= 0, rack_of[np.maximum(inp.cached, 0)], -1)
        same_rack_cache = cache_rack[None, :] == rack_of[:, None]
        same_rack_disk = (rack_of[inp.replicas][None, :, :] == rack_of[:, None, None]).any(axis=2)
        table = np.select(
            [cached_on, on_node, same_rack_cache, same_rack_disk],
            [int(ReadLocality.CL), int(ReadLocality.DL), int(ReadLocality.CRL), int(ReadLocality.DRL)],
            default=int(ReadLocality.NO)).astype(np.int8)
        # Stock MapReduce does not know the cache: a cached replica is just a host-local one to its AM.
        key = table if self.workload.am_cache_aware else np.where(table == ReadLocality.CL, ReadLocality.DL,
                                                                   table).astype(np.int8)
        return _Data(inp, table, key)

    def _new_job(self, index: int, stage: int, app: AppProfile, data: _Data, submit_ms: int,
                 root_submit_ms: int) -> _Job:
        w = self.workload
        maps = data.input.num_blocks
        reduces = w.reduces if w.reduces is not None and stage == 0 else app.default_reduces(maps)
        rng = np.random.default_rng([self.seed, 1, index, stage])
        self._apps += 1
        job = _Job(
            index=index, stage=stage, app=app, data=data, app_id=f"application_{self._cluster_ts}_{self._apps:04d}",
            submit_ms=submit_ms, root_submit_ms=root_submit_ms, num_maps=maps, num_reduces=reduces,
            reduce_ms=reduce_runtime_s(app, float(data.input.block_bytes.sum()), reduces) * 1000,
            pending=np.ones(maps, dtype=bool), map_noise=rng.lognormal(0.0, RUNTIME_NOISE_SIGMA, size=maps),
            reduce_noise=rng.lognormal(0.0, RUNTIME_NOISE_SIGMA, size=max(reduces, 1)),
            am_phase_ms=int(rng.integers(0, max(w.am_heartbeat_ms, 1))))
        job.map_expected_ms = int(map_runtime_s(app, self._block_bytes, int(ReadLocality.DL)) * 1000)
        job.start_ms = submit_ms + (int(round(self.times.am_startup_s * 1000)) if stage == 0 else 0)
        job.map_output = np.zeros(self.topology.num_nodes)
        self.jobs.append(job)
        return job

    def _next_stage(self, job: _Job) -> None:
        """A multi-stage application's next MapReduce job, reading the output its predecessor just wrote."""
        prev = job.app
        out_bytes = int(max(float(job.data.input.block_bytes.sum()) * prev.map_output_ratio * prev.output_ratio, 1))
        rng = np.random.default_rng([self.seed, 2, job.index, job.stage])
        inp = make_input(rng, self.topology, out_bytes, self._block_bytes, 0, self.workload.replication,
                         name=f"{job.app_id}_out", writers=np.asarray(job.reducer_nodes or [0]))
        nxt = self._new_job(job.index, job.stage + 1, profile(prev.next_stage), self._data(inp), self.now,
                            job.root_submit_ms)
        nxt.active = True
        nxt.version += 1

    # ------------------------------------------------------------------ time

    def advance(self) -> bool:
        """Move to the next heartbeat on which some pending ask fits the node. False once every job finished."""
        n = len(self._order)
        while self.unfinished:
            self._slot += 1
            if self._slot == n:
                self._slot = 0
                self._beat += 1
            node = int(self._order[self._slot])
            self.node = node
            self.now = self._beat * self.interval + int(self._phases[node])
            self._release(node)
            self._submit()
            if self.placeable(node):
                if not self.running[node] and all(not r for r in self.running):
                    self._idle += 1
                    if self._idle > self.max_idle_heartbeats:
                        raise SimulationError(
                            f"no container has run for {self._idle} heartbeats while work is pending: the policy "
                            f"never places it (simulated time {self.now / 1000:.0f} s)")
                else:
                    self._idle = 0
                return True
        return False

    def _submit(self) -> None:
        jobs = self._queue
        while self._next_submit < len(jobs) and jobs[self._next_submit].start_ms <= self.now:
            job = jobs[self._next_submit]
            job.active = True
            job.version += 1
            self._next_submit += 1

    def _release(self, node: int) -> None:
        running = self.running[node]
        if not running:
            return
        now = self.now
        keep = []
        for c in running:
            if c.end_ms > now:
                keep.append(c)
                continue
            self.free_mem[node] += c.memory_mb
            self.free_vcores[node] += 1
            job = c.job
            if c.is_map:
                job.maps_running -= 1
                job.maps_done += 1
            else:
                job.reduces_running -= 1
                job.reduces_done += 1
            job.version += 1
            self._events.append(ContainerFinished(
                c.container_id, job.app_id, self.node_ids[node], c.end_ms - c.start_ms,
                locality=TO_PROTOCOL[c.state] if c.is_map else Locality.UNSPECIFIED, timestamp_ms=now))
            if job.maps_done == job.num_maps and job.reduces_done == job.num_reduces:
                job.finish_ms = now + int(round(self.times.commit_s * 1000))
                job.active = False
                self.unfinished -= 1
                self._events.append(JobFinished(job.app_id, runtime=float(job.finish_ms - job.submit_ms), succeeded=True,
                                                timestamp_ms=now))
                if job.app.next_stage is not None:
                    self._next_stage(job)
        self.running[node] = keep

    # ------------------------------------------------------------------ asks

    def _reduces_requested(self, job: _Job) -> bool:
        return job.maps_done >= math.ceil(self.workload.slowstart * job.num_maps) and job.pending_reduces > 0

    def placeable(self, node: int | None = None) -> bool:
        """Whether some ask the ResourceManager holds fits the node's unallocated resources now."""
        node = self.node if node is None else node
        if self.free_vcores[node] <= 0:
            return False
        mem = self.free_mem[node]
        w = self.workload
        for job in self.jobs:
            if not job.active:
                continue
            self._sync_am(job)
            if job.rm_any > 0 and w.map_memory_mb <= mem:
                return True
            if job.rm_reduces > 0 and w.reduce_memory_mb <= mem:
                return True
        return False

    def _am_allocate(self, job: _Job) -> None:
        """The AM's allocate call: the RM's asks become the AM's pending tasks again."""
        topo = self.topology
        pend = np.flatnonzero(job.pending)
        inp = job.data.input
        reps = inp.replicas[pend]
        job.rm_hosts = np.bincount(reps.ravel(), minlength=topo.num_nodes)
        rep_racks = topo.rack_of[reps]
        job.rm_racks = np.array([int((rep_racks == r).any(axis=1).sum()) for r in range(len(topo.racks))])
        job.rm_any = int(pend.size)
        infos = inp.infos
        job.rm_blocks = tuple(infos[i] for i in pend)
        job.rm_reduces = job.pending_reduces if self._reduces_requested(job) else 0
        job.version += 1

    def _sync_am(self, job: _Job) -> None:
        period = self.workload.am_heartbeat_ms
        if period == 0:
            if job.am_synced_ms != job.version:
                self._am_allocate(job)
                job.am_synced_ms = job.version
            return
        since = self.now - job.start_ms - job.am_phase_ms
        last = job.start_ms + job.am_phase_ms + (since // period) * period if since >= 0 else job.start_ms
        if last > job.am_synced_ms:
            self._am_allocate(job)
            job.am_synced_ms = last

    def _job_asks(self, job: _Job) -> tuple[Ask, ...]:
        self._sync_am(job)
        if job.asks_version == job.version:
            return job.asks
        w = self.workload
        asks = []
        if job.rm_any > 0:
            locality = [LocalityRequest(self.hosts[h], int(c)) for h, c in enumerate(job.rm_hosts) if c > 0]
            locality += [LocalityRequest(rack, int(c)) for rack, c in zip(self.topology.racks, job.rm_racks) if c > 0]
            locality.append(LocalityRequest(ANY, job.rm_any))
            meta = JobMetadata(category=JobCategory.REGULAR, expected_runtime_ms=job.map_expected_ms,
                               input_blocks=job.rm_blocks, tags={"application": job.app.name, "task": "map"})
            asks.append(Ask(ask_id=f"{job.app_id}/map", application_id=job.app_id, user="hibench",
                            priority=MAP_PRIORITY, resource=Resource(w.map_memory_mb, 1),
                            num_containers=job.rm_any, locality=tuple(locality), submit_time_ms=job.submit_ms,
                            job=meta))
        if job.rm_reduces > 0:
            n = job.rm_reduces
            meta = JobMetadata(category=JobCategory.REGULAR, expected_runtime_ms=int(job.reduce_ms),
                               tags={"application": job.app.name, "task": "reduce"})
            asks.append(Ask(ask_id=f"{job.app_id}/reduce", application_id=job.app_id, user="hibench",
                            priority=REDUCE_PRIORITY, resource=Resource(w.reduce_memory_mb, 1), num_containers=n,
                            locality=(LocalityRequest(ANY, n),), submit_time_ms=job.submit_ms, job=meta))
        job.asks, job.asks_version = tuple(asks), job.version
        for a in asks:
            self._by_ask[a.ask_id] = (job, a.priority == MAP_PRIORITY)
        return job.asks

    def observe(self) -> ScheduleObservation:
        """The heartbeat of the current node as the ResourceManager would forward it."""
        node = self.node
        asks: list[Ask] = []
        for job in self.jobs:
            if job.active:
                asks.extend(self._job_asks(job))
        now = self.now
        running = tuple(
            Container(c.container_id, c.job.app_id, Resource(c.memory_mb, 1), c.start_ms, max(c.end_ms - now, 0))
            for c in self.running[node])
        snapshot = Node(
            node_id=self.node_ids[node], host=self.hosts[node], rack=self.node_racks[node],
            total=Resource(int(self.total_mem[node]), int(self.total_vcores[node])),
            unallocated=Resource(int(self.free_mem[node]), int(self.free_vcores[node])),
            running=running, timestamp_ms=now)
        summary = ClusterSummary(num_nodes=len(self.hosts), num_racks=len(self.topology.racks),
                                 total=self.cluster_total,
                                 unallocated=Resource(int(self.free_mem.sum()), int(self.free_vcores.sum())))
        self._requests += 1
        return ScheduleObservation(node=snapshot, asks=asks, cluster=summary,
                                   request_id=f"{self.seed}-{self._requests}")

    # ------------------------------------------------------------------ decisions

    def apply(self, decision: ScheduleDecision) -> int:
        """Start the decision's containers on the current node; returns how many were started."""
        node = self.node
        started = 0
        for a in decision.assignments:
            entry = self._by_ask.get(a.ask_id)
            if entry is None or not entry[0].active:
                raise SimulationError(f"assignment to unknown or finished ask {a.ask_id!r}")
            job, is_map = entry
            if is_map:
                if a.count > job.rm_any:
                    raise SimulationError(f"{a.ask_id}: {a.count} containers assigned, {job.rm_any} outstanding")
                job.rm_any -= a.count
                if a.locality in (Locality.CACHE_LOCAL, Locality.NODE_LOCAL, Locality.RACK_LOCAL):
                    rack = self.topology.rack_of[node]
                    job.rm_racks[rack] = max(job.rm_racks[rack] - a.count, 0)
                    if a.locality != Locality.RACK_LOCAL:
                        job.rm_hosts[node] = max(job.rm_hosts[node] - a.count, 0)
            else:
                if a.count > job.rm_reduces:
                    raise SimulationError(f"{a.ask_id}: {a.count} containers assigned, {job.rm_reduces} outstanding")
                job.rm_reduces -= a.count
            for _ in range(a.count):
                self._start(node, job, is_map, a.ask_id)
                started += 1
        return started

    def _start(self, node: int, job: _Job, is_map: bool, ask_id: str) -> None:
        w = self.workload
        mem = w.map_memory_mb if is_map else w.reduce_memory_mb
        if mem > self.free_mem[node] or self.free_vcores[node] < 1:
            raise SimulationError(f"node {self.hosts[node]} has no room for another container of {ask_id}")
        if is_map:
            pend = np.flatnonzero(job.pending)
            if not pend.size:
                raise SimulationError(f"{ask_id}: more containers assigned than pending map tasks")
            task = int(pend[np.argmin(job.data.pick_key[node, pend])])
            state = int(job.data.state_table[node, task])
            job.pending[task] = False
            job.maps_running += 1
            flow = None
            if self._calibrated:
                runtime, flow = self._calibrated_map_s(node, job, task, state, job.map_noise[task])
            else:
                runtime = map_runtime_s(job.app, job.data.input.block_bytes[task], state,
                                        remote_read_mb_s=w.remote_read_mb_s,
                                        disk_read_mb_s=w.disk_read_mb_s) * job.map_noise[task]
            job.map_output[node] += float(job.data.input.block_bytes[task]) * job.app.map_output_ratio
            self.map_states[state] += 1
        else:
            if job.pending_reduces <= 0 or not self._reduces_requested(job):
                raise SimulationError(f"{ask_id}: more containers assigned than pending reduce tasks")
            task = job.reduces_started
            state = int(ReadLocality.NO)
            job.reduces_started += 1
            job.reduces_running += 1
            base = self._calibrated_reduce_s(node, job) if self._calibrated else job.reduce_ms / 1000.0
            runtime = base * job.reduce_noise[task]
            job.reducer_nodes.append(node)
        runtime_ms = max(int(round(float(runtime) * 1000)), 1)
        if is_map:
            self.map_runtime_ms_total += runtime_ms
        job.version += 1
        self._containers += 1
        cid = f"container_{job.app_id[12:]}_01_{self._containers:06d}"
        self.free_mem[node] -= mem
        self.free_vcores[node] -= 1
        c = _Container(cid, job, is_map, task, state, self.now, self.now + runtime_ms, mem, ask_id)
        self.running[node].append(c)
        if is_map and flow is not None:  # a read over a shaped link: its end moves with the link's other reads
            src, start_ms, mb, tail_ms = flow

            def on_end(read_end_ms, c=c, tail_ms=tail_ms):
                end = max(int(round(read_end_ms + tail_ms)), c.start_ms + 1)
                self.map_runtime_ms_total += end - c.end_ms
                c.end_ms = end

            self._links[src].add(start_ms, mb, on_end)
        self._events.append(ContainerStarted(cid, job.app_id, self.node_ids[node], ask_id,
                                             TO_PROTOCOL[state] if is_map else Locality.UNSPECIFIED,
                                             timestamp_ms=self.now))

    def _calibrated_map_s(self, node: int, job: _Job, task: int, state: int, noise: float):
        """t_map of emulator.yarn.timing: the run time (s, with the task's noise on start-up and processing) and, for
        a read over a shaped link, (source node, read start ms, MB, ms after the read) for that link."""
        t, w = self.times, self.workload
        mb = float(job.data.input.block_bytes[task]) / MB
        app = job.app
        pre = t.task_startup_s * noise
        tail = t.cpu_factor * (mb / app.map_cpu_mb_s + mb * app.map_output_ratio / t.spill_mb_s) * noise
        read_s = mb / t.read_rates(w.remote_read_mb_s, w.disk_read_mb_s)[state]
        flow = None
        if state >= int(ReadLocality.CRL) and self._links is not None:
            reps = job.data.input.replicas[task]
            near = reps[self.topology.rack_of[reps] == self.topology.rack_of[node]]
            src = int(near[0] if near.size else reps[0])
            flow = (src, self.now + pre * 1000, mb, tail * 1000)
        return pre + read_s + tail, flow

    def _calibrated_reduce_s(self, node: int, job: _Job) -> float:
        """t_red of emulator.yarn.timing (noise-free): shuffle from the nodes the maps ran on, then write."""
        t, w, app = self.times, self.workload, job.app
        reduces = max(job.num_reduces, 1)
        per_node = job.map_output / reduces / MB            # this reducer's share of each node's map output
        shuffled = float(per_node.sum())
        written = shuffled * app.output_ratio
        link = w.remote_read_mb_s
        replication = t.output_replication or app.output_replication
        if link is not None and t.shaped_transfers:
            remote = np.delete(per_node, node)
            shuffle_s = float(remote.max()) / (t.link_efficiency * link) if remote.size else 0.0
            write_rate = min(t.write_mb_s, t.link_efficiency * link) if replication >= 2 else t.write_mb_s
        else:
            shuffle_s = shuffled / t.shuffle_mb_s
            write_rate = t.write_mb_s * (3.0 / replication) ** 0.5
        return t.task_startup_s + shuffle_s + t.cpu_factor * shuffled / app.reduce_cpu_mb_s + written / write_rate

    def take_events(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    # ------------------------------------------------------------------ results

    @property
    def done(self) -> bool:
        return self.unfinished == 0

    def metrics(self) -> dict[str, float]:
        """CLQLMRS's metrics over the map tasks started so far and the jobs finished so far."""
        maps = max(int(self.map_states.sum()), 1)
        s = self.map_states / maps
        # An application's execution time runs from its first stage's submission to its last stage's end.
        finished = [j for j in self.jobs if j.finished and j.app.next_stage is None]
        job_times = [(j.finish_ms - j.root_submit_ms) / 1000.0 for j in finished]
        makespan = (max(j.finish_ms for j in finished) - min(j.submit_ms for j in self.jobs)) / 1000.0 \
            if finished else float("nan")
        return {
            "local_task_rate": float(s[ReadLocality.CL] + s[ReadLocality.DL]),
            "cache_locality": float(s[ReadLocality.CL]),
            "data_locality": float(s[ReadLocality.DL]),
            "rack_locality": float(s[ReadLocality.CRL] + s[ReadLocality.DRL]),
            "off_rack": float(s[ReadLocality.NO]),
            "job_time_s": float(np.mean(job_times)) if job_times else float("nan"),
            "makespan_s": float(makespan),
            "map_time_s": self.map_runtime_ms_total / maps / 1000.0,
            "cached_input": self.input.cached_fraction,
        }
