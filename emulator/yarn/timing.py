"""The emulated cluster's time model: how long containers, tasks and jobs take, with the constants
`emulator calibrate` fits to real runs (emulator/calibration.py).

The default `TimeModel()` is the emulator's original model (emulator.yarn.workloads): tasks start in
TASK_STARTUP_S, an ApplicationMaster asks for containers the moment its job is submitted, a job ends with its last
task, and a read from another node is capped at `WorkloadConfig.remote_read_mb_s` alone. A calibrated model adds
what a real cluster spends besides reading and computing (ApplicationMaster start-up, job commit) and what a shaped
link does to transfers that share it. Its equations, per job of M maps and R reducers on N nodes (MB, s):

  AM start-up      the job's asks reach the ResourceManager  s_am  after submission
                   (AM container launch, JVM start, job set-up, first allocate call)
  map task         t_map = s_task + b / r_l + g * (b / cpu_app + b * rho_app / spill)
                   b: the block read, l: its read level (CL, DL, CRL, DRL, NO), g: the cluster's CPU factor;
                   r_l = read_mb_s[l] for a local read, at most the disk's rate D (`disk_read_mb_s`, a throttled
                   disk) where l reads a disk (DL, DRL, NO; CL and CRL read a DataNode's cache); a read from
                   another node over a shaped link of L MB/s
                   (worker egress, `remote_read_mb_s`) is a flow on its source node's egress of rate k * L (k: the
                   link efficiency), processor-shared with the other reads leaving that node (n in flight: k L / n
                   each; SharedLink)
  reduce task      t_red = s_task + shuffle + g * S / cpu_red + write,   S = M * b * rho_app / R
                   shuffle: unshaped S / shuffle_mb_s; shaped: max over the other nodes n of
                   out_n / (k * L), out_n = map output on node n for this reducer (the nodes send in parallel)
                   write: O = S * out_ratio written to HDFS; unshaped O / write_mb_s; shaped, with an output
                   replication >= 2, the pipeline's second replica leaves over the link: O / min(write_mb_s, k * L)
  job              T_job = (end of its last task, reported on that node's next heartbeat) + s_commit - submit
                   (s_commit: output commit, AM shut-down, history)

NodeManager heartbeats (`heartbeat_ms`) and the AM's allocate interval (`am_heartbeat_ms`) are the cluster's
configured values, not fitted: the emulator's discrete scheduling already turns them into delays.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from emulator.yarn.workloads import HDFS_WRITE_MB_S, READ_MB_S, SHUFFLE_MB_S, SPILL_MB_S, TASK_STARTUP_S, cap_read_rates

# Bumped whenever the meaning of a TimeModel field changes: a calibration of another version is refused.
TIME_MODEL_VERSION = 1


@dataclass(frozen=True)
class TimeModel:
    task_startup_s: float = TASK_STARTUP_S   # s_task
    am_startup_s: float = 0.0                # s_am
    commit_s: float = 0.0                    # s_commit
    cpu_factor: float = 1.0                  # g: task processing time relative to the application profiles
    link_efficiency: float = 1.0             # k: share of a shaped link's rate one transfer gets
    read_mb_s: tuple = field(default_factory=lambda: tuple(float(x) for x in READ_MB_S))  # CL, DL, CRL, DRL, NO
    spill_mb_s: float = SPILL_MB_S
    shuffle_mb_s: float = SHUFFLE_MB_S
    write_mb_s: float = HDFS_WRITE_MB_S
    output_replication: int | None = None    # None: the application profile's
    # the calibrated model's shaped-link physics (link sharing, shuffle and output write over the link)
    shaped_transfers: bool = False

    def __post_init__(self):
        for name in ("task_startup_s", "am_startup_s", "commit_s"):
            v = getattr(self, name)
            if not (math.isfinite(v) and 0 <= v <= 3600):
                raise ValueError(f"{name} must be between 0 and 3600 s, got {v}")
        for name in ("cpu_factor", "link_efficiency", "spill_mb_s", "shuffle_mb_s", "write_mb_s"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive number, got {v}")
        if len(self.read_mb_s) != 5 or not all(math.isfinite(r) and r > 0 for r in self.read_mb_s):
            raise ValueError(f"read_mb_s needs 5 positive rates (CL, DL, CRL, DRL, NO), got {self.read_mb_s}")
        if self.output_replication is not None and not 1 <= self.output_replication <= 10:
            raise ValueError(f"output_replication must be between 1 and 10, got {self.output_replication}")

    @property
    def is_default(self) -> bool:
        return self == TimeModel()

    def to_dict(self) -> dict:
        d = asdict(self)
        d["read_mb_s"] = list(self.read_mb_s)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TimeModel":
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown time-model field(s) {sorted(unknown)}")
        d = dict(d)
        if "read_mb_s" in d:
            d["read_mb_s"] = tuple(float(x) for x in d["read_mb_s"])
        return cls(**d)

    def read_rates(self, link_mb_s: float | None, disk_mb_s: float | None = None) -> np.ndarray:
        """Per-level read rates; reads from another node (CRL, DRL, NO) capped by a shaped link alone on it (the
        emulator shares a link among its reads with SharedLink), reads from a disk (DL, DRL, NO) by a throttled
        disk's rate (the cluster's, not fitted)."""
        link = None if link_mb_s is None else self.link_efficiency * float(link_mb_s)
        return cap_read_rates(np.asarray(self.read_mb_s, dtype=float), link, disk_mb_s)


class SharedLink:
    """A node's shaped egress shared by the transfers leaving it (processor sharing: n transfers in flight each get
    1/n of the rate). `add` is called in time order; every transfer's `on_end(end_ms)` is called again whenever a
    later one changes its projected end."""

    def __init__(self, mb_s: float):
        self.per_ms = float(mb_s) / 1000.0
        self.t = 0.0
        self.flows: list[list] = []        # [remaining MB, on_end]

    def _advance(self, t: float) -> None:
        while self.flows and self.t < t:
            share = self.per_ms / len(self.flows)
            low = min(f[0] for f in self.flows)
            step = low / share
            if self.t + step <= t:
                for f in self.flows:
                    f[0] -= low
                self.flows = [f for f in self.flows if f[0] > 1e-12]
                self.t += step
            else:
                for f in self.flows:
                    f[0] -= share * (t - self.t)
                self.t = t
        self.t = max(self.t, t)

    def add(self, t_ms: float, mb: float, on_end) -> None:
        self._advance(t_ms)
        self.flows.append([float(mb), on_end])
        t, done, n = self.t, 0.0, len(self.flows)
        for i, f in enumerate(sorted(self.flows, key=lambda f: f[0])):
            t += (f[0] - done) * (n - i) / self.per_ms
            done = f[0]
            f[1](t)
