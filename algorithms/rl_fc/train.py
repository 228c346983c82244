"""RL-FC learner (RL-FC, Liu et al., sections IV-V): Monte-Carlo action values, replay buffer, improved ε-greedy.

One episode of the scenario is played through an in-process driver. The behaviour policy below scores every
buffered job with the value network (each job's 529-dimension state gives one value per cluster) and picks, per
Eq. 3, a random (job, cluster) pair, the guide rule's choice (SF-E) or the best-valued pair. The scenario reports
each job's outcome (JobFinished with its delay ratio and missed deadlines, DeadlineMissed with its time) through
the driver; a listener on the engine collects them. At the end of the episode every decision gets its value
(Eq. 1 for time-critical jobs, Eq. 2 for regular ones)

    value_i = -λ·MDL_i - γ·MDL_{t>t_i} - η·DelayResult_i

and joins a replay buffer of the latest 50,000 decisions; one training pass on 1,000 sampled decisions then fits
the network's output for the action taken to its value (mean squared error).

Everything tunable is in RlFcConfig (override with `emulator train ... --set key=value`). The trained weights are
saved as a `rl-fc` model artifact that algorithms.rl_fc.policy serves with numpy.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from policy_engine.extras import require

require("torch", extra="train", feature="RL-FC training (emulator train --algo rl-fc)")

import torch  # noqa: E402
from torch import nn  # noqa: E402

from emulator.drivers import InProcessDriver  # noqa: E402
from emulator.learners import common  # noqa: E402
from emulator.learners.replay_run import (  # noqa: E402
    BEST_MODEL,
    CHECKPOINT,
    CURVE_PNG,
    MODEL,
    CurveStyle,
    ReplayRun,
    train_seed,
)
from emulator.learners.rollouts import RolloutSpec  # noqa: E402
from emulator.multicluster.metrics import eval_app, s_log  # noqa: E402
from emulator.scenario import Scenario  # noqa: E402
from emulator.training import register_algo  # noqa: E402
from policy_engine.policy import ROUTE, OptionError, Policy, create  # noqa: E402
from algorithms.rl_fc.policy import JOB_ORDERS, LAYER_NAMES, POLICY_NAME, RlFcPolicy, ValueNetwork, job_states  # noqa: E402
from policy_engine.types import (  # noqa: E402
    DeadlineMissed,
    Event,
    JobCategory,
    JobFinished,
    RouteDecision,
    RouteObservation,
)

SUMMARY_METRICS = ("tmdl", "ajdr", "ajer", "s_log", "eval_app")


@dataclass
class RlFcConfig:
    # Value network (section IV-B): two fully connected ReLU hidden layers, one output per cluster.
    hidden: tuple[int, ...] = (2000, 500)
    # Eq. 1-2 weights: own missed deadlines, all missed deadlines during the job's life, delay ratio.
    lam: float = 1.0
    gamma: float = 0.02
    eta: float = 0.1
    # Replay buffer of the latest decisions; one training pass per episode on a random sample of them.
    buffer_size: int = 50_000
    train_samples: int = 1000
    # The paper trains "by stochastic gradient descent" without giving the optimiser's settings; the sample of
    # 1,000 is cut into minibatches of this size, one Adam step each (plain SGD: optimizer="sgd").
    minibatch: int = 100
    optimizer: str = "adam"
    lr: float = 1e-4
    # Improved ε-greedy (Eq. 3): with probability ε1 explore, then random with ε2 else the guide's choice.
    # ε1 falls linearly from eps1_start to eps1_end over the first eps1_fraction of the episodes (1900 of 2000).
    episodes: int = 2000
    eps1_start: float = 0.8
    eps1_end: float = 1e-5
    eps1_fraction: float = 0.95
    eps2: float = 0.5
    guide: str = "sf-e"
    improved_greedy: bool = True  # False: exploration is random actions only (the ablation of Fig. 4d)
    # Which buffered job each decision routes (algorithms.rl_fc.policy.JOB_ORDERS): "best" the paper's greedy
    # (job, cluster) pair; "oldest" only the cluster of the oldest buffered job is chosen (behaviour and validation
    # alike), and the model serves that way.
    job_order: str = "best"
    # Evaluation of the greedy policy on fixed validation workloads (seeds disjoint from training and from the
    # benchmark's test seeds 0..49), against the baselines on the same workloads: the curve of Fig. 4.
    eval_every: int = 50
    eval_episodes: int = 10
    eval_seed: int = 900_000
    baselines: tuple[str, ...] = ("random", "sf-p", "lf-p", "sf-e", "lf-e")
    # Training workloads: episode e of a run seeded k uses workload seed train_seed + 100_000·k + e
    # (randomised workloads, section IV-C3: every episode is a fresh sample).
    train_seed: int = 1_000_000
    # Episodes played with the same weights (emulator.learners.common.run_episodes): round r is played by the
    # rollout workers with the weights learned from rounds 0..r-2 while the learner fits round r-1. One training
    # pass per episode as in the paper; the behaviour policy lags the learner by at most 2·rollout_batch-1 episodes.
    # Not the worker count: the same value trains the same model with any --workers.
    rollout_batch: int = 5
    # Domain randomisation (not in the paper): every training episode draws its executor-request scale and its
    # arrival-rate scale uniformly from these (lo, hi) ranges (emulator.scenarios.multicluster.varied), seeded by
    # (seed, episode); validation stays on the scenario's own workload. Empty: the scenario's workload only.
    demand_scales: tuple[float, ...] = ()
    rate_scales: tuple[float, ...] = ()
    # Warm start: an `rl-fc` model artifact whose weights the network starts from (e.g. a shipped model fine-tuned
    # with domain randomisation); empty: random initial weights.
    init: str = ""
    checkpoint_every: int = 25
    threads: int = 1

    def decay_episodes(self) -> int:
        return max(1, round(self.eps1_fraction * self.episodes))

    @classmethod
    def from_options(cls, options: dict[str, Any], **overrides: Any) -> RlFcConfig:
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - set(fields))
        if unknown:
            raise OptionError(f"unknown rl-fc hyper-parameter(s) {', '.join(unknown)}; valid: {', '.join(fields)}")
        values = {**options, **{k: v for k, v in overrides.items() if v is not None}}
        try:
            for k in ("hidden", "baselines", "demand_scales", "rate_scales"):
                if k in values:
                    v = values[k]
                    if isinstance(v, str):
                        v = [x for x in v.strip("[]()").split(",") if x]
                    v = v if isinstance(v, (list, tuple)) else [v]
                    if k == "hidden" and not all(str(x).isdigit() for x in v):
                        raise ValueError(f"hidden takes layer sizes like 2000,500, not {values[k]!r}")
                    values[k] = (tuple(int(x) for x in v) if k == "hidden" else
                                 tuple(float(x) for x in v) if k.endswith("_scales") else tuple(v))
            common.check_numbers(fields, values)
            cfg = cls(**values)
            cfg.validate()
        except (ValueError, TypeError) as e:
            raise OptionError(f"rl-fc hyper-parameters: {e}") from None
        return cfg

    def validate(self) -> None:
        if self.job_order not in JOB_ORDERS:
            raise ValueError(f"job_order must be one of {', '.join(JOB_ORDERS)}, not {self.job_order!r}")
        if not self.hidden or any(h <= 0 for h in self.hidden):
            raise ValueError(f"hidden must be positive layer sizes, got {self.hidden}")
        if self.episodes <= 0:
            raise ValueError("episodes must be positive")
        if not 0 <= self.eps2 <= 1 or not 0 <= self.eps1_end <= self.eps1_start <= 1:
            raise ValueError("need 0 <= eps1_end <= eps1_start <= 1 and 0 <= eps2 <= 1")
        if self.optimizer not in ("adam", "sgd"):
            raise ValueError(f"optimizer must be adam or sgd, not {self.optimizer!r}")
        if self.buffer_size < self.train_samples or self.minibatch <= 0 or self.train_samples <= 0:
            raise ValueError("need 0 < minibatch, 0 < train_samples <= buffer_size")
        if self.rollout_batch < 1 or self.eval_every < 1 or self.checkpoint_every < 1:
            raise ValueError("rollout_batch, eval_every and checkpoint_every must be at least 1")
        for k in ("demand_scales", "rate_scales"):
            r = getattr(self, k)
            if r and (len(r) != 2 or not 0 < r[0] <= r[1] or not all(math.isfinite(x) for x in r)):
                raise ValueError(f"{k} takes a range lo,hi with 0 < lo <= hi (e.g. 0.7,1.3), not {r}")

    def randomised(self) -> bool:
        return bool(self.demand_scales or self.rate_scales)

    def draw_workload(self, seed: int, episode: int) -> tuple[float, float]:
        """(demand_scale, rate_scale) of training `episode` (1-based): 1.0 where no range is set."""
        rng = np.random.default_rng([seed, 2, episode])
        d = float(rng.uniform(*self.demand_scales)) if self.demand_scales else 1.0
        r = float(rng.uniform(*self.rate_scales)) if self.rate_scales else 1.0
        return d, r


def epsilon1(episode: int, cfg: RlFcConfig) -> float:
    """ε1 of 1-based `episode`: linear from eps1_start (episode 1) to eps1_end (episode decay_episodes), then flat."""
    n = cfg.decay_episodes()
    if episode >= n:
        return cfg.eps1_end
    frac = (episode - 1) / (n - 1) if n > 1 else 1.0
    return cfg.eps1_start + (cfg.eps1_end - cfg.eps1_start) * max(frac, 0.0)


def action_values(time_critical: np.ndarray, deploy_time: np.ndarray, finish_time: np.ndarray,
                  own_missed: np.ndarray, delay_ratio: np.ndarray, miss_times: np.ndarray,
                  cfg: RlFcConfig) -> np.ndarray:
    """Eq. 1 (time-critical) and Eq. 2 (regular): one Monte-Carlo value per decision.

    MDL_{t>t_i} counts every missed deadline in the whole federation strictly after the job's deployment time and
    up to (including) its termination; own_missed is the job's own MDL_i; delay_ratio its DelayResult_i.
    """
    miss = np.sort(np.asarray(miss_times, dtype=float))
    deploy = np.asarray(deploy_time, dtype=float)
    finish = np.asarray(finish_time, dtype=float)
    after = np.searchsorted(miss, finish, side="right") - np.searchsorted(miss, deploy, side="right")
    own = np.where(np.asarray(time_critical, dtype=bool), np.asarray(own_missed, dtype=float), 0.0)
    return -cfg.lam * own - cfg.gamma * np.maximum(after, 0) - cfg.eta * np.asarray(delay_ratio, dtype=float)


class ReplayBuffer:
    """The latest `capacity` decisions (state, action index, value) in preallocated ring arrays.

    A value is one number, or `value_dim` numbers (RL-LSFC's value components)."""

    def __init__(self, capacity: int, state_dim: int, value_dim: int | None = None):
        self.capacity = capacity
        self.states = np.zeros((capacity, state_dim), dtype=np.float32)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.values = np.zeros((capacity,) if value_dim is None else (capacity, value_dim), dtype=np.float32)
        self.next = 0   # slot the next decision goes to
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def add(self, states: np.ndarray, actions: np.ndarray, values: np.ndarray) -> None:
        n = len(actions)
        if n > self.capacity:  # only the latest `capacity` can stay
            states, actions, values = states[-self.capacity:], actions[-self.capacity:], values[-self.capacity:]
            n = self.capacity
        idx = (self.next + np.arange(n)) % self.capacity
        self.states[idx] = states
        self.actions[idx] = actions
        self.values[idx] = values
        self.next = int((self.next + n) % self.capacity)
        self.size = min(self.size + n, self.capacity)

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        idx = rng.choice(self.size, size=min(n, self.size), replace=False)
        return self.states[idx], self.actions[idx], self.values[idx]

    def state_dict(self) -> dict[str, Any]:
        # Stored in insertion order (oldest first) so a restored buffer evicts in the same order.
        order = (np.arange(self.size) + (self.next - self.size)) % self.capacity
        return {"states": self.states[order].copy(), "actions": self.actions[order].copy(),
                "values": self.values[order].copy()}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        self.next, self.size = 0, 0
        self.add(np.asarray(d["states"]), np.asarray(d["actions"]), np.asarray(d["values"]))


class EpisodeLog:
    """One episode's decisions and the outcomes the scenario reports for them (a listener on the engine)."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.states: list[np.ndarray] = []
        self.actions: list[int] = []
        self.deploy_time: list[float] = []
        self.time_critical: list[bool] = []
        self.index_of_job: dict[str, int] = {}
        self.index_of_decision: dict[str, int] = {}
        self.finished: dict[int, tuple[float, float, int]] = {}  # decision -> (finish time, delay ratio, own MDL)
        self.own_missed: dict[int, int] = {}
        self.miss_times: list[float] = []

    def decided(self, obs: RouteObservation, states: np.ndarray, job: int, cluster_index: int) -> None:
        j = obs.jobs[job]
        self.index_of_job[j.job_id] = len(self.actions)
        self.states.append(states[job])
        self.actions.append(cluster_index)
        self.deploy_time.append(float(obs.time))
        self.time_critical.append(j.category in (JobCategory.TIME_CRITICAL, JobCategory.STREAMING))

    def _decision(self, ev: Event, job_id: str) -> int | None:
        i = self.index_of_job.get(job_id)
        return i if i is not None else self.index_of_decision.get(ev.decision_id)

    def on_event(self, ev: Event) -> None:
        if isinstance(ev, DeadlineMissed):
            self.miss_times.append(float(ev.timestamp_ms))
            i = self._decision(ev, ev.job_id)
            if i is not None:
                self.own_missed[i] = self.own_missed.get(i, 0) + 1
        elif isinstance(ev, JobFinished):
            i = self._decision(ev, ev.job_id)
            if i is not None:
                self.finished[i] = (float(ev.timestamp_ms), float(ev.delay_ratio), int(ev.missed_deadlines))

    def knowledge(self, cfg: RlFcConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(states, actions, values) of the decisions whose job finished; values by Eq. 1-2."""
        done = sorted(self.finished)
        if not done:
            return np.zeros((0, 0), np.float32), np.zeros(0, np.int64), np.zeros(0, np.float32)
        finish = np.array([self.finished[i][0] for i in done])
        delay = np.array([self.finished[i][1] for i in done])
        # A job's own MDL: its DeadlineMissed events, or the count its JobFinished reports if that is larger.
        own = np.array([max(self.own_missed.get(i, 0), self.finished[i][2]) for i in done])
        values = action_values(np.array(self.time_critical)[done], np.array(self.deploy_time)[done], finish, own,
                               delay, np.array(self.miss_times), cfg)
        return (np.stack([self.states[i] for i in done]), np.array(self.actions, dtype=np.int64)[done],
                values.astype(np.float32))


class ExplorationPolicy(Policy):
    """The learner's behaviour policy (Eq. 3 and Algorithm 1); not a served policy: it explores with an RNG."""

    name = "rl-fc-explore"
    capabilities = frozenset({ROUTE})
    job_states = staticmethod(job_states)   # the state of every buffered job (RL-LSFC's learner swaps it)

    def __init__(self, cfg: RlFcConfig, rng: np.random.Generator, log: EpisodeLog):
        self.cfg = cfg
        self.rng = rng
        self.log = log
        self.network: ValueNetwork | None = None
        self.eps1 = cfg.eps1_start
        self.guide = create(cfg.guide) if cfg.improved_greedy else None

    def route(self, obs: RouteObservation) -> RouteDecision:
        states = self.job_states(obs)
        n_clusters = len(obs.clusters)
        if getattr(self.cfg, "job_order", "best") == "oldest":
            return self._route_oldest(obs, states, n_clusters)
        if self.rng.random() < self.eps1:
            if self.guide is None or self.rng.random() < self.cfg.eps2:
                job, c = divmod(int(self.rng.integers(len(obs.jobs) * n_clusters)), n_clusters)
            else:
                d = self.guide.route(obs)
                job = d.job_index
                c = next(i for i, cl in enumerate(obs.clusters) if cl.cluster_id == d.cluster_id)
        else:
            job, c = divmod(int(np.argmax(self.network(states))), n_clusters)
        self.log.decided(obs, states, job, c)
        return RouteDecision(job, obs.clusters[c].cluster_id)

    def _route_oldest(self, obs: RouteObservation, states: np.ndarray, n_clusters: int) -> RouteDecision:
        """job_order=oldest: the same ε-greedy over the oldest buffered job's clusters (the guide's cluster when
        the guide picks that job, else a random one)."""
        c = None
        if self.rng.random() < self.eps1:
            if self.guide is not None and self.rng.random() >= self.cfg.eps2:
                d = self.guide.route(obs)
                if d.job_index == 0:
                    c = next(i for i, cl in enumerate(obs.clusters) if cl.cluster_id == d.cluster_id)
            if c is None:
                c = int(self.rng.integers(n_clusters))
        else:
            c = int(np.argmax(self.network(states[:1])[0]))
        self.log.decided(obs, states, 0, c)
        return RouteDecision(0, obs.clusters[c].cluster_id)


class ValueMLP(nn.Module):
    """The value network: state -> one action value per cluster (section IV-B); layer names match the artifact."""

    def __init__(self, state_dim: int, n_actions: int, hidden: tuple[int, ...]):
        super().__init__()
        if len(hidden) != len(LAYER_NAMES) - 1:
            raise ValueError(f"rl-fc has {len(LAYER_NAMES) - 1} hidden layers; got hidden={hidden}")
        self.hidden1 = nn.Linear(state_dim, hidden[0])
        self.hidden2 = nn.Linear(hidden[0], hidden[1])
        self.output = nn.Linear(hidden[1], n_actions)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.output(torch.relu(self.hidden2(torch.relu(self.hidden1(x)))))


def network_tensors(net) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy().copy() for k, v in net.state_dict().items()}


