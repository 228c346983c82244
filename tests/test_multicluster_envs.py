"""gymnasium environments over the multi-cluster scenarios."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import emulator.envs  # noqa: F401  (registers the environments)
from emulator.drivers import InProcessDriver
from emulator.envs.multicluster import MultiClusterEnv
from emulator.scenario import get_scenario
from policy_engine.features.multicluster import lsfc_state, rlfc_state
from policy_engine.policy import create

SMALL = {"jobs": 40}


@pytest.mark.parametrize("env_id,dim", [("yarnrl/MultiCluster-v0", 529), ("yarnrl/HeteroElastic-v0", 839)])
def test_registered_envs_pass_both_checkers(env_id, dim):
    env = gym.make(env_id, scenario_params=SMALL, max_jobs=4)
    assert env.observation_space.shape == (4 * dim,)
    assert env.action_space.n == 4 * 5
    check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(env.unwrapped, warn=True)


def test_observation_rows_are_the_papers_states_and_mask_matches_buffer():
    env = MultiClusterEnv("multicluster-uniform", max_jobs=4, scenario_params=SMALL)
    obs, info = env.reset(options={"episode": 0})
    rows = obs.reshape(4, 529)
    route_obs = env.route_obs
    n = len(route_obs.jobs)
    for j in range(min(n, 4)):
        np.testing.assert_array_equal(rows[j], rlfc_state(route_obs, j))
    assert not rows[min(n, 4):].any()
    mask = env.action_masks().reshape(4, 5)
    assert mask[:min(n, 4)].all() and not mask[min(n, 4):].any()

    env2 = MultiClusterEnv("hetero-elastic-uniform", max_jobs=2, scenario_params={"jobs": 20, "b": 40})
    obs2, _ = env2.reset(options={"episode": 1})
    np.testing.assert_array_equal(obs2.reshape(2, 839)[0], lsfc_state(env2.route_obs, 0))


def _play_env_as(policy_name, scenario, episode, params):
    """Drive the env with the actions a baseline would take; return the env's metrics and return."""
    env = MultiClusterEnv(scenario, max_jobs=64, scenario_params=params)
    policy = create(policy_name)
    env.reset(options={"episode": episode})
    total, done = 0.0, False
    while not done:
        d = policy.route(env.route_obs)
        cluster = [c.cluster_id for c in env.route_obs.clusters].index(d.cluster_id)
        _, r, done, _, info = env.step(d.job_index * env.n_clusters + cluster)
        total += r
    return info["episode_metrics"], total


@pytest.mark.parametrize("scenario,policy", [("multicluster-beta", "sf-e"), ("hetero-elastic-uniform", "maf")])
def test_env_steps_the_scenarios_own_simulator(scenario, policy):
    params = {"jobs": 60}
    metrics, ret = _play_env_as(policy, scenario, 5, params)
    sc = get_scenario(scenario, **params)
    assert metrics == sc.run_episode(InProcessDriver(create(policy)), 5)
    if scenario.startswith("multicluster"):
        assert ret == pytest.approx(-(0.02 * metrics["tmdl"] + metrics["ajdr"]))     # Eval_app's denominator
    else:
        assert ret == pytest.approx(-metrics["tmdl"] + 50 * (100 - metrics["ajer"]))  # S of S_log


def test_reset_seed_is_reproducible_and_bad_actions_are_refused():
    env = MultiClusterEnv("multicluster-bernoulli", max_jobs=3, scenario_params={"jobs": 15})
    a, _ = env.reset(seed=11)
    b, _ = env.reset(seed=11)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError):
        env.step(99)
    # an action naming an empty buffer slot still routes a buffered job
    _, _, _, _, info = env.step(2 * 5 + 1)
    assert info["decisions"] == 1
    with pytest.raises(ValueError):
        MultiClusterEnv("multicluster-uniform", state="deeprm")
