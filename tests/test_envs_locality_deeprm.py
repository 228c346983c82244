"""gymnasium environments yarnrl/Locality-v0 and yarnrl/DeepRM-v0: registered, check_env clean, same simulators."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import emulator.envs  # noqa: F401  (registers the environments)
from policy_engine.features.locality import REWARD


@pytest.mark.parametrize("env_id", ["yarnrl/Locality-v0", "yarnrl/DeepRM-v0"])
def test_check_env_and_seeded_reset(env_id):
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    a, _ = env.reset(seed=7)
    b, _ = env.reset(seed=7)
    assert np.array_equal(a, b)


def test_locality_env_rewards_are_table2_weights_and_match_the_scenario_metrics():
    env = gym.make("yarnrl/Locality-v0", maps=12, jobs=1)
    obs, _ = env.reset(seed=3)
    done, rewards = False, []
    while not done:
        obs, r, term, trunc, info = env.step(0)   # always the head-of-line job: FIFO, one container at a time
        rewards.append(r)
        done = term or trunc
    assert term and not trunc
    m = info["metrics"]
    sim = env.unwrapped.sim
    expected = float((sim.map_states * REWARD).sum()) / 12
    assert sum(rewards) == pytest.approx(expected)
    assert m["local_task_rate"] == pytest.approx((sim.map_states[0] + sim.map_states[1]) / 12)


def test_locality_env_letting_nodes_go_never_runs_forever():
    env = gym.make("yarnrl/Locality-v0", maps=5, max_idle_heartbeats=50)
    env.reset(seed=0)
    for _ in range(100):
        _, _, term, trunc, _ = env.step(4)
        if term or trunc:
            break
    assert trunc and not term


def test_deeprm_env_void_moves_time_and_returns_minus_slowdowns():
    env = gym.make("yarnrl/DeepRM-v0", load=0.5, simu_len=30)
    env.reset(seed=1)
    sim = env.unwrapped.sim
    t = sim.t
    _, r, _, _, _ = env.step(10)
    assert sim.t == t + 1 and r <= 0
    total, done = r, False
    while not done:   # SJF through the environment's own actions
        fitting = [k for k, j in enumerate(sim.slots) if j is not None and sim.fits(j)]
        a = min(fitting, key=lambda k: sim.length[sim.slots[k]]) if fitting else 10
        _, r, term, trunc, info = env.step(a)
        total += r
        done = term or trunc
    assert term
    fin = sim.finish >= 0
    # The return is minus the sum over jobs of time in system / T_j (arrival at the step's end counts from there).
    assert -total == pytest.approx(((sim.finish[fin] - sim.arrival[fin]) / sim.length[fin]).sum(), rel=0.05)


def test_locality_env_replays_the_scenario_episode():
    """Always serving the head-of-line ask, one container per step, is FIFO: the env and the scenario agree."""
    from emulator.drivers import make_driver
    from emulator.scenario import get_scenario

    params = {"maps": 20, "jobs": 2, "interarrival_s": 4}
    with make_driver("fifo") as driver:
        expected = get_scenario("locality-sort", **params).run_episode(driver, 11)
    env = gym.make("yarnrl/Locality-v0", app="sort", **params)
    env.reset(seed=0, options={"episode_seed": 11})
    done = False
    while not done:
        _, _, term, trunc, info = env.step(0)
        done = term or trunc
    assert term and info["metrics"] == expected
