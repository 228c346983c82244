"""Seeded hybrid workloads of the multi-cluster papers: arrival patterns and job profiles.

A workload is drawn whole from one seed before the episode starts (`generate`), so every policy compared on the
same seed faces the same jobs, the same executor request of every streaming batch and the same arrival times,
whatever it decides. Everything is numpy arrays, one row per job.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from policy_engine.types import JobCategory

SLOTS = 10  # both papers: a request distribution is 10 equally likely executor counts


# ---------------------------------------------------------------- arrival patterns (RL-FC, Sec. V-A)


@dataclass(frozen=True)
class ArrivalPattern:
    """When jobs arrive: intervals between arrival events, and jobs per event max(round(N(mu, sigma^2)), 1)."""

    kind: str = "uniform"           # "bernoulli", "uniform" or "beta"
    rho: float = 0.08               # bernoulli: event probability per step
    a: int = 1                      # uniform: interval in [a, b]
    b: int = 39
    alpha: float = 4.0              # beta: Eq. 5 with alpha, beta, M
    beta: float = 2.0
    m: int = 30
    jobs_mu: float = 3.0            # jobs per event
    jobs_sigma: float = 1.0

    def __post_init__(self):
        if self.kind not in ("bernoulli", "uniform", "beta"):
            raise ValueError(f"arrival pattern must be bernoulli, uniform or beta, not {self.kind!r}")
        if self.kind == "bernoulli" and not 0 < self.rho <= 1:
            raise ValueError(f"bernoulli rho must be in (0, 1], not {self.rho}")
        if self.kind == "uniform" and not 1 <= self.a <= self.b:
            raise ValueError(f"uniform pattern needs 1 <= a <= b, got a={self.a}, b={self.b}")
        if self.kind == "beta" and (self.alpha <= 0 or self.beta <= 0 or self.m < 1):
            raise ValueError(f"beta pattern needs alpha, beta > 0 and M >= 1, got {self.alpha}, {self.beta}, "
                             f"{self.m}")
        if self.jobs_sigma < 0:
            raise ValueError(f"jobs_sigma must be >= 0, not {self.jobs_sigma}")

    def interval_pmf(self) -> tuple[np.ndarray, np.ndarray]:
        """(intervals, probabilities) of the time between two arrival events (Eq. 4, Eq. 5; geometric for
        Bernoulli, cut where the remaining mass is below 1e-12)."""
        if self.kind == "uniform":
            i = np.arange(self.a, self.b + 1)
            return i, np.full(i.size, 1.0 / i.size)
        if self.kind == "bernoulli":
            n = max(1, math.ceil(math.log(1e-12) / math.log1p(-self.rho))) if self.rho < 1 else 1
            i = np.arange(1, n + 1)
            p = (1 - self.rho) ** (i - 1) * self.rho
            return i, p / p.sum()
        i = np.arange(1, self.m + 1)
        cdf = beta_cdf(i / self.m, self.alpha, self.beta)
        p = np.diff(np.concatenate([[0.0], cdf]))
        return i, p / p.sum()

    def sample_event_times(self, rng: np.random.Generator, n_events: int) -> np.ndarray:
        if self.kind == "bernoulli":
            gaps = rng.geometric(self.rho, size=n_events)
        elif self.kind == "uniform":
            gaps = rng.integers(self.a, self.b + 1, size=n_events)
        else:
            values, p = self.interval_pmf()
            gaps = rng.choice(values, size=n_events, p=p)
        return np.cumsum(gaps)

    def sample_jobs_per_event(self, rng: np.random.Generator, n_events: int) -> np.ndarray:
        return np.maximum(np.rint(rng.normal(self.jobs_mu, self.jobs_sigma, size=n_events)), 1).astype(np.int64)


def beta_cdf(x: np.ndarray, alpha: float, beta: float, grid: int = 20_001) -> np.ndarray:
    """Regularised incomplete beta function I_x(alpha, beta) (Eq. 5-7) by integrating the density on a fine grid."""
    t = np.linspace(0.0, 1.0, grid)
    mid = (t[1:] + t[:-1]) / 2
    log_norm = math.lgamma(alpha + beta) - math.lgamma(alpha) - math.lgamma(beta)
    dens = np.exp(log_norm + (alpha - 1) * np.log(mid) + (beta - 1) * np.log1p(-mid))
    cdf = np.concatenate([[0.0], np.cumsum(dens * np.diff(t))])
    cdf /= cdf[-1]
    return np.interp(np.clip(x, 0.0, 1.0), t, cdf)


# ---------------------------------------------------------------- job profiles


@dataclass(frozen=True)
class JobProfile:
    """Ranges the job attributes are drawn from (uniform unless noted; integers are inclusive).

    The papers fix the categories' shares and the shape of a request distribution (10 equally likely executor
    counts, e.g. eight 30s and two 60s) but not the numbers; the defaults of the scenarios say which values they
    chose and why.
    """

    shares: tuple[float, float, float] = (0.5, 0.25, 0.25)  # regular, time-critical, streaming (beta_1..3)
    # regular and non-streaming time-critical jobs: one execution
    executors: tuple[int, int] = (50, 400)
    runtime: tuple[int, int] = (20, 80)
    # streaming jobs: a base executor count, some of the 10 slots at a fluctuation peak
    stream_executors: tuple[int, int] = (20, 150)
    peak_slots: tuple[int, int] = (0, 4)
    peak_factor: tuple[float, float] = (1.5, 2.5)
    stream_runtime: tuple[int, int] = (5, 20)
    executions: tuple[int, int] = (5, 20)
    period_factor: tuple[float, float] = (1.5, 3.0)   # batch period = runtime * factor
    # deadline of one execution = ceil(optimal runtime * (1 + slack))
    deadline_slack: tuple[float, float] = (0.1, 0.5)
    # RL-LSFC only (hetero=True): expected hetero factor, sensitivity sen with R = [h - sen*zeta, h + sen*zeta]
    expected_hetero: tuple[float, float] = (60.0, 90.0)
    sensitivity: tuple[int, int] = (1, 5)
    zeta: float = 10.0
    request_jitter: float = 0.1                  # per-cluster executor request = base * U[1 - j, 1 + j]
    startup: tuple[int, int] = (0, 2)            # per-cluster program transfer steps before an execution
    transfer_share: tuple[float, float] = (0.0, 0.15)  # share of the end-to-end deadline lost to data transfer

    def __post_init__(self):
        if len(self.shares) != 3 or min(self.shares) < 0 or not math.isclose(sum(self.shares), 1.0):
            raise ValueError(f"category shares must be three non-negative numbers adding to 1, got {self.shares}")
        for name in ("executors", "runtime", "stream_executors", "stream_runtime", "executions", "startup",
                     "sensitivity", "peak_slots"):
            lo, hi = getattr(self, name)
            if lo > hi or lo < 0:
                raise ValueError(f"{name} range {lo, hi} is empty or negative")
        if min(self.runtime[0], self.stream_runtime[0], self.executors[0], self.stream_executors[0],
               self.executions[0]) < 1:
            raise ValueError("runtimes, executor counts and executions must be at least 1")
        if self.peak_slots[1] > SLOTS:
            raise ValueError(f"peak_slots cannot exceed {SLOTS}")

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Workload:
    """One episode's jobs (arrays indexed by job, in arrival order) as seen on each of C clusters."""

    arrival: np.ndarray         # int step of submission to the global buffer
    category: np.ndarray        # JobCategory value
    executions: np.ndarray      # 1, or the number of streaming batches
    period: np.ndarray          # steps between streaming batch releases (0 for single executions)
    duration: np.ndarray        # overall duration: runtime, or executions * period for streaming jobs
    standard_runtime: np.ndarray  # SR: one execution at the job's expected hetero factor (RL-FC: the runtime)
    deadline: np.ndarray        # end-to-end deadline of one execution, 0 = none
    expected_hetero: np.ndarray   # RL-LSFC
    sensitivity: np.ndarray       # RL-LSFC
    base_distribution: np.ndarray  # (N, 10) executor counts before per-cluster differences
    distribution: np.ndarray    # (N, C, 10) executor counts requested on each cluster
    run: np.ndarray             # (N, C) actual steps of one execution on each cluster
    cluster_standard_runtime: np.ndarray  # (N, C) standard runtime on each cluster (SR + startup)
    cluster_deadline: np.ndarray  # (N, C) deadline of one execution on each cluster, 0 = none
    slot: np.ndarray            # (N, max executions) which of the 10 slots each execution requests

    @property
    def n_jobs(self) -> int:
        return int(self.arrival.size)