def _mean_metrics(episodes: list[dict[str, float]]) -> dict[str, float]:
    tmdl = float(np.mean([e["tmdl"] for e in episodes]))
    if "ajdr" not in episodes[0]:
        # A RL-LSFC scenario (RL-FC as the comparator of RL-LSFC's Table 6): it reports AJER and S_log, and
        # S_log (higher is better) takes Eval_app's place in model selection and the curve.
        ajer = float(np.mean([e["ajer"] for e in episodes]))
        score = s_log(tmdl, ajer)
        return {"tmdl": tmdl, "ajer": ajer, "s_log": score, "eval_app": score}
    ajdr = float(np.mean([e["ajdr"] for e in episodes]))
    # Eq. 9 on the episode means, as the paper's Fig. 4 does.
    return {"tmdl": tmdl, "ajdr": ajdr, "eval_app": eval_app(tmdl, ajdr)}


def evaluate_policy(scenario: Scenario, policy: Policy, cfg: RlFcConfig) -> dict[str, float]:
    driver = InProcessDriver(policy)
    return _mean_metrics([scenario.run_episode(driver, cfg.eval_seed + i) for i in range(cfg.eval_episodes)])


# ---------------------------------------------------------------- what a rollout worker runs (any pool)

_WORKER: dict[str, Any] = {}


