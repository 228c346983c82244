"""DSRAP (Zhang, Lesser & Shenoy 2008): the network of 16 shared clusters and its workload.

Given by the paper (Sec. 5.1), used as given:
  * 16 clusters, 4 of them (5, 6, 9, 10) receive tasks from outside; cluster 1 has 8 nodes, cluster 4 has 21;
  * node CPU and network capacities in [50, 150];
  * four task types <d_cpu, d_net, u, st>: ordinary <9, 8, 1, 20>, IO-intense <15, 48, 6, 35>, compute-intense
    <45, 8, 5, 30>, demanding <47, 43, 25, 50>; CPU demand, network demand and utility rate are Poisson with those
    means, service times exponential with mean st; every task has one capsule and maximum waiting time w = 10;
  * heavy load: Poisson arrivals per step of (ordinary, IO, compute, demanding) = (9,1,5,2) at cluster 5,
    (7,1,4,1) at 6, (8,4,1,2) at 9, (3,5,1,1) at 10; light load: half of each;
  * each manager transfers at most 40 tasks per step.

Open in the paper, chosen here (every one is a field of DsrapConfig, recorded in `--json` output):
  * Fig. 2's picture is not in the text we have. We lay the 16 clusters out on a 4 x 4 grid with the four entry
    clusters in the centre (GRID below) and link grid neighbours: corner clusters have 2 neighbours, border ones
    3, the centre ones 4. Node counts: cluster 1 = 8 and cluster 4 = 21 as the paper says; the others are picked
    so the network has 256 nodes, which puts the light load's offered CPU demand (19 800 units) at 0.77 of the
    capacity (about 25 600), the paper's centralized CPU utilization under light load, where it allocates all.
  * node capacities: integers uniform in [50, 150], CPU and network independently, drawn once from
    `topology_seed` (the same network in every episode; the episode seed drives the workload only).
  * transfer time a_ij = 1 step on every link (`delay`); a forwarded task is in the receiving manager's set one
    step later with one step less to wait.
  * Poisson demands are floored at 1 (a capsule needs some CPU and network); a utility rate may be 0. Service
    times are exponential rounded to whole steps, at least 1.
  * a task arriving at step t may be allocated at steps t .. t + w and is abandoned after that.
  * an episode is 10 000 steps, not the paper's 200 000 (CPU budget: 2 cores shared by many jobs; `--param
    steps=200000` runs the paper's length); the metrics are taken over the last 5 000 steps as the paper's tables,
    and the curves every 500 steps.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np

TASK_TYPES = ("ordinary", "io-intense", "compute-intense", "demanding")
# <d_cpu, d_network, u, st> per type (Sec. 5.1)
TYPE_FEATURES = ((9.0, 8.0, 1.0, 20.0), (15.0, 48.0, 6.0, 35.0), (45.0, 8.0, 5.0, 30.0), (47.0, 43.0, 25.0, 50.0))

# Cluster ids (1-based, the paper's) on a 4 x 4 grid; the entry clusters 5, 6, 9, 10 in the centre.
GRID = ((1, 2, 3, 4),
        (16, 5, 6, 7),
        (15, 10, 9, 8),
        (14, 13, 12, 11))
NODES = {1: 8, 2: 12, 3: 18, 4: 21, 5: 14, 6: 16, 7: 20, 8: 15, 9: 12, 10: 18, 11: 24, 12: 10, 13: 16, 14: 22,
         15: 11, 16: 19}
HEAVY_ARRIVALS = {5: (9, 1, 5, 2), 6: (7, 1, 4, 1), 9: (8, 4, 1, 2), 10: (3, 5, 1, 1)}


def grid_links(grid=GRID) -> tuple[tuple[int, int], ...]:
    links = []
    rows, cols = len(grid), len(grid[0])
    for r in range(rows):
        for c in range(cols):
            if c + 1 < cols:
                links.append((grid[r][c], grid[r][c + 1]))
            if r + 1 < rows:
                links.append((grid[r][c], grid[r + 1][c]))
    return tuple(sorted(tuple(sorted(link)) for link in links))


@dataclass(frozen=True)
class DsrapConfig:
    load: str = "heavy"                    # "heavy" or "light" (half of every arrival rate)
    steps: int = 10_000
    window: int = 5_000                    # the tables' "last 5000 time steps"
    curve_every: int = 500
    max_wait: int = 10
    transfer_limit: int = 40
    delay: int = 1
    nodes: dict = field(default_factory=lambda: dict(NODES))
    links: tuple = field(default_factory=grid_links)
    capacity_range: tuple = (50, 150)
    topology_seed: int = 0
    type_features: tuple = TYPE_FEATURES
    heavy_arrivals: dict = field(default_factory=lambda: dict(HEAVY_ARRIVALS))

    def __post_init__(self):
        if self.load not in ("heavy", "light"):
            raise ValueError(f"load must be heavy or light, not {self.load!r}")
        if self.steps < 1 or not 1 <= self.window <= self.steps:
            raise ValueError(f"need 1 <= window ({self.window}) <= steps ({self.steps})")
        if self.curve_every < 1 or self.max_wait < 0 or self.transfer_limit < 0 or self.delay < 1:
            raise ValueError("curve_every >= 1, max_wait >= 0, transfer_limit >= 0 and delay >= 1 are required")
        ids = set(self.nodes)
        for a, b in self.links:
            if a not in ids or b not in ids or a == b:
                raise ValueError(f"link ({a}, {b}) names an unknown cluster or is a loop")
        if not set(self.heavy_arrivals) <= ids:
            raise ValueError("arrivals at unknown clusters")

    @property
    def arrival_rates(self) -> dict[int, np.ndarray]:
        scale = 1.0 if self.load == "heavy" else 0.5
        return {c: np.asarray(r, dtype=np.float64) * scale for c, r in self.heavy_arrivals.items()}

    def with_params(self, **params) -> DsrapConfig:
        """A copy with scalar fields replaced (`--param steps=5000`); unknown names are refused."""
        scalars = {"steps": int, "window": int, "curve_every": int, "max_wait": int, "transfer_limit": int,
                   "delay": int, "topology_seed": int}
        values = {}
        for k, v in params.items():
            if k not in scalars:
                raise ValueError(f"unknown parameter {k!r}; parameters: {', '.join(scalars)}")
            try:
                values[k] = scalars[k](v)
            except (TypeError, ValueError):
                raise ValueError(f"parameter {k} must be an integer, not {v!r}") from None
        if "steps" in values and "window" not in values:
            values["window"] = min(self.window, values["steps"])
        return replace(self, **values)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["nodes"] = {str(k): v for k, v in self.nodes.items()}
        d["heavy_arrivals"] = {str(k): list(v) for k, v in self.heavy_arrivals.items()}
        d["links"] = [list(link) for link in self.links]
        d["task_types"] = {name: dict(zip(("cpu", "network", "utility_rate", "service_time"), f))
                           for name, f in zip(TASK_TYPES, self.type_features)}
        d.pop("type_features")
        return d
