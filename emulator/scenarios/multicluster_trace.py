"""`multicluster-trace`: route the jobs of a user's own cluster trace (a Parquet or CSV job table) over RL-FC's
five clusters, with RL-FC's metrics (TMDL, AJDR, Eval_app).

    emulator run --scenario multicluster-trace --param path=jobs.csv --policy sf-e

Columns (emulator.yarn.traces.read_job_table): submit_time, executors, duration (in steps), optional deadline,
category (regular | time_critical | streaming), executions, period. A job requests the same executor count in
all 10 slots of its request distribution; a job with a deadline and no category is time-critical, and one with
executions > 1 streaming. The workload is the file's, the same on every seed. Parameters: path (required),
clusters (comma-separated capacities, default 500,800,1200,1300,1900).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from emulator.drivers import Driver
from emulator.multicluster.scenario import RLFCScenario
from emulator.multicluster.sim import Federation
from emulator.multicluster.workload import SLOTS, ArrivalPattern, Workload
from emulator.scenario import register_scenario, reject_unknown_params
from emulator.scenarios.multicluster import CLUSTERS_000, PROFILE_000
from emulator.yarn.traces import read_job_table
from policy_engine.types import JobCategory


def workload_from_table(cols: dict[str, np.ndarray], n_clusters: int) -> Workload:
    n = cols["submit_time"].size
    executions = cols.get("executions", np.ones(n, np.int64))
    deadline = cols.get("deadline", np.zeros(n, np.int64))
    category = cols.get("category")
    if category is None:
        category = np.where(executions > 1, int(JobCategory.STREAMING),
                            np.where(deadline > 0, int(JobCategory.TIME_CRITICAL), int(JobCategory.REGULAR)))
    runtime = cols["duration"]
    period = np.where(executions > 1, cols.get("period", runtime), 0).astype(np.int64)
    period = np.where(executions > 1, np.maximum(period, runtime), 0)
    dist = np.repeat(cols["executors"][:, None], SLOTS, axis=1).astype(np.int64)
    return Workload(
        arrival=cols["submit_time"] - cols["submit_time"].min(), category=category.astype(np.int64),
        executions=executions, period=period, duration=np.where(executions > 1, executions * period, runtime),
        standard_runtime=runtime, deadline=deadline, expected_hetero=np.zeros(n), sensitivity=np.zeros(n, np.int64),
        base_distribution=dist, distribution=np.repeat(dist[:, None, :], n_clusters, axis=1),
        run=np.repeat(runtime[:, None], n_clusters, axis=1), cluster_standard_runtime=np.repeat(
            runtime[:, None], n_clusters, axis=1), cluster_deadline=np.repeat(deadline[:, None], n_clusters, axis=1),
        slot=np.zeros((n, int(executions.max())), np.int64))


class MultiClusterTraceScenario(RLFCScenario):
    default_episodes = 1

    def __init__(self, path: str | None = None, clusters: str | None = None, **unknown: Any):
        reject_unknown_params("multicluster-trace", unknown, ("path", "clusters"))
        if path is None:
            raise ValueError("needs --param path=FILE (a Parquet or CSV job table)")
        caps = CLUSTERS_000
        if clusters is not None:
            try:
                caps = tuple(int(c) for c in str(clusters).split(","))
            except ValueError:
                raise ValueError(f"clusters takes comma-separated capacities, not {clusters!r}") from None
            if len(caps) < 2 or min(caps) < 1:
                raise ValueError(f"clusters needs at least 2 positive capacities, got {clusters!r}")
        self.path = str(path)
        self.table = read_job_table(self.path)
        too_big = np.flatnonzero(self.table["executors"] > max(caps))
        if too_big.size:
            raise ValueError(f"job {int(too_big[0])} of {self.path} requests {int(self.table['executors'][too_big[0]])} "
                             f"executors, more than the largest cluster ({max(caps)})")
        super().__init__("multicluster-trace", Federation(caps), ArrivalPattern(), PROFILE_000,
                         int(self.table["submit_time"].size))
        self.workload = workload_from_table(self.table, len(caps))

    def run_episode(self, driver: Driver, seed: int) -> dict[str, float]:
        sim = self.make_sim()
        obs = sim.reset(seed, self.workload)
        while obs is not None:
            events = sim.take_events()
            if events:
                driver.report(events)
            obs = sim.step(driver.route(obs))
        events = sim.take_events()
        if events:
            driver.report(events)
        return self.episode_metrics(sim.result())

    def describe(self) -> dict[str, Any]:
        return {"path": self.path, "jobs": self.n_jobs, "clusters": list(self.federation.capacities)}


register_scenario("multicluster-trace", "a job table (Parquet/CSV: submit_time, executors, duration, deadline, ...) "
                  "routed over RL-FC's 5 clusters; TMDL, AJDR, Eval_app; params path, clusters",
                  MultiClusterTraceScenario, family="multicluster", needs="route")
