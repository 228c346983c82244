"""`yarnrl/DeepRM-v0`: DeepRM's environment (Mao et al. 2016; DeepRM) over algorithms.deeprm.sim.DeepRMSimulation.

The same simulator runs the `deeprm` scenario through the Schedule path. Observation: DeepRM's image,
Box(0, 1, (time_horizon, width), float32) (policy_engine.features.deeprm.image: cluster occupancy per resource
over the horizon, the M job slots, the backlog, steps since the last arrival). Action: Discrete(M + 1): start the
job in slot i (time stands still; reward 0), or the void action M - as is any empty slot or a job that does not
fit - which moves time one step and yields -sum over jobs in the system of 1/T_j. Terminates when every job of
the episode's sequence has finished; truncates after max_steps time steps. Parameters as the scenario's: load
(or job_rate), simu_len, res_slot, num_slots.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from algorithms.deeprm.sim import DeepRMConfig, DeepRMSimulation
from policy_engine.features.deeprm import ImageSpec

ENV_ID = "yarnrl/DeepRM-v0"


class DeepRMEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, res_slot: int = 20, num_slots: int = 10, **params: Any):
        self.config = DeepRMConfig(spec=ImageSpec(res_slot=int(res_slot), num_slots=int(num_slots)), **params)
        spec = self.config.spec
        self.num_slots = spec.num_slots
        self.observation_space = spaces.Box(0.0, 1.0, (spec.time_horizon, spec.width), np.float32)
        self.action_space = spaces.Discrete(self.num_slots + 1)
        self.sim: DeepRMSimulation | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.sim = DeepRMSimulation(self.config, int(self.np_random.integers(0, 2**31 - 1)))
        return self.sim.image(), {"time": 0}

    def step(self, action):
        if self.sim is None:
            raise RuntimeError("call reset() before step()")
        if not self.action_space.contains(action):
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        sim = self.sim
        action = int(action)
        job = sim.slots[action] if action < self.num_slots else None
        reward = 0.0
        if job is not None and sim.fits(job):
            sim.start_job(job)
        else:
            reward = sim.advance()
        sim.take_events()
        terminated = sim.done
        truncated = sim.truncated and not terminated
        info: dict[str, Any] = {"time": sim.t}
        if terminated or truncated:
            info["metrics"] = sim.metrics()
        return sim.image(), reward, terminated, truncated, info


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="algorithms.deeprm.env:DeepRMEnv")