def generate(n_jobs: int, pattern: ArrivalPattern, profile: JobProfile, n_clusters: int, seed: int,
             hetero_factors: np.ndarray | None = None) -> Workload:
    """Draw one episode's workload. With `hetero_factors` (RL-LSFC) runtimes, requests and deadlines become
    cluster-specific; without, every cluster sees the same job (RL-FC)."""
    if n_jobs < 1:
        raise ValueError(f"an episode needs at least one job, not {n_jobs}")
    rng = np.random.default_rng(seed)
    # arrivals: n_jobs events always suffice (each brings >= 1 job); the last event is cut to n_jobs in total
    times = pattern.sample_event_times(rng, n_jobs)
    per_event = pattern.sample_jobs_per_event(rng, n_jobs)
    arrival = np.repeat(times, per_event)[:n_jobs].astype(np.int64)

    u = rng.random(n_jobs)
    s = profile.shares
    category = np.where(u < s[0], int(JobCategory.REGULAR),
                        np.where(u < s[0] + s[1], int(JobCategory.TIME_CRITICAL), int(JobCategory.STREAMING)))
    streaming = category == int(JobCategory.STREAMING)

    # single executions: one executor count in all 10 slots; streaming: base count with `peak_slots` peaks
    execs_single = rng.integers(profile.executors[0], profile.executors[1] + 1, n_jobs)
    base_stream = rng.integers(profile.stream_executors[0], profile.stream_executors[1] + 1, n_jobs)
    n_peak = rng.integers(profile.peak_slots[0], profile.peak_slots[1] + 1, n_jobs)
    peak = np.ceil(base_stream * rng.uniform(*profile.peak_factor, n_jobs)).astype(np.int64)
    slots = np.arange(SLOTS)[None, :]
    stream_dist = np.where(slots >= SLOTS - n_peak[:, None], peak[:, None], base_stream[:, None])
    base_distribution = np.where(streaming[:, None], stream_dist, execs_single[:, None]).astype(np.int64)

    runtime = np.where(streaming, rng.integers(profile.stream_runtime[0], profile.stream_runtime[1] + 1, n_jobs),
                       rng.integers(profile.runtime[0], profile.runtime[1] + 1, n_jobs)).astype(np.int64)
    executions = np.where(streaming, rng.integers(profile.executions[0], profile.executions[1] + 1, n_jobs),
                          1).astype(np.int64)
    period = np.where(streaming, np.ceil(runtime * rng.uniform(*profile.period_factor, n_jobs)), 0).astype(np.int64)
    duration = np.where(streaming, executions * period, runtime).astype(np.int64)
    slack = rng.uniform(*profile.deadline_slack, n_jobs)
    deadline = np.where(category == int(JobCategory.REGULAR), 0,
                        np.ceil(runtime * (1 + slack))).astype(np.int64)
    slot = rng.integers(0, SLOTS, size=(n_jobs, int(executions.max())))

    if hetero_factors is None:
        c = n_clusters
        distribution = np.repeat(base_distribution[:, None, :], c, axis=1)
        run = np.repeat(runtime[:, None], c, axis=1)
        cluster_std = run.copy()
        cluster_deadline = np.repeat(deadline[:, None], c, axis=1)
        expected = np.zeros(n_jobs)
        sens = np.zeros(n_jobs, dtype=np.int64)
    else:
        eta = np.asarray(hetero_factors, dtype=float)
        c = eta.size
        expected = rng.uniform(*profile.expected_hetero, n_jobs)
        sens = rng.integers(profile.sensitivity[0], profile.sensitivity[1] + 1, n_jobs)
        jitter = rng.uniform(1 - profile.request_jitter, 1 + profile.request_jitter, (n_jobs, c))
        distribution = np.maximum(np.rint(base_distribution[:, None, :] * jitter[:, :, None]), 1).astype(np.int64)
        # Sec. 4.2: run time scales with h / eta inside R = [h - sen*zeta, h + sen*zeta], no further outside it
        lo = expected - sens * profile.zeta
        hi = expected + sens * profile.zeta
        eff = np.clip(eta[None, :], lo[:, None], hi[:, None])
        startup = rng.integers(profile.startup[0], profile.startup[1] + 1, (n_jobs, c))
        run = (np.ceil(runtime[:, None] * expected[:, None] / eff) + startup).astype(np.int64)
        cluster_std = (runtime[:, None] + startup).astype(np.int64)
        transfer = rng.uniform(*profile.transfer_share, (n_jobs, c))
        cluster_deadline = np.where(deadline[:, None] > 0,
                                    np.maximum(np.floor(deadline[:, None] * (1 - transfer)), 1), 0).astype(np.int64)
    return Workload(arrival=arrival, category=category.astype(np.int64), executions=executions, period=period,
                    duration=duration, standard_runtime=runtime, deadline=deadline, expected_hetero=expected,
                    sensitivity=sens, base_distribution=base_distribution, distribution=distribution, run=run,
                    cluster_standard_runtime=cluster_std, cluster_deadline=cluster_deadline, slot=slot)
