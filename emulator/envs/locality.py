"""`yarnrl/Locality-v0`: place containers on node heartbeats of the emulated MapReduce cluster (seed 001).

The environment steps emulator.yarn.cluster.YarnSimulation, the simulator behind the `locality-*` scenarios.
Each step is one container on the node whose heartbeat is being served: the agent picks which job's ask gets it,
or lets the node go (time moves to the next heartbeat on which something can be placed). While the node still
has room and the agent keeps placing, time stands still, as in DeepRM.

Observation: Box(0, 1, (max_candidates, NUM_FEATURES), float32): one row per pending ask, in FIFO order, with
policy_engine.features.locality.candidate_features (the best CLQLMRS state CL/DL/CRL/DRL/NO of that job on this
node, cache-local and node-local shares, cached input fraction, missed opportunities, ...); rows beyond the asks
are zero. Action: Discrete(max_candidates + 1): ask i, or max_candidates = let the node go. An action naming no
ask, or one that does not fit, lets the node go too.
Reward: seed 001's Table 2 weight of the state the started map task reads its block in (CL +1, DL +0.5,
CRL -0.25, DRL -0.5, NO -1) divided by the episode's number of map tasks (all stages), so a return is in [-1, 1]; 0 for
reduces and for letting the node go. Missed scheduling opportunities are counted as the engine counts them.
info["metrics"] on the last step: the scenario's metrics (local-task rate, job time, ...).
reset(options={"episode_seed": s}) runs the simulator episode that the scenario runs for seed s.
calibration=PATH (a file of `emulator calibrate`) runs the time model fitted to a real cluster and, where the
keyword arguments give none, its shape (nodes, racks, heartbeat, replication, shaped link); `nodes=...` and the
other locality scenario parameters build the cluster as the `locality-*` scenarios do.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from emulator.yarn.cluster import ClusterConfig, SimulationError, WorkloadConfig, YarnSimulation
from policy_engine.engine import OpportunityTracker, clip_schedule
from policy_engine.features.locality import NUM_FEATURES, REWARD, candidate_features
from policy_engine.policies.fifo import fifo_order
from policy_engine.types import Assignment, ScheduleDecision, ScheduleObservation

ENV_ID = "yarnrl/Locality-v0"


class LocalityEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, app: str = "wordcount", max_candidates: int = 8, max_steps: int = 100_000,
                 heartbeat_ms: int = 1000, max_idle_heartbeats: int = 5_000, calibration: str | None = None,
                 **workload: Any):
        if max_candidates < 1:
            raise ValueError(f"max_candidates must be >= 1, got {max_candidates}")
        self.times = None
        if calibration is not None or "times" in workload or "nodes" in workload:
            # a calibrated (or otherwise shaped) cluster: built as the locality scenario builds it
            from emulator.scenarios.locality import LocalityScenario

            scenario = LocalityScenario(app, heartbeat_ms=None if calibration and heartbeat_ms == 1000 else heartbeat_ms,
                                        calibration=calibration, **workload)
            self.workload, self.cluster, self.times = scenario.workload, scenario.cluster, scenario.times
        else:
            self.workload = WorkloadConfig(app=app, **workload)
            self.cluster = ClusterConfig(heartbeat_ms=heartbeat_ms)
        self.max_candidates = int(max_candidates)
        self.max_steps = int(max_steps)
        self.max_idle_heartbeats = int(max_idle_heartbeats)
        self.observation_space = spaces.Box(0.0, 1.0, (self.max_candidates, NUM_FEATURES), np.float32)
        self.action_space = spaces.Discrete(self.max_candidates + 1)
        self.sim: YarnSimulation | None = None
        self._obs: ScheduleObservation | None = None
        self._candidates: list = []

    # ------------------------------------------------------------------ helpers

    def _heartbeat(self) -> bool:
        """Advance to the next heartbeat needing a decision and count the opportunity; False when done."""
        if not self.sim.advance():
            self._obs = None
            return False
        obs = self.sim.observe()
        self.tracker.offer(obs)
        self._missed = {a.key: a.scheduling_opportunities for a in obs.asks}
        self._set(obs)
        return True

    def _set(self, obs: ScheduleObservation) -> None:
        self._obs = obs
        self._candidates = fifo_order(obs.asks)[: self.max_candidates]

    def _features(self) -> np.ndarray:
        out = np.zeros((self.max_candidates, NUM_FEATURES), dtype=np.float32)
        if self._obs is not None and self._candidates:
            out[: len(self._candidates)] = candidate_features(self._obs, self._candidates)
        return out

    def _info(self) -> dict[str, Any]:
        sim = self.sim
        info: dict[str, Any] = {"time_s": sim.now / 1000.0, "node": sim.hosts[sim.node] if sim.node >= 0 else ""}
        if self._obs is None:
            info["metrics"] = sim.metrics()
        return info

    # ------------------------------------------------------------------ gymnasium API

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        episode_seed = int(self.np_random.integers(0, 2**31 - 1))
        if options and "episode_seed" in options:  # replay a scenario episode: same seed, same cluster and jobs
            episode_seed = int(options["episode_seed"])
        self.sim = YarnSimulation(self.workload, episode_seed, self.cluster,
                                  max_idle_heartbeats=self.max_idle_heartbeats, times=self.times)
        self.tracker = OpportunityTracker()
        self._maps = self.sim.expected_maps
        self._steps = 0
        self._heartbeat()
        return self._features(), self._info()

    def step(self, action):
        if self.sim is None or self._obs is None:
            raise RuntimeError("call reset() before step(), and again after an episode ends")
        if not self.action_space.contains(action):
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        self._steps += 1
        reward = 0.0
        truncated = False
        placed = False
        action = int(action)
        obs = self._obs
        if action < len(self._candidates):
            ask = self._candidates[action]
            decision, _ = clip_schedule(obs, ScheduleDecision([Assignment(ask.ask_id, 1)]))
            if decision.assignments:
                before = self.sim.map_states.copy()
                self.sim.apply(decision)
                self.tracker.settle(obs, decision)
                if any(a.locality.name != "OFF_SWITCH" for a in decision.assignments):
                    self._missed[ask.key] = 0
                started = np.flatnonzero(self.sim.map_states - before)
                if started.size:
                    reward = float(REWARD[started[0]]) / self._maps
                placed = True
        try:
            if placed and self.sim.placeable():
                again = self.sim.observe()
                for a in again.asks:
                    a.scheduling_opportunities = self._missed.get(a.key, 0)
                self._set(again)
            else:
                self._heartbeat()
        except SimulationError:
            truncated = True
            self._obs = None
        self.sim.take_events()
        terminated = self._obs is None and not truncated
        if self._steps >= self.max_steps and not terminated:
            truncated = True
        return self._features(), reward, terminated, truncated, self._info()


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="emulator.envs.locality:LocalityEnv")
