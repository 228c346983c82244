"""Arrival patterns (RL-FC Sec. V-A) and job profiles of the generated workloads."""

import numpy as np
import pytest

from emulator.multicluster.workload import ArrivalPattern, JobProfile, beta_cdf, generate
from policy_engine.types import JobCategory


def test_uniform_interval_pmf_eq4():
    i, p = ArrivalPattern("uniform", a=1, b=39).interval_pmf()
    assert i.tolist() == list(range(1, 40))
    np.testing.assert_allclose(p, 1 / 39)


def test_beta_interval_pmf_eq5_matches_closed_form():
    # Beta(4, 2): I_x = 5 x^4 - 4 x^5, so P(i) = I(i/30) - I((i-1)/30)
    i, p = ArrivalPattern("beta", alpha=4, beta=2, m=30).interval_pmf()
    cdf = lambda x: 5 * x**4 - 4 * x**5  # noqa: E731
    np.testing.assert_allclose(p, cdf(i / 30) - cdf((i - 1) / 30), atol=1e-7)
    assert beta_cdf(np.array([0.5]), 2.0, 2.0)[0] == pytest.approx(0.5, abs=1e-7)


def test_bernoulli_interval_pmf_is_geometric():
    i, p = ArrivalPattern("bernoulli", rho=0.08).interval_pmf()
    np.testing.assert_allclose(p[:3], [0.08, 0.92 * 0.08, 0.92**2 * 0.08], rtol=1e-9)


@pytest.mark.parametrize("kind,mean_gap", [("uniform", 20.0), ("bernoulli", 12.5), ("beta", 30 * 4 / 6 + 0.5)])
def test_sampled_intervals_have_the_patterns_mean(kind, mean_gap):
    pat = ArrivalPattern(kind)
    times = pat.sample_event_times(np.random.default_rng(0), 20_000)
    assert np.diff(times).min() >= 1
    assert times[-1] / 20_000 == pytest.approx(mean_gap, rel=0.03)


def test_jobs_per_event_is_rectified_rounded_gaussian():
    n = ArrivalPattern("uniform", jobs_mu=1.5).sample_jobs_per_event(np.random.default_rng(1), 50_000)
    assert n.min() == 1
    # P(round(N(1.5, 1)) <= 1) = P(X < 1.5) = 0.5 exactly
    assert (n == 1).mean() == pytest.approx(0.5, abs=0.01)


def test_bad_patterns_are_refused():
    with pytest.raises(ValueError):
        ArrivalPattern("poisson")
    with pytest.raises(ValueError):
        ArrivalPattern("uniform", a=5, b=2)
    with pytest.raises(ValueError):
        ArrivalPattern("bernoulli", rho=0)
    with pytest.raises(ValueError):
        JobProfile(shares=(0.5, 0.5, 0.5))


def test_workload_is_a_function_of_the_seed():
    a = generate(200, ArrivalPattern(), JobProfile(), 5, seed=7)
    b = generate(200, ArrivalPattern(), JobProfile(), 5, seed=7)
    c = generate(200, ArrivalPattern(), JobProfile(), 5, seed=8)
    np.testing.assert_array_equal(a.arrival, b.arrival)
    np.testing.assert_array_equal(a.distribution, b.distribution)
    assert not np.array_equal(a.arrival, c.arrival)


def test_job_profiles_follow_the_categories():
    w = generate(20_000, ArrivalPattern(), JobProfile(), 5, seed=0)
    cat = w.category
    shares = [(cat == int(c)).mean() for c in (JobCategory.REGULAR, JobCategory.TIME_CRITICAL, JobCategory.STREAMING)]
    np.testing.assert_allclose(shares, [0.5, 0.25, 0.25], atol=0.015)
    assert np.all(np.diff(w.arrival) >= 0) and w.arrival.size == 20_000
    single = cat != int(JobCategory.STREAMING)
    assert np.all(w.executions[single] == 1)
    assert np.all(w.base_distribution[single] == w.base_distribution[single][:, :1])   # one count in all slots
    assert np.all(w.deadline[cat == int(JobCategory.REGULAR)] == 0)
    tc = cat != int(JobCategory.REGULAR)
    assert np.all(w.deadline[tc] >= w.standard_runtime[tc])
    st = cat == int(JobCategory.STREAMING)
    assert np.all(w.duration[st] == w.executions[st] * w.period[st])
    assert np.all(np.diff(w.base_distribution[st], axis=1) >= 0)     # base slots, then peaks
    np.testing.assert_array_equal(w.run, np.repeat(w.standard_runtime[:, None], 5, axis=1))  # RL-FC: identical


def test_heterogeneous_runtime_scales_within_the_sensitivity_range():
    profile = JobProfile(startup=(0, 0), request_jitter=0.0, transfer_share=(0.0, 0.0))
    eta = np.array([70.0, 60.0, 100.0, 80.0, 90.0])
    w = generate(2000, ArrivalPattern(), profile, 5, seed=0, hetero_factors=eta)
    h, sen, sr = w.expected_hetero, w.sensitivity, w.standard_runtime
    eff = np.clip(eta[None, :], (h - 10 * sen)[:, None], (h + 10 * sen)[:, None])
    np.testing.assert_array_equal(w.run, np.ceil(sr[:, None] * h[:, None] / eff).astype(int))
    # a job with h = 75, sen = 1 sees eta = 100 only as 85
    assert (sen >= 1).all() and (sen <= 5).all()
    np.testing.assert_array_equal(w.distribution, np.repeat(w.base_distribution[:, None, :], 5, axis=1))
    np.testing.assert_array_equal(w.cluster_deadline, np.repeat(w.deadline[:, None], 5, axis=1))
