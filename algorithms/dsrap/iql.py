"""Independent Q-learning on `yarnrl/dsrap_v0`: a second learner, written only against the PettingZoo ParallelEnv
API (reset / step / action_space / agents), to show the environment trains other learners unchanged.

Each agent keeps its own Q-table over a coarse key of its observation (which task types it holds, its CPU
utilization in 5 bins) and learns from its own reward with one-step Q-learning and epsilon-greedy exploration.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class IQLConfig:
    episodes: int = 5
    alpha: float = 0.1
    gamma: float = 0.9
    epsilon: float = 0.2
    epsilon_end: float = 0.02
    reward_scale: float = 1e-3        # utility rates are in the hundreds per cluster
    seed: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def obs_key(obs: np.ndarray) -> int:
    held = (obs[9:13] > 0).astype(int)
    cpu_bin = min(int(obs[13] * 5), 4)
    return int(held @ np.array([1, 2, 4, 8])) * 5 + cpu_bin


class IndependentQLearning:
    N_KEYS = 16 * 5

    def __init__(self, env, config: IQLConfig = IQLConfig()):
        self.env = env
        self.config = config
        self.rng = np.random.default_rng(config.seed)
        self.q = {a: np.zeros((self.N_KEYS, env.action_space(a).n)) for a in env.possible_agents}

    def act(self, agent: str, obs: np.ndarray, epsilon: float) -> int:
        if self.rng.random() < epsilon:
            return int(self.rng.integers(self.env.action_space(agent).n))
        row = self.q[agent][obs_key(obs)]
        return int(self.rng.choice(np.flatnonzero(row == row.max())))

    def run_episode(self, seed: int, epsilon: float, learn: bool) -> float:
        """One episode; returns its mean system utility rate (the sum of the agents' rewards per step)."""
        c = self.config
        obs, _ = self.env.reset(seed=seed, options={"episode": seed})
        total, steps = 0.0, 0
        while self.env.agents:
            actions = {a: self.act(a, obs[a], epsilon) for a in self.env.agents}
            nxt, rewards, terms, truncs, _ = self.env.step(actions)
            total += sum(rewards.values())
            steps += 1
            if learn:
                for a, act in actions.items():
                    k, k2 = obs_key(obs[a]), obs_key(nxt[a])
                    target = rewards[a] * c.reward_scale
                    if not (terms[a] or truncs[a]):
                        target += c.gamma * self.q[a][k2].max()
                    self.q[a][k, act] += c.alpha * (target - self.q[a][k, act])
            obs = nxt
        return total / max(steps, 1)

    def train(self, progress=None) -> list[float]:
        c = self.config
        curve = []
        for ep in range(c.episodes):
            frac = ep / max(c.episodes - 1, 1)
            eps = c.epsilon + (c.epsilon_end - c.epsilon) * frac
            curve.append(self.run_episode(c.seed + ep, eps, learn=True))
            if progress is not None:
                progress(ep, curve[-1])
        return curve
