"""Seed 000 (RL-FC, Liu et al. 2018): hybrid time-critical workloads routed over 5 identical-executor clusters.

From the paper (Sec. III-V), as given:
  * clusters of [500, 800, 1200, 1300, 1900] executors, a FIFO local scheduler in each;
  * jobs: 50 % regular, 25 % non-streaming time-critical, 25 % streaming time-critical (beta_1..3); streaming jobs
    repeat batches, each drawing its executor request from a 10-slot discrete distribution and releasing its
    executors between batches;
  * arrivals: Bernoulli (rho = 0.08 per step, max(round(N(1.5, 1)), 1) jobs per event), Uniform intervals in
    [1, 39] and Beta (alpha = 4, beta = 2, M = 30, Eq. 5), the latter two with max(round(N(3, 1)), 1) jobs;
  * 500 jobs per episode; one job routed from the global buffer per step; metrics TMDL, AJDR, Eval_app, Score-A..D.

What the paper leaves open, and what we chose (JobProfile below; time unit = one step):
  * regular / time-critical jobs request U{50..350} executors for U{20..80} steps: a big job fills most of the
    smallest cluster (500), so where it lands matters, as the paper's -P / -E difference implies.
  * streaming jobs: base request U{20..150} executors with U{0..4} of the 10 slots at a peak of 1.5-2.5x the base
    (the paper's example: eight 30s and two 60s); batches of U{5..20} steps, U{15..40} batches per job, released
    every 1.5-3x the batch length. Streaming batches are most of the deadline checks, which is how TMDL reaches
    hundreds per 500 jobs in the paper.
  * deadline of one execution = ceil(runtime * (1 + slack)), slack U[0, 0.15]: tight, so a real wait for executors
    misses it (the paper: misses come from "prolonged resource allocation waiting time").
  * the FIFO local scheduler is strict: executions start in request order, each only when all its executors are
    free, and the head of the queue blocks the rest (YARN's FifoScheduler gives the head application every free
    container until it is satisfied).
  * the first execution's actual running time counts from submission to the global buffer (later batches from
    their release), so waiting for the global manager is delay too; OR is the execution's runtime.
  With these, 50 episodes (seeds 0-49) give SF-E TMDL / AJDR of 289 / 7.5 (Bernoulli), 375 / 10.8 (Uniform) and
  283 / 6.5 (Beta), against the paper's 189 / 5.8, 350 / 10.8 and 249 / 6.1. Random is far worse (TMDL 730-850,
  AJDR 42-56); SF-E is the best baseline by Eval_app and AJDR, while SF-P misses fewer deadlines (it spreads load
  by percentage, so streaming batches queue less) at about twice SF-E's AJDR.

Parameters (`--param KEY=VALUE`): jobs (500), the pattern's own (rho, a, b, alpha, beta, m, jobs_mu, jobs_sigma)
demand_scale (1.0): multiplies every executor request range, e.g. 0.8 for an "eased" and 1.25 for a
"stressed" workload as in the paper's Table III, and rate_scale (1.0): arrival events that many times as frequent
(rate_scaled below).
"""

from __future__ import annotations

from dataclasses import replace

from emulator.multicluster.scenario import RLFCScenario, pattern_with
from emulator.multicluster.sim import Federation
from emulator.multicluster.workload import ArrivalPattern, JobProfile
from emulator.scenario import register_scenario

CLUSTERS_000 = (500, 800, 1200, 1300, 1900)

PROFILE_000 = JobProfile(
    shares=(0.5, 0.25, 0.25),
    executors=(50, 350),
    runtime=(20, 80),
    stream_executors=(20, 150),
    peak_slots=(0, 4),
    peak_factor=(1.5, 2.5),
    stream_runtime=(5, 20),
    executions=(15, 40),
    period_factor=(1.5, 3.0),
    deadline_slack=(0.0, 0.15),
)

