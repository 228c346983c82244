"""HiBench-shaped MapReduce applications and the task run-time model.

A map task reads one HDFS block, processes it and spills its output to local disk; its run time is

    JVM/task start-up + block / read_rate[state] + block / cpu_rate[app] + block * map_output_ratio / spill_rate

(MapReduce's record reader and mapper run in one thread, so reading and processing add up.) A reduce task fetches
its share of all map output, merges and reduces it, and writes its output to HDFS.

Read rates by state (CL, DL, CRL, DRL, NO; see policy_engine.features.locality), in MB/s of one task's read. They
are assumptions, chosen to keep the ratios the literature measured:
  * DL 120: sequential read of one 7200 rpm SATA disk, the local disks of CLQLMRS's desktop-class DataNodes
    (Intel i5-4590), through HDFS short-circuit reads.
  * NO 60 (DL / 2): the Delay scheduling paper (Zaharia et al., EuroSys 2010, sec. 5) measured up to 2x higher
    throughput for I/O-heavy jobs once their map tasks were node-local rather than spread across racks behind
    oversubscribed rack uplinks; we charge off-rack reads half the local disk rate.
  * DRL 100: a disk replica on another node of the same rack, behind CLQLMRS's non-blocking 10 GbE switch: still
    disk-bound, minus the extra DataNode-to-client hop (Delay scheduling: rack-local is between node-local and
    off-rack, close to node-local when the rack switch is not oversubscribed).
  * CL 800: a cached replica is an mmapped, mlocked block read zero-copy by the local client (HDFS-4949
    centralized cache management), so the read runs at memory speed bounded by checksum-free deserialisation;
    we use ~6.7x disk, in line with the several-fold speedups reported for HDFS caching.
  * CRL 400: a cached replica on another node of the rack, streamed by its DataNode over 10 GbE (~1.1 GB/s line
    rate, about a third lost to TCP and DataNode streaming).
The application profiles follow HiBench's characterisation (Huang et al., ICDEW 2010): WordCount is CPU-bound
with a small map output (combiner), Sort is I/O-bound with map output = input, TeraSort is I/O-heavy in both
phases and writes its output with replication 1. The Hive queries: Aggregation (GROUP BY over uservisits) is one
MapReduce job with map-side aggregation that rereads the same (cacheable) table - CLQLMRS's "high cache
affinity" application; Join (rankings JOIN uservisits, then GROUP BY) is two MapReduce jobs, the second reading
the first one's output, a fresh HDFS file written by its reducers that no cache directive covers - CLQLMRS's
multi-stage application with a low cache hit rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from emulator.yarn.hdfs import MB

# MB/s of one task's read of its input block, by state CL, DL, CRL, DRL, NO.
READ_MB_S = np.array([800.0, 120.0, 400.0, 100.0, 60.0])
TASK_STARTUP_S = 1.5      # container launch + JVM start + task set-up (Hadoop 2.7, no JVM reuse)
SPILL_MB_S = 100.0        # map-side sort/spill to the local disk
SHUFFLE_MB_S = 80.0       # one reducer fetching from all nodes, half of them across racks
HDFS_WRITE_MB_S = 60.0    # pipelined HDFS write with replication 3
RUNTIME_NOISE_SIGMA = 0.1  # log-normal run-time variation of tasks (JVM, GC, disk contention)


@dataclass(frozen=True)
class AppProfile:
    name: str
    map_cpu_mb_s: float        # map-side processing rate of one container
    map_output_ratio: float    # map output bytes per input byte (after the combiner)
    reduce_cpu_mb_s: float     # reduce-side merge and processing rate
    output_ratio: float        # job output bytes per shuffled byte
    output_replication: int    # replication of the job's output
    reduces_per_map: float     # default reducers per map task (HiBench scales reducers with the input)
    hibench_bytes: dict        # HiBench input size per profile, bytes (hadoop-yarn-facts.md)
    next_stage: str | None = None  # profile of the MapReduce job that reads this one's output (multi-stage apps)

    def default_reduces(self, maps: int) -> int:
        return max(1, min(12, round(maps * self.reduces_per_map)))


APPS: dict[str, AppProfile] = {
    "wordcount": AppProfile("wordcount", map_cpu_mb_s=20.0, map_output_ratio=0.05, reduce_cpu_mb_s=40.0,
                            output_ratio=0.5, output_replication=3, reduces_per_map=0.1,
                            hibench_bytes={"tiny": 32_000, "small": 320_000_000, "large": 3_200_000_000}),
    "sort": AppProfile("sort", map_cpu_mb_s=90.0, map_output_ratio=1.0, reduce_cpu_mb_s=90.0, output_ratio=1.0,
                       output_replication=3, reduces_per_map=0.25,
                       hibench_bytes={"tiny": 32_000, "small": 3_200_000, "large": 320_000_000}),
    # TeraSort's HiBench sizes are rows of 100 bytes: tiny 32,000 rows, small 3.2e6, large 3.2e7.
    "terasort": AppProfile("terasort", map_cpu_mb_s=60.0, map_output_ratio=1.0, reduce_cpu_mb_s=70.0,
                           output_ratio=1.0, output_replication=1, reduces_per_map=0.25,
                           hibench_bytes={"tiny": 3_200_000, "small": 320_000_000, "large": 3_200_000_000}),
    # Hive queries; HiBench's SQL sizes are row counts of generated tables, not listed in our notes: use `maps`.
    "aggregation": AppProfile("aggregation", map_cpu_mb_s=45.0, map_output_ratio=0.1, reduce_cpu_mb_s=45.0,
                              output_ratio=0.5, output_replication=3, reduces_per_map=0.1, hibench_bytes={}),
    "join": AppProfile("join", map_cpu_mb_s=40.0, map_output_ratio=0.6, reduce_cpu_mb_s=40.0, output_ratio=0.8,
                       output_replication=3, reduces_per_map=0.25, hibench_bytes={}, next_stage="join-groupby"),
}
# Stages that only run as part of a multi-stage application.
STAGES: dict[str, AppProfile] = {
    "join-groupby": AppProfile("join-groupby", map_cpu_mb_s=45.0, map_output_ratio=0.1, reduce_cpu_mb_s=45.0,
                               output_ratio=0.5, output_replication=3, reduces_per_map=0.1, hibench_bytes={}),
}


def profile(name: str) -> AppProfile:
    return APPS[name] if name in APPS else STAGES[name]


# the read levels served from a DataNode's disk (DL, DRL, NO); CL and CRL come from its cache (memory)
DISK_LEVELS = [1, 3, 4]


def cap_read_rates(rates: np.ndarray, remote_mb_s: float | None, disk_mb_s: float | None) -> np.ndarray:
    """`rates` (CL, DL, CRL, DRL, NO) with the reads from another node (CRL, DRL, NO) capped at `remote_mb_s` (a
    shaped egress) and the reads from a disk (DL, DRL, NO) at `disk_mb_s` (a throttled disk); a copy when capped."""
    if remote_mb_s is None and disk_mb_s is None:
        return rates
    rates = np.array(rates, dtype=float)
    if remote_mb_s is not None:
        rates[2:] = np.minimum(rates[2:], float(remote_mb_s))
    if disk_mb_s is not None:
        rates[DISK_LEVELS] = np.minimum(rates[DISK_LEVELS], float(disk_mb_s))
    return rates


def read_rates_mb_s(remote_read_mb_s: float | None = None, disk_read_mb_s: float | None = None) -> np.ndarray:
    """READ_MB_S, with the reads from another node (CRL, DRL, NO) capped at `remote_read_mb_s` (a network-bound
    cluster: each node's egress shaped, as docker_cluster/cluster.py --worker-egress-mbit does) and the reads from a
    disk (DL, DRL, NO) at `disk_read_mb_s` (a throttled disk, as --worker-disk-read-mbps does; a cached replica is
    read from memory)."""
    return cap_read_rates(READ_MB_S, remote_read_mb_s, disk_read_mb_s)


def map_runtime_s(app: AppProfile, block_bytes: np.ndarray | float, state: np.ndarray | int,
                  remote_read_mb_s: float | None = None, disk_read_mb_s: float | None = None) -> np.ndarray:
    """Noise-free run time (s) of map tasks reading `block_bytes` in read-locality `state` (arrays broadcast);
    `remote_read_mb_s` caps the rate of a read from another node, `disk_read_mb_s` that of a read from a disk."""
    mb = np.asarray(block_bytes, dtype=float) / MB
    return (TASK_STARTUP_S + mb / read_rates_mb_s(remote_read_mb_s, disk_read_mb_s)[np.asarray(state)] + mb / app.map_cpu_mb_s
            + mb * app.map_output_ratio / SPILL_MB_S)


def reduce_runtime_s(app: AppProfile, input_bytes: float, reduces: int) -> float:
    """Noise-free run time (s) of one of `reduces` equal reducers of a job with `input_bytes` of map input."""
    shuffled = input_bytes * app.map_output_ratio / max(reduces, 1) / MB
    written = shuffled * app.output_ratio
    write_rate = HDFS_WRITE_MB_S * (3.0 / app.output_replication) ** 0.5  # fewer replicas: shorter pipeline
    return TASK_STARTUP_S + shuffled / SHUFFLE_MB_S + shuffled / app.reduce_cpu_mb_s + written / write_rate
