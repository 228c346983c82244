"""`yarnrl/dsrap_v0`: a PettingZoo ParallelEnv over the DSRAP simulator (DSRAP), one agent per cluster manager.

    from algorithms.dsrap.env import parallel_env
    env = parallel_env(load="heavy", steps=2000)
    obs, infos = env.reset(seed=0)
    obs, rewards, terms, truncs, infos = env.step({a: env.action_space(a).sample() for a in env.agents})

Agents: "manager_1" .. "manager_16" (the paper's cluster numbers), all acting every step; an agent holding no tasks
this step acts too, with no effect.

Observation (Box(0, 1, (15,), float32)), the manager's local view as in Learning1's abstract state:
  [0:9]   s_c: the fraction of its nodes at each (CPU level, network level), levels low / mid / high by the
          equally likely tertiles of a Gaussian fitted to the task types' mean demands;
  [9:13]  how many tasks of each type it holds, / 50, capped at 1;
  [13]    its CPU utilization;  [14] its network utilization.
Action (Discrete(8)): a // 4 is the first decision, 0 = best-first over all tasks, 1 = best-first leaving ordinary
tasks (the lowest utility rate) unallocated, keeping room for others; a % 4 is the second decision, the neighbour
(by position in the sorted neighbour list, modulo its number of neighbours) every task not allocated is forwarded
to, up to the transfer limit.
Reward: the utility rate of the tasks running on the agent's cluster after the step; the agents' rewards sum to the
system's utility rate (Eq. 1), so the game is fully cooperative.
Episodes end by truncation after `steps` steps (all agents at once).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from algorithms.dsrap.config import DsrapConfig
from algorithms.dsrap.sim import DsrapSim
from algorithms.dsrap.rules import LEVELS, Z_TERTILE, best_first, forward_order, resource_features
from policy_engine.types import ManagerView, RouteDecision

ENV_ID = "yarnrl/dsrap_v0"
OBS_DIM = LEVELS * LEVELS + 4 + 2
N_ACTIONS = 8
RESERVE_SKIPS = 0   # type index left unallocated by the "reserve" first decision: ordinary


def parallel_env(**kwargs) -> DsrapParallelEnv:
    return DsrapParallelEnv(**kwargs)


class DsrapParallelEnv(ParallelEnv):
    metadata = {"name": "yarnrl/dsrap_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, load: str = "heavy", steps: int = 2000, render_mode: str | None = None, **params: Any):
        if render_mode is not None:
            raise ValueError("this environment has no render modes")
        self.config = DsrapConfig(load=load).with_params(steps=steps, **params)
        self.sim = DsrapSim(self.config, tag="dsrap_v0")
        self.possible_agents = [f"manager_{c}" for c in self.sim.managers]
        self._cluster = {a: c for a, c in zip(self.possible_agents, self.sim.managers)}
        self._index = {a: k for k, a in enumerate(self.possible_agents)}
        feats = np.asarray(self.config.type_features)
        rates = sum(self.config.arrival_rates.values())
        w = rates / rates.sum()
        mean = np.array([w @ feats[:, 0], w @ feats[:, 1]])
        std = np.sqrt(np.array([w @ (feats[:, 0] + (feats[:, 0] - mean[0]) ** 2),
                                w @ (feats[:, 1] + (feats[:, 1] - mean[1]) ** 2)]))   # Poisson mixture
        self._cuts = np.stack([mean - Z_TERTILE * std, mean + Z_TERTILE * std], axis=1)
        self._rng = np.random.default_rng()
        self.agents: list[str] = []

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> spaces.Box:
        return spaces.Box(0.0, 1.0, shape=(OBS_DIM,), dtype=np.float32)

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> spaces.Discrete:
        return spaces.Discrete(N_ACTIONS)

    # ------------------------------------------------------------------

    def _observe(self, agent: str) -> np.ndarray:
        c = self._cluster[agent]
        sl = self.sim.net.node_slice[c]
        cpu_free, net_free = self.sim.cpu_free[sl], self.sim.net_free[sl]
        counts = np.asarray(resource_features(cpu_free, net_free, self._cuts, cap=1 << 30), dtype=np.float64)
        q = self.sim.queue[c]
        held = np.bincount(self.sim.ttype[q], minlength=4) / 50.0
        cpu_cap, net_cap = self.sim.net.cpu_capacity[sl].sum(), self.sim.net.net_capacity[sl].sum()
        util = [1.0 - cpu_free.sum() / cpu_cap, 1.0 - net_free.sum() / net_cap]
        obs = np.concatenate([counts / cpu_free.size, np.minimum(held, 1.0), util])
        return np.clip(obs, 0.0, 1.0).astype(np.float32)

    def _decision(self, view: ManagerView, action: int) -> RouteDecision:
        admit, slot = divmod(int(action), 4)
        if admit == 1:
            keep = view.task_type != RESERVE_SKIPS
            part = ManagerView(view.cluster_id, view.cpu_free, view.net_free, view.cpu_capacity, view.net_capacity,
                               view.neighbors, view.delays, view.task_id[keep], view.task_type[keep],
                               view.task_cpu[keep], view.task_net[keep], view.task_utility[keep],
                               view.task_wait[keep], view.task_hops[keep], view.transfer_limit)
            task_node = np.full(view.task_id.size, -1, dtype=np.int64)
            task_node[keep] = best_first(part)
        else:
            task_node = best_first(view)
        task_next = np.full(task_node.size, -1, dtype=np.int64)
        if view.neighbors.size:
            idx = forward_order(view, task_node < 0)
            task_next[idx] = view.neighbors[slot % view.neighbors.size]
        return RouteDecision(0, view.cluster_id, task_node, task_next)

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        episode = (options or {}).get("episode")
        self.sim.reset(int(episode) if episode is not None else int(self._rng.integers(0, 2 ** 31 - 1)))
        self.sim._begin_step()
        self.agents = list(self.possible_agents)
        return {a: self._observe(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions: dict[str, int]):
        sim = self.sim
        for agent in self.agents:
            c = self._cluster[agent]
            if sim.queue[c].size and agent in actions:
                sim.apply(c, self._decision(sim.observation(c).manager, actions[agent]))
        sim._end_step()
        rewards = {a: float(sim.cluster_util[self._index[a]]) for a in self.agents}
        system = sim.running_util
        done = sim.done
        if not done:
            sim._begin_step()
        obs = {a: self._observe(a) for a in self.agents}
        terminations = {a: False for a in self.agents}
        truncations = {a: done for a in self.agents}
        infos = {a: {"utility_rate": system} for a in self.agents}
        if done:
            self.agents = []
        return obs, rewards, terminations, truncations, infos

    def render(self):
        return None

    def close(self):
        pass

    def state(self) -> np.ndarray:
        return np.concatenate([self._observe(a) for a in self.possible_agents])