def worker_setup(scenario: Scenario, cfg: RlFcConfig, seed: int) -> None:
    _WORKER.update(scenario=scenario, cfg=cfg, seed=seed)


def play_episode(weights: dict[str, np.ndarray], episode: int) -> dict[str, Any]:
    """Training episode `episode` (1-based) with the behaviour policy on `weights`: its valued decisions and metrics.
    A pure function of its arguments and the worker's set-up: its exploration RNG is seeded by (seed, episode)."""
    scenario, cfg, seed = _WORKER["scenario"], _WORKER["cfg"], _WORKER["seed"]
    log = EpisodeLog()
    behaviour = ExplorationPolicy(cfg, np.random.default_rng([seed, 1, episode]), log)
    behaviour.network = ValueNetwork(weights)
    behaviour.eps1 = epsilon1(episode, cfg)
    driver = InProcessDriver(behaviour)
    driver.engine.listeners.append(log.on_event)
    workload = {}
    if cfg.randomised():
        from emulator.scenarios.multicluster import varied

        d, r = cfg.draw_workload(seed, episode)
        scenario = varied(scenario, d, r)
        workload = {"demand_scale": round(d, 4), "rate_scale": round(r, 4)}
    metrics = scenario.run_episode(driver, train_seed(cfg, seed, episode - 1))
    states, actions, values = log.knowledge(cfg)
    return {"episode": episode, "eps1": behaviour.eps1, "states": states, "actions": actions, "values": values,
            "decisions": len(log.actions), "tmdl": float(metrics.get("tmdl", math.nan)),
            "ajdr": float(metrics.get("ajdr", math.nan)), **workload}


