"""The registered multi-cluster scenarios: names, parameters, and the papers' ordering of baselines."""

import numpy as np
import pytest

from emulator.drivers import InProcessDriver
from emulator.scenario import get_scenario, scenarios
from policy_engine.policy import create

NAMES = ["multicluster-bernoulli", "multicluster-uniform", "multicluster-beta", "hetero-elastic-uniform",
         "hetero-elastic-bernoulli", "hetero-elastic-beta"]


def test_registered_with_the_papers_settings():
    registered = {s.name for s in scenarios()}
    assert set(NAMES) <= registered
    u = get_scenario("multicluster-uniform")
    d = u.describe()
    assert d["clusters"] == [500, 800, 1200, 1300, 1900] and d["jobs"] == 500
    assert (d["pattern"]["a"], d["pattern"]["b"], d["pattern"]["jobs_mu"]) == (1, 39, 3.0)
    assert u.metrics == ("tmdl", "ajdr", "eval_app") and u.default_episodes == 50
    assert get_scenario("multicluster-bernoulli").pattern.rho == 0.08
    assert get_scenario("multicluster-bernoulli").pattern.jobs_mu == 1.5
    beta = get_scenario("multicluster-beta").pattern
    assert (beta.alpha, beta.beta, beta.m) == (4.0, 2.0, 30)
    h = get_scenario("hetero-elastic-uniform").describe()
    assert h["clusters"] == [800, 1200, 1500, 1800, 2300] and h["jobs"] == 1000
    assert h["hetero_factors"] == [70.0, 60.0, 100.0, 80.0, 90.0]
    assert h["elastic"] == [False, False, True, False, True]
    assert h["pattern"]["b"] == 33 and h["local_scheduler"] == "halted-first"
    assert get_scenario("hetero-elastic-uniform", b=40).pattern.b == 40


@pytest.mark.parametrize("params,match", [({"b": "x"}, "must be a number"), ({"q": 1}, "unknown parameter"),
                                          ({"b": 0}, "1 <= a <= b"), ({"jobs": 0}, "at least 1"),
                                          ({"b": 2.5}, "integer")])
def test_bad_parameters_are_refused_clearly(params, match):
    with pytest.raises(ValueError, match=match):
        get_scenario("hetero-elastic-uniform", **params)


def _mean(scenario, policy, key, seeds=range(3)):
    driver = InProcessDriver(create(policy))
    return float(np.mean([scenario.run_episode(driver, s)[key] for s in seeds]))


def test_stressed_workload_is_harder_than_eased():
    eased = get_scenario("multicluster-uniform", jobs=150, demand_scale=0.8)
    stressed = get_scenario("multicluster-uniform", jobs=150, demand_scale=1.25)
    assert eased.profile.executors == (40, 280) and stressed.profile.executors == (62, 438)
    assert _mean(eased, "sf-e", "tmdl") < _mean(stressed, "sf-e", "tmdl")
    assert _mean(eased, "sf-e", "ajdr") < _mean(stressed, "sf-e", "ajdr")


def test_papers_ordering_of_baselines_on_small_episodes():
    u = get_scenario("multicluster-uniform", jobs=200)
    assert _mean(u, "random", "eval_app") < _mean(u, "sf-p", "eval_app") < _mean(u, "sf-e", "eval_app")
    h = get_scenario("hetero-elastic-uniform", jobs=300)
    maf = _mean(h, "maf", "s_log")
    assert _mean(h, "ran", "s_log") < maf and _mean(h, "rr", "s_log") < maf