PATTERNS_000 = {
    "bernoulli": ArrivalPattern("bernoulli", rho=0.08, jobs_mu=1.5, jobs_sigma=1.0),
    "uniform": ArrivalPattern("uniform", a=1, b=39, jobs_mu=3.0, jobs_sigma=1.0),
    "beta": ArrivalPattern("beta", alpha=4.0, beta=2.0, m=30, jobs_mu=3.0, jobs_sigma=1.0),
}


def scaled_profile(profile: JobProfile, demand_scale: float) -> JobProfile:
    """The profile with every executor request range multiplied by `demand_scale` (Table III's eased/stressed)."""
    if not demand_scale > 0:
        raise ValueError(f"demand_scale must be positive, not {demand_scale}")

    def scale(r):
        return (max(1, round(r[0] * demand_scale)), max(1, round(r[1] * demand_scale)))

    return replace(profile, executors=scale(profile.executors), stream_executors=scale(profile.stream_executors))


def rate_scaled(pattern: ArrivalPattern, rate_scale: float) -> ArrivalPattern:
    """`pattern` with arrival events `rate_scale` times as frequent (mean interval divided by it; the number of
    jobs per event unchanged): Bernoulli rho·f, Uniform b such that (a + b) / 2 is divided by f, Beta M / f."""
    if not rate_scale > 0:
        raise ValueError(f"rate_scale must be positive, not {rate_scale}")
    if pattern.kind == "bernoulli":
        return replace(pattern, rho=min(1.0, pattern.rho * rate_scale))
    if pattern.kind == "uniform":
        return replace(pattern, b=max(pattern.a, round(2 * (pattern.a + pattern.b) / 2 / rate_scale - pattern.a)))
    return replace(pattern, m=max(1, round(pattern.m / rate_scale)))


def varied(scenario: RLFCScenario, demand_scale: float = 1.0, rate_scale: float = 1.0) -> RLFCScenario:
    """`scenario` with its executor requests times `demand_scale` and its arrival events `rate_scale` times as
    frequent (domain randomisation and held-out workloads for RL-FC)."""
    return RLFCScenario(scenario.name, scenario.federation, rate_scaled(scenario.pattern, rate_scale),
                        scaled_profile(scenario.profile, demand_scale), scenario.n_jobs, scenario.choices)


def _factory(pattern_name: str):
    def make(jobs: int = 500, demand_scale: float = 1.0, rate_scale: float = 1.0, **pattern_params) -> RLFCScenario:
        try:
            pattern = pattern_with(PATTERNS_000[pattern_name], pattern_params)
        except ValueError as e:
            raise ValueError(f"{e}; parameters: jobs, demand_scale and the arrival pattern's (rho, a, b, alpha, beta, m, "
                             "jobs_mu, jobs_sigma)") from None
        if int(jobs) < 1:
            raise ValueError(f"jobs must be at least 1, not {jobs}")
        return RLFCScenario(f"multicluster-{pattern_name}", Federation(CLUSTERS_000),
                            rate_scaled(pattern, float(rate_scale)),
                            scaled_profile(PROFILE_000, float(demand_scale)), int(jobs))

    return make


register_scenario("multicluster-bernoulli", "seed 000 RL-FC: 5 clusters, hybrid jobs, Bernoulli arrivals "
                  "(rho=0.08); TMDL, AJDR, Eval_app, Score-A..D", _factory("bernoulli"))
register_scenario("multicluster-uniform", "seed 000 RL-FC: 5 clusters, hybrid jobs, Uniform arrivals (a=1, b=39); "
                  "TMDL, AJDR, Eval_app, Score-A..D", _factory("uniform"))
register_scenario("multicluster-beta", "seed 000 RL-FC: 5 clusters, hybrid jobs, Beta arrivals (4, 2, M=30); "
                  "TMDL, AJDR, Eval_app, Score-A..D", _factory("beta"))