def eval_episode(weights: dict[str, np.ndarray] | None, name: str, episode_seed: int) -> dict[str, float]:
    """One validation episode of the greedy learned policy (`weights`) or of baseline `name`."""
    policy = (RlFcPolicy(tensors=weights, job_order=_WORKER["cfg"].job_order) if weights is not None
              else create(name))
    return _WORKER["scenario"].run_episode(InProcessDriver(policy), episode_seed)


class RlFcTrainer(ReplayRun):
    """Holds the network, optimiser, buffer and RNGs of one run; checkpoints all of them for --resume."""

    algorithm = "rl-fc"
    policy_name = POLICY_NAME
    selected_by = "best validation Eval_app"
    style = CurveStyle("eval_app", "Eval_app (validation, higher is better)", "RL-FC")
    play_fn = staticmethod(play_episode)

    def __init__(self, scenario: Scenario, cfg: RlFcConfig, seed: int, out: Path):
        torch.set_num_threads(max(1, cfg.threads))
        self.scenario, self.cfg, self.seed, self.out = scenario, cfg, seed, out
        torch.manual_seed(seed)
        self.rng = np.random.default_rng(seed)   # the learner's: which buffered decisions each pass samples
        self.net = None
        self.optim = None
        self.buffer: ReplayBuffer | None = None
        self.init_run_state()

    # ---------------------------------------------------------------- set-up

    def ensure_network(self) -> None:
        """Size the network from one observation of the scenario (state dimension, number of clusters)."""
        if self.net is not None:
            return
        probe = _ProbePolicy()
        try:
            self.scenario.run_episode(InProcessDriver(probe), self.cfg.eval_seed)
        except _Probed:
            pass
        if probe.shape is None:
            raise RuntimeError(f"scenario {self.scenario.name} made no routing decision: cannot size the network")
        self._make_network(*probe.shape)

    def _make_network(self, state_dim: int, n_actions: int) -> None:
        self.net = ValueMLP(state_dim, n_actions, self.cfg.hidden)
        opt = torch.optim.Adam if self.cfg.optimizer == "adam" else torch.optim.SGD
        self.optim = opt(self.net.parameters(), lr=self.cfg.lr)
        self.buffer = ReplayBuffer(self.cfg.buffer_size, state_dim)
        self.state_dim, self.n_actions = state_dim, n_actions

    def network_weights(self) -> dict[str, np.ndarray]:
        return network_tensors(self.net)

    def worker_setup(self):
        return worker_setup, (self.scenario, self.cfg, self.seed)

    def load_init(self) -> None:
        """cfg.init's weights into the fresh network; a model of another shape is refused with both shapes."""
        from policy_engine.artifact import load_artifact

        tensors, _ = load_artifact(self.cfg.init, policy=POLICY_NAME)
        own = self.net.state_dict()
        wrong = [f"{k} {tuple(tensors[k].shape) if k in tensors else 'missing'} (need {tuple(v.shape)})"
                 for k, v in own.items() if k not in tensors or tuple(tensors[k].shape) != tuple(v.shape)]
        if wrong:
            raise ValueError(f"init model {self.cfg.init} does not fit this network: {', '.join(wrong)}")
        self.net.load_state_dict({k: torch.from_numpy(np.array(tensors[k])) for k in own})

    # ---------------------------------------------------------------- one episode

    def learn(self, played: dict[str, Any]) -> dict[str, Any]:
        """Buffer a played episode's valued decisions and run the training pass that follows it."""
        ep = played["episode"]
        if ep != self.episode + 1:
            raise RuntimeError(f"episode {ep} played out of order (expected {self.episode + 1})")
        states, actions, values = played["states"], played["actions"], played["values"]
        if len(actions):
            self.buffer.add(states, actions, values)
        loss = self.train_pass()
        self.episode = ep
        row = {"episode": ep, "eps1": played["eps1"], "loss": loss, "decisions": played["decisions"],
               "valued": int(len(actions)), "mean_value": float(values.mean()) if len(values) else None,
               "tmdl": played["tmdl"], "ajdr": played["ajdr"],
               **{k: played[k] for k in ("demand_scale", "rate_scale") if k in played}}
        self.train_rows.append(row)
        return row

    def train_pass(self) -> float | None:
        """One pass over train_samples decisions sampled from the buffer, in minibatches; mean MSE."""
        if len(self.buffer) < self.cfg.train_samples:
            return None
        s, a, v = self.buffer.sample(self.cfg.train_samples, self.rng)
        s, a, v = torch.from_numpy(s), torch.from_numpy(a), torch.from_numpy(v)

        def loss_of(sl: slice) -> torch.Tensor:
            q = self.net(s[sl]).gather(1, a[sl, None]).squeeze(1)
            return torch.nn.functional.mse_loss(q, v[sl])

        return self.fit_minibatches(len(a), loss_of)

    # ---------------------------------------------------------------- evaluation

    def eval_seeds(self) -> list[int]:
        return [self.cfg.eval_seed + i for i in range(self.cfg.eval_episodes)]

    def evaluate_baselines(self) -> None:
        for name in self.cfg.baselines:
            if name not in self.baselines:
                self.baselines[name] = _mean_metrics(self.evaluate_episodes(eval_episode, None, name,
                                                                            self.eval_seeds()))

    def evaluate(self) -> dict[str, Any]:
        tensors = network_tensors(self.net)
        m = _mean_metrics(self.evaluate_episodes(eval_episode, tensors, POLICY_NAME, self.eval_seeds()))
        # Time spent so far (the evaluation itself not included): when the greedy policy first beats a baseline.
        row = {"episode": self.episode, "eps1": epsilon1(self.episode, self.cfg), **m,
               "train_seconds": round(self.train_seconds, 1), "wall_seconds": round(self.wall_seconds, 1)}
        self.curve.append(row)
        if self.best is None or m["eval_app"] > self.best["eval_app"]:
            self.best = dict(row)
            self.save_model(self.out / BEST_MODEL, tensors, m, best=True)
        return row

    # ---------------------------------------------------------------- resume

    def before_restore(self, state: dict[str, Any]) -> None:
        self._make_network(state["state_dim"], state["n_actions"])


