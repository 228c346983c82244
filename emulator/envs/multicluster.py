"""`yarnrl/MultiCluster-v0` (RL-FC, scenario multicluster-uniform) and `yarnrl/HeteroElastic-v0` (seed
002, RL-LSFC, scenario hetero-elastic-uniform): gymnasium environments over the multi-cluster scenarios.

    import gymnasium as gym, emulator.envs
    env = gym.make("yarnrl/HeteroElastic-v0", scenario_params={"b": 36})

The environment is the global resource manager's seat: it steps the scenario's own simulator
(emulator.multicluster.sim, the one `emulator run` drives through a policy engine) with the agent's choice.

Observation: Box of shape (max_jobs * D,), float32, in [0, 1e6]: `max_jobs` rows of D flattened (reshape to
(max_jobs, D) to get them back). Row j is the paper's state vector of the j-th job in the global buffer (arrival
order): RL-FC's 529 values for RL-FC, RL-LSFC's 839 for RL-LSFC (policy_engine.features.multicluster).
Rows past the buffer are zero; jobs past `max_jobs` wait unseen. Every value is a non-negative quantity scaled to
about [0, 1] (missed-deadline counts can grow past 1, hence the loose upper bound).

Action: Discrete(max_jobs * C): action a routes buffered job a // C to cluster a % C (the papers' outer loop over
buffered jobs times their per-job action values). `action_masks()` marks the actions naming a buffered job; an
unmasked action naming an empty slot routes the job in slot (a // C) mod len(buffer) instead of failing.

Reward: the paper's episode objective spread over steps, so an episode's return is exactly
  RL-FC: -(0.02 * TMDL + AJDR)                (the denominator of Eval_app, Eq. 9),
  RL-LSFC: S = -TMDL + 50 * (100 - AJER)        (the argument of S_log),
times `reward_scale`. A step earns it for the deadlines missed and the jobs finished until the next decision.

Episodes: reset(seed=K) draws the episode's workload seed from the environment's RNG; reset(options={"episode": n})
plays exactly the workload of the scenario's episode seed n (what `emulator run --seed n` plays).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from emulator.multicluster.scenario import MultiClusterScenario, RLFCScenario
from emulator.scenario import get_scenario
from policy_engine.features.multicluster import lsfc_dim, lsfc_states, rlfc_dim, rlfc_states
from policy_engine.types import RouteDecision, RouteObservation


ENV_IDS = {"yarnrl/MultiCluster-v0": "multicluster-uniform", "yarnrl/HeteroElastic-v0": "hetero-elastic-uniform"}
OBS_HIGH = 1e6


class MultiClusterEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, scenario: str = "multicluster-uniform", state: str | None = None, max_jobs: int = 8,
                 reward_scale: float = 1.0, scenario_params: dict[str, Any] | None = None,
                 render_mode: str | None = None):
        sc = get_scenario(scenario, **(scenario_params or {}))
        if not isinstance(sc, MultiClusterScenario):
            raise ValueError(f"scenario {scenario!r} is not a multi-cluster scenario")
        if max_jobs < 1:
            raise ValueError(f"max_jobs must be at least 1, not {max_jobs}")
        if render_mode is not None:
            raise ValueError("this environment has no render modes")
        self.scenario = sc
        self.sim = sc.make_sim()
        self.seed_000 = isinstance(sc, RLFCScenario)
        state = state or ("rlfc" if self.seed_000 else "lsfc")
        if state not in ("rlfc", "lsfc"):
            raise ValueError(f"state must be 'rlfc' or 'lsfc', not {state!r}")
        self.state = state
        self.n_clusters = sc.federation.n
        self.max_jobs = max_jobs
        self.reward_scale = reward_scale
        dim = rlfc_dim(self.n_clusters) if state == "rlfc" else lsfc_dim(self.n_clusters)
        self._states = rlfc_states if state == "rlfc" else lsfc_states
        self.state_dim = dim
        self.observation_space = spaces.Box(0.0, OBS_HIGH, shape=(max_jobs * dim,), dtype=np.float32)
        self.action_space = spaces.Discrete(max_jobs * self.n_clusters)
        self.route_obs: RouteObservation | None = None
        self._missed = 0
        self._finished = 0
        self._delay = 0.0
        self._standard = 0.0
        self._events = 0

    # ------------------------------------------------------------ gymnasium API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        episode = options.get("episode")
        if episode is None:
            episode = int(self.np_random.integers(0, 2**31 - 1))
        self.route_obs = self.sim.reset(int(episode))
        self._missed, self._finished, self._delay, self._standard, self._events = 0, 0, 0.0, 0.0, 0
        reward = self._collect()  # nothing can have finished before the first decision
        assert reward == 0.0
        return self._observe(), self._info()

    def step(self, action):
        if self.route_obs is None:
            raise RuntimeError("episode is over; call reset()")
        a = int(action)
        if not 0 <= a < self.action_space.n:
            raise ValueError(f"action {action} outside Discrete({self.action_space.n})")
        job, cluster = divmod(a, self.n_clusters)
        job %= len(self.route_obs.jobs)
        self.route_obs = self.sim.step(RouteDecision(job, self.route_obs.clusters[cluster].cluster_id))
        reward = self._collect()
        terminated = self.route_obs is None
        info = self._info()
        if terminated:
            info["episode_metrics"] = self.scenario.episode_metrics(self.sim.result())
        return self._observe(), reward, terminated, False, info

    def action_masks(self) -> np.ndarray:
        """True for every action that names a buffered job (sb3-contrib's MaskablePPO reads this)."""
        mask = np.zeros((self.max_jobs, self.n_clusters), dtype=bool)
        if self.route_obs is not None:
            mask[:min(len(self.route_obs.jobs), self.max_jobs)] = True
        return mask.reshape(-1)

    # ------------------------------------------------------------ internals

    def _observe(self) -> np.ndarray:
        out = np.zeros((self.max_jobs, self.state_dim), dtype=np.float32)
        if self.route_obs is not None:
            obs = self.route_obs
            if len(obs.jobs) > self.max_jobs:
                obs = RouteObservation(obs.jobs[:self.max_jobs], obs.clusters, obs.time, obs.request_id)
            rows = self._states(obs)
            out[:rows.shape[0]] = np.minimum(rows, OBS_HIGH)
        return out.reshape(-1)

    def _collect(self) -> float:
        """The reward earned since the last call: misses and finished jobs, per the paper's objective."""
        sim = self.sim
        self._events += len(sim.take_events())
        missed = int(sim.missed.sum())
        d_missed = missed - self._missed
        d_finished = sim.finished - self._finished
        d_delay = sim.finished_delay - self._delay
        d_standard = sim.finished_standard - self._standard
        self._missed, self._finished = missed, sim.finished
        self._delay, self._standard = sim.finished_delay, sim.finished_standard
        n = sim.n_jobs
        if self.seed_000:
            r = -(0.02 * d_missed + d_delay / n)           # AJDR = sum over jobs of 100 * mean(AR/OR - 1) / N
        else:
            r = -d_missed + 50.0 * (100.0 * d_finished - d_standard) / n   # AJER = sum of 100 * mean(AR/SR) / N
        return float(r * self.reward_scale)

    def _info(self) -> dict[str, Any]:
        sim = self.sim
        return {"time": sim.t, "buffered": len(sim.buffer), "decisions": sim.decisions,
                "finished": sim.finished, "missed": int(sim.missed.sum()), "events": self._events}


for _id, _scenario in ENV_IDS.items():
    if _id not in gym.registry:
        gym.register(id=_id, entry_point="emulator.envs.multicluster:MultiClusterEnv", kwargs={"scenario": _scenario})
