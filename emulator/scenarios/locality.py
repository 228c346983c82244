"""CLQLMRS's experiments: HiBench MapReduce jobs on a 6-node, 2-rack cluster with an HDFS cache.

Every node heartbeat on which something could be placed is one `Schedule` call; every container start and
finish and every job completion goes back through `Report`. Parameters (`--param KEY=VALUE`):

  cache_gb        total centralized cache of the cluster, GB (CLQLMRS: 2, 4, 6, 8)          default 2
  block_mb        HDFS block size, MB (64, 128, 256)                                        default 128
  maps            map tasks = input blocks of `block_mb` (CLQLMRS: 10 to 100)              default 10
  size            HiBench input size instead of `maps`: tiny, small or large (not for the
                  Hive queries join and aggregation)                                        default none
  jobs            jobs per episode (FIFO order), all reading the same input                 default 4
                  (join: each job is two MapReduce stages, the second reads the first's output)
  interarrival_s  seconds between job submissions                                            default 5
  am_heartbeat_ms the AM's allocate interval; 0 = asks always current                        default 1000
  reduces         reducers per job                                                           default: per app
  am_cache_aware  the ApplicationMaster prefers a cached block on the node it gets           default true
  heartbeat_ms    NodeManager heartbeat interval                                             default 1000
  nodes           DataNodes/NodeManagers (a cluster shaped like another one, e.g. the mini
                  cluster: nodes=4 racks=2 node_memory_mb=4096 replication=2)            default 6 (4/6/8 GB)
  racks           racks (hosts alternate between them)                                       default 2
  node_memory_mb  memory of every node, MB (with `nodes`)                                    default CLQLMRS's
  replication     HDFS replication of the input                                              default 3
  map_memory_mb   memory of one map (reduce) container, MB                                   default 1024
  remote_read_mb_s  MB/s cap of a read from another node (a network-bound cluster, e.g. the
                  container cluster with shaped worker egress)                                 default none
  disk_read_mb_s  MB/s cap of a read from a DataNode's disk (disk-local, rack-local and off-rack
                  reads of an uncached replica; a throttled disk, --worker-disk-read-mbps)    default none
  layout          blocks of the input per node, e.g. 2,2,2,2 (a real run's measured layout)    default random
  calibration     a calibration file of `emulator calibrate`: its fitted time model (AM and task
                  start-up, commit, CPU factor, shaped-link transfers) and, where these params
                  give none, its cluster shape                                                 default none

Metrics: over map tasks, the share read cache-local, disk-local, rack-local (cached or disk replica in the rack)
and off-rack; local_task_rate = cache + data locality (CLQLMRS's "local tasks rate"); mean job execution time
and makespan in seconds.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from emulator.drivers import Driver
from emulator.scenario import Scenario, register_scenario, reject_unknown_params
from policy_engine.policy import SCHEDULE
from emulator.yarn.cluster import ClusterConfig, WorkloadConfig, YarnSimulation
from emulator.yarn.timing import TimeModel
from emulator.yarn.workloads import APPS


class LocalityScenario(Scenario):
    family = "locality"
    needs = SCHEDULE
    metrics = ("local_task_rate", "cache_locality", "data_locality", "rack_locality", "off_rack", "job_time_s",
               "makespan_s")
    default_episodes = 10
    default_policies = ("fifo", "delay", "acl")

    def __init__(self, app: str, heartbeat_ms: int | None = None, nodes: int | None = None, racks: int | None = None,
                 node_memory_mb: int | None = None, times: TimeModel | None = None, calibration: str | None = None,
                 **workload: Any):
        self.name = f"locality-{app}"
        if calibration is not None:
            from emulator.calibration import load_calibration, scenario_params

            given = {"heartbeat_ms": heartbeat_ms, "nodes": nodes, "racks": racks, "node_memory_mb": node_memory_mb,
                     **workload}
            explicit = {k: v for k, v in given.items() if v is not None}
            merged = scenario_params(load_calibration(calibration), explicit)
            heartbeat_ms = merged.pop("heartbeat_ms", heartbeat_ms)
            nodes = merged.pop("nodes", nodes)
            racks = merged.pop("racks", racks)
            node_memory_mb = merged.pop("node_memory_mb", node_memory_mb)
            times = merged.pop("times")
            workload = merged
        self.times = times
        reject_unknown_params(self.name, workload, [f.name for f in fields(WorkloadConfig) if f.name != "app"]
                              + ["heartbeat_ms"])
        memory = ClusterConfig().node_memory_mb
        if nodes is not None or node_memory_mb is not None:
            count = int(nodes) if nodes is not None else len(memory)
            if count < 2:
                raise ValueError(f"nodes must be at least 2, got {nodes}")
            memory = tuple(int(node_memory_mb) for _ in range(count)) if node_memory_mb is not None else \
                tuple(memory[i % len(memory)] for i in range(count))
        self.cluster = ClusterConfig(node_memory_mb=memory, num_racks=int(2 if racks is None else racks),
                                     heartbeat_ms=int(1000 if heartbeat_ms is None else heartbeat_ms))
        if "map_memory_mb" in workload and "reduce_memory_mb" not in workload:
            workload["reduce_memory_mb"] = workload["map_memory_mb"]
        self.workload = WorkloadConfig(app=app, **workload)

    def simulation(self, seed: int) -> YarnSimulation:
        return YarnSimulation(self.workload, seed, self.cluster, times=self.times)

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
        out = {**asdict(self.workload), "heartbeat_ms": self.cluster.heartbeat_ms,
               "node_memory_mb": list(self.cluster.node_memory_mb), "racks": self.cluster.num_racks}
        if self.times is not None and not self.times.is_default:
            out["times"] = self.times.to_dict()
        return out


for _app, _what in (("wordcount", "CPU-bound"), ("sort", "I/O-bound"), ("terasort", "I/O-heavy"),
                    ("aggregation", "Hive GROUP BY, cache-affine"), ("join", "Hive join, 2 MapReduce stages")):
    register_scenario(
        f"locality-{_app}",
        f"CLQLMRS: HiBench {_app.capitalize()} ({_what}) on 6 DataNodes in 2 racks with an HDFS cache; "
        f"params cache_gb, block_mb, maps, {'size, ' if APPS[_app].hibench_bytes else ''}jobs",
        lambda _a=_app, **params: LocalityScenario(_a, **params),
        family=LocalityScenario.family, needs=LocalityScenario.needs,
    )