class _Probed(Exception):
    pass


class _ProbePolicy(Policy):
    """Reads the state dimension and cluster count off the first observation, then stops the episode."""

    name = "rl-fc-probe"
    capabilities = frozenset({ROUTE})
    shape: tuple[int, int] | None = None

    def route(self, obs: RouteObservation) -> RouteDecision:
        self.shape = (job_states(obs).shape[1], len(obs.clusters))
        raise _Probed


def train_rl_fc(scenario: Scenario, episodes: int | None, seed: int, out: Path, resume: bool = False,
                progress: bool = True, options: dict[str, Any] | None = None,
                rollouts: RolloutSpec | None = None) -> dict[str, Any]:
    """`emulator train --algo rl-fc`: train, evaluate, checkpoint; write the model artifact and learning curve.
    `rollouts`: who plays the episodes (--workers, --ray); the model does not depend on it."""
    cfg = RlFcConfig.from_options(dict(options or {}), episodes=episodes)
    if cfg.randomised() and type(scenario).__name__ != "RLFCScenario":
        raise OptionError(f"demand_scales / rate_scales vary RL-FC's own workloads (multicluster-*), not "
                          f"{scenario.name}")
    ckpt = common.prepare_out(out, CHECKPOINT, resume)
    started = time.perf_counter()
    trainer = RlFcTrainer(scenario, cfg, seed, out)
    if resume:
        trainer.restore(ckpt)
    else:
        trainer.ensure_network()
        if cfg.init:
            trainer.load_init()
    trainer.start_rollouts(rollouts)
    try:
        trainer.evaluate_baselines()
        trainer.wall_seconds += time.perf_counter() - started
        common.run_episodes(trainer, cfg, f"rl-fc {scenario.name}", ("val_eval", "eval_app", ".4f"),
                            enabled=progress)
    finally:
        trainer.close()
    final = trainer.curve[-1]
    checksum = trainer.save_model(out / MODEL, network_tensors(trainer.net),
                                  {k: v for k, v in final.items() if k in SUMMARY_METRICS})
    trainer.checkpoint()
    trainer.write_curve()
    return {"algo": "rl-fc", "scenario": scenario.name, "seed": seed, "episodes": trainer.episode,
            "train_seconds": round(trainer.train_seconds, 1), "wall_seconds": round(trainer.wall_seconds, 1),
            "model": str(out / MODEL), "checksum": checksum,
            "best_model": str(out / BEST_MODEL), "best": trainer.best,
            "final": {k: v for k, v in final.items() if k in SUMMARY_METRICS}, "baselines": trainer.baselines,
            "learning_curve": str(out / CURVE_PNG), "rollouts": (rollouts or RolloutSpec()).describe()}


register_algo("rl-fc", train_rl_fc, families={"multicluster"}, parallel=True)
