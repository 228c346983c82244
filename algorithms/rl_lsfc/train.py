"""RL-LSFC learner (Liu, Wang, Quan, ICPP 2020, Sec. 4-5): LSTM + partially shared three-head value network.

One episode of a hetero-elastic scenario (5 heterogeneous clusters, 2 elastic) is played through an in-process
driver. The behaviour policy scores every buffered job with the network (its 839-value state, Table 1, gives
three value components per cluster, scalarized as w1·v1 + w2·v2 + w3·v3) and picks, by the modified ε-greedy of
Sec. 4.4, a random (job, cluster) pair, the guide rule's choice (MAF) or the best-valued pair. The simulator logs
every finished execution (finish, request and start times, missed or not); at the end of the episode every
decision (job j deployed at t_s to cluster c, finishing at t_e) gets its three value components (Sec. 4.3)

    v1 = -(η_c·m_ih·m_ic / η_j) · (M_j + Σ_{t_s..t_e} β^{D_t} · W_j(t))
    v2 = -(η_c·m_ih·m_ic / η_j) · Σ_{t_s..t_e} β^{D_t} · W_cl(t)
    v3 = -ψ_ih·ψ_ic · R_j

with M_j the job's missed deadlines of executions that started without waiting, W_j(t) / W_cl(t) the missed
deadlines at t of the job's / of every job's executions on c that had to wait for executors, D_t the jobs deployed
to c after j up to t, R_j the job's mean execution time over its standard execution time minus 1, and the
Improper-Heterogeneity / Initial-Competition multipliers of Eq. 1. The decisions join a knowledge buffer of the
latest K = 50,000; after each episode B = 2,000 sampled decisions train the three heads (mean squared error of
each head's output for the action taken against its component), Adam at 1e-4 for the first 1000 of 1500
episodes and 1e-5 after (Table 2, Sec. 4.4).

What the paper leaves open, chosen here (all in RlLsfcConfig, recorded in the artifact's metadata):
  * LSTM size 64, one LSTM whose weights all clusters share (each cluster's 10 segments are one sequence), its
    last hidden state as the "aggregated temporal hidden states": the clusters are alike in kind, sharing keeps the
    LSTM small, and the cluster's position in fc1's input says which cluster a hidden state belongs to;
  * the component weights w = (1, 0.1, 5): per job, S = -TMDL + 50·(100 - AJER) adds -misses_j - 5000/N_w·R_j
    (N_w = 1000), so v1 (own misses) and v3 (delay ratio) get S's own 1 : 5; v2 (everyone's misses on the cluster
    while j runs) is a shared, noisier signal, weighted 0.1. RL-LSFCb, "a slightly different balancing", is the
    same learner with misses weighted up against delay: `--set weights=1,0.2,2.5`;
  * β = 0.9 per newly deployed job; P_m and P_ψ (Eq. 1, >= 1) all 1.5;
  * IH (Improper_Heterogeneity): the job missed a deadline on a cluster slower than its expected factor
    (η_c < η_j); IC (Initial_Competition): the job's first execution had to wait for executors on c;
  * the batch of B = 2,000 is cut into minibatches of 100 (20 Adam steps per episode; the paper gives neither);
  * exploration: the paper gives no ε; RL-FC's schedule is reused (ε1 linear 0.8 -> 1e-5 over 95 % of the
    episodes, ε2 = 0.5 random else the guide), MAF as the guide (the best baseline, as SF-E was for RL-FC);
  * validation: 10 fixed episodes (seeds 900000+) every 25 episodes; the best model by S_log of the mean S.

Everything tunable is in RlLsfcConfig (override with `emulator train ... --set key=value`). The trained weights
are saved as an `rl-lsfc` model artifact that algorithms.rl_lsfc.policy serves with numpy.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from policy_engine.extras import require

require("torch", extra="train", feature="RL-LSFC training (emulator train --algo rl-lsfc)")

import torch  # noqa: E402
from torch import nn  # noqa: E402

from emulator.drivers import InProcessDriver  # noqa: E402
from emulator.learners import common  # noqa: E402
from emulator.learners.replay_run import BEST_MODEL, CHECKPOINT, CURVE_PNG, MODEL, CurveStyle, ReplayRun  # noqa: E402
from emulator.learners.replay_run import train_seed  # noqa: E402
from algorithms.rl_fc.train import ExplorationPolicy, ReplayBuffer, epsilon1  # noqa: E402
from emulator.learners.rollouts import RolloutSpec  # noqa: E402
from emulator.multicluster import metrics  # noqa: E402
from emulator.multicluster.sim import MultiClusterSim  # noqa: E402
from emulator.scenario import Scenario  # noqa: E402
from emulator.training import register_algo  # noqa: E402
from policy_engine.features.multicluster import LSFC_SEGMENT, LSFC_SEGMENTS, lsfc_dim, lsfc_split  # noqa: E402
from algorithms.rl_lsfc.policy import (  # noqa: E402
    HEADS,
    POLICY_NAME,
    SCALARIZATION,
    LsfcNetwork,
    RlLsfcPolicy,
    job_states,
)
from policy_engine.policy import OptionError, Policy, create  # noqa: E402
from policy_engine.types import RouteObservation  # noqa: E402



@dataclass
class RlLsfcConfig:
    # Network (Fig. 3, Table 2): LSTM over 10 segments of L_C = 15 steps, shared FC layer N_fc1 = 800, three heads
    # of N_fc2 = 200 and one output per cluster. The LSTM size is not given (see the module docstring).
    lstm_hidden: int = 64
    fc1: int = 800
    fc2: int = 200
    # Linear scalarization of (v1, v2, v3) (Sec. 4.3); RL-LSFCb: weights=1,0.2,2.5.
    weights: tuple[float, ...] = (1.0, 0.1, 5.0)
    # Value definition (Sec. 4.2): decay per newly deployed job, Eq. 1 penalties (>= 1).
    beta: float = 0.9
    p_m_ih: float = 1.5
    p_m_ic: float = 1.5
    p_psi_ih: float = 1.5
    p_psi_ic: float = 1.5
    # Knowledge buffer K and training batch B (Table 2); B is cut into minibatches, one Adam step each.
    buffer_size: int = 50_000
    batch: int = 2000
    minibatch: int = 100
    # Adam with a manually decayed base rate (Sec. 4.4): lr for the first lr_decay_fraction of the episodes
    # (1000 of E = 1500), lr_late after.
    episodes: int = 1500
    lr: float = 1e-4
    lr_late: float = 1e-5
    lr_decay_fraction: float = 2 / 3
    # Modified ε-greedy (Sec. 4.4): with probability ε1 explore, then random with ε2 else the guide's choice.
    eps1_start: float = 0.8
    eps1_end: float = 1e-5
    eps1_fraction: float = 0.95
    eps2: float = 0.5
    guide: str = "maf"
    improved_greedy: bool = True
    # Validation on fixed workloads (seeds disjoint from training and from the benchmark's test seeds 0..49).
    eval_every: int = 25
    eval_episodes: int = 10
    eval_seed: int = 900_000
    baselines: tuple[str, ...] = ("maf",)
    # Training workloads: episode e of a run seeded k uses workload seed train_seed + 100_000·k + e.
    train_seed: int = 2_000_000
    # Episodes played with the same weights (see RlFcConfig.rollout_batch): any --workers trains the same model.
    rollout_batch: int = 5
    checkpoint_every: int = 25
    threads: int = 1
    # Where the learner's training pass runs: "cpu" or a torch device such as "cuda" (the rollout workers always
    # play on CPU with numpy). Same seed and device: same model; another device sums in another order.
    device: str = "cpu"

    def decay_episodes(self) -> int:
        return max(1, round(self.eps1_fraction * self.episodes))

    def lr_at(self, episode: int) -> float:
        """Base learning rate of the training pass after 1-based `episode`."""
        return self.lr if episode <= round(self.lr_decay_fraction * self.episodes) else self.lr_late

    @classmethod
    def from_options(cls, options: dict[str, Any], **overrides: Any) -> RlLsfcConfig:
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - set(fields))
        if unknown:
            raise OptionError(f"unknown rl-lsfc hyper-parameter(s) {', '.join(unknown)}; valid: {', '.join(fields)}")
        values = {**options, **{k: v for k, v in overrides.items() if v is not None}}
        try:
            for k in ("weights", "baselines"):
                if k in values:
                    v = values[k]
                    if isinstance(v, str):
                        v = [x for x in v.strip("[]()").split(",") if x]
                    v = v if isinstance(v, (list, tuple)) else [v]
                    values[k] = tuple(float(x) for x in v) if k == "weights" else tuple(v)
            common.check_numbers(fields, values)
            cfg = cls(**values)
            cfg.validate()
        except (ValueError, TypeError) as e:
            raise OptionError(f"rl-lsfc hyper-parameters: {e}") from None
        return cfg

    def validate(self) -> None:
        if min(self.lstm_hidden, self.fc1, self.fc2) <= 0:
            raise ValueError("lstm_hidden, fc1 and fc2 must be positive")
        if len(self.weights) != len(HEADS) or not all(math.isfinite(w) for w in self.weights):
            raise ValueError(f"weights must be {len(HEADS)} finite numbers (v1, v2, v3), got {self.weights}")
        if self.episodes <= 0:
            raise ValueError("episodes must be positive")
        if not 0 <= self.eps2 <= 1 or not 0 <= self.eps1_end <= self.eps1_start <= 1:
            raise ValueError("need 0 <= eps1_end <= eps1_start <= 1 and 0 <= eps2 <= 1")
        if min(self.p_m_ih, self.p_m_ic, self.p_psi_ih, self.p_psi_ic) < 1:
            raise ValueError("the Eq. 1 penalties P_m and P_psi must be >= 1")
        if not 0 < self.beta <= 1:
            raise ValueError("beta must be in (0, 1]")
        if self.buffer_size < self.batch or self.minibatch <= 0 or self.batch <= 0:
            raise ValueError("need 0 < minibatch, 0 < batch <= buffer_size")
        if self.rollout_batch < 1 or self.eval_every < 1 or self.checkpoint_every < 1:
            raise ValueError("rollout_batch, eval_every and checkpoint_every must be at least 1")
        common.check_torch_device(self.device)


# ---------------------------------------------------------------- the value components (Sec. 4.2-4.3)


def value_components(decisions: list[tuple[int, int, int]], executions: list[tuple], hetero: np.ndarray,
                     expected_hetero: np.ndarray, standard_runtime: np.ndarray,
                     cfg: RlLsfcConfig) -> np.ndarray:
    """(v1, v2, v3) of every decision, shape (decisions, 3).

    decisions: (job, cluster index, deploy step) in decision order. executions: the simulator's execution log,
    (finish, cluster, job, execution, request, start, missed). An execution waited for resources when it started
    after it was queued at its cluster: the first at the job's deploy step, a later one at its request.
    A decision whose job has not finished gets NaN.
    """
    n_dec = len(decisions)
    deploy_of_job = {job: (k, c, t) for k, (job, c, t) in enumerate(decisions)}
    own: dict[int, list[tuple[int, bool, bool]]] = {}  # job -> (finish, missed, waited) per execution
    ratio_sum: dict[int, float] = {}
    waited_misses: dict[int, list[int]] = {}            # cluster -> finish steps of misses after a wait
    first_waited: dict[int, bool] = {}
    for finish, c, job, k, req, start, missed in executions:
        dec = deploy_of_job.get(job)
        if dec is None:
            continue
        queued = dec[2] if k == 0 else req
        waited = start > queued
        if k == 0:
            first_waited[job] = waited
        own.setdefault(job, []).append((finish, missed, waited))
        ratio_sum[job] = ratio_sum.get(job, 0.0) + (finish - req) / float(standard_runtime[job])
        if missed and waited:
            waited_misses.setdefault(c, []).append(finish)
    # per cluster: deploy steps in decision order (non-decreasing), and the sorted waited-miss steps
    deploys = {c: np.array([t for _, cc, t in decisions if cc == c], dtype=np.int64) for c in range(len(hetero))}
    rank = {}
    counters: dict[int, int] = {}
    for job, c, _ in decisions:
        rank[job] = counters.get(c, 0)
        counters[c] = rank[job] + 1
    misses = {c: np.sort(np.array(v, dtype=np.int64)) for c, v in waited_misses.items()}

    def decay(c: int, job: int, times: np.ndarray) -> np.ndarray:
        """β^{D_t} for steps `times`: D_t = jobs deployed to c after `job`, up to and including t."""
        d = np.searchsorted(deploys[c], times, side="right") - (rank[job] + 1)
        return cfg.beta ** np.maximum(d, 0)

    out = np.full((n_dec, 3), np.nan, dtype=np.float64)
    for job, (k, c, t_s) in deploy_of_job.items():
        runs = own.get(job)
        if not runs:
            continue
        t_e = max(f for f, _, _ in runs)
        m_j = sum(1 for _, m, w in runs if m and not w)
        own_waited = np.array([f for f, m, w in runs if m and w], dtype=np.int64)
        w_j = float(decay(c, job, own_waited).sum()) if own_waited.size else 0.0
        cl = misses.get(c)
        if cl is not None and cl.size:
            lo, hi = np.searchsorted(cl, t_s, side="left"), np.searchsorted(cl, t_e, side="right")
            w_cl = float(decay(c, job, cl[lo:hi]).sum()) if hi > lo else 0.0
        else:
            w_cl = 0.0
        r_j = ratio_sum[job] / len(runs) - 1.0
        ih = (m_j + own_waited.size) > 0 and hetero[c] < expected_hetero[job]
        ic = first_waited.get(job, False)
        m_factor = (cfg.p_m_ih if ih else 1.0) * (cfg.p_m_ic if ic else 1.0)
        scale = hetero[c] * m_factor / expected_hetero[job]

        def psi(event: bool, p: float) -> float:
            return (p if r_j > 0 else 1.0 / p) if event else 1.0

        out[k] = (-scale * (m_j + w_j), -scale * w_cl, -psi(ih, cfg.p_psi_ih) * psi(ic, cfg.p_psi_ic) * r_j)
    return out


class EpisodeLog:
    """One episode's decisions: state, job, cluster and deploy step of each."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.states: list[np.ndarray] = []
        self.decisions: list[tuple[int, int, int]] = []

    def decided(self, obs: RouteObservation, states: np.ndarray, job: int, cluster_index: int) -> None:
        self.states.append(states[job])
        self.decisions.append((job_number(obs.jobs[job].job_id), cluster_index, int(obs.time)))


def job_number(job_id: str) -> int:
    """The emulator's job ids are `j<index in the workload>`."""
    return int(job_id[1:])


class LsfcExploration(ExplorationPolicy):
    """RL-FC's modified ε-greedy behaviour policy on RL-LSFC's states and network (guide: MAF)."""

    name = "rl-lsfc-explore"
    job_states = staticmethod(job_states)


# ---------------------------------------------------------------- the network (Fig. 3)


class LsfcNet(nn.Module):
    """Torch twin of algorithms.rl_lsfc.policy.LsfcNetwork; parameter names are the artifact's tensor names."""

    def __init__(self, n_clusters: int, cfg: RlLsfcConfig):
        super().__init__()
        self.n_clusters = n_clusters
        self.lstm = nn.LSTM(LSFC_SEGMENT, cfg.lstm_hidden, batch_first=True)
        rest = lsfc_dim(n_clusters) - n_clusters * LSFC_SEGMENTS * LSFC_SEGMENT
        self.fc1 = nn.Linear(n_clusters * cfg.lstm_hidden + rest, cfg.fc1)
        for h in HEADS:
            setattr(self, f"{h}_fc2", nn.Linear(cfg.fc1, cfg.fc2))
            setattr(self, f"{h}_out", nn.Linear(cfg.fc2, n_clusters))

    def forward(self, temporal: torch.Tensor, rest: torch.Tensor) -> torch.Tensor:
        """temporal (B, C, segments, segment), rest (B, 17C + 4) -> components (B, 3, C)."""
        b = temporal.shape[0]
        _, (h, _) = self.lstm(temporal.reshape(b * self.n_clusters, LSFC_SEGMENTS, LSFC_SEGMENT))
        shared = torch.relu(self.fc1(torch.cat([h[-1].reshape(b, -1), rest], dim=1)))
        return torch.stack([getattr(self, f"{k}_out")(torch.relu(getattr(self, f"{k}_fc2")(shared)))
                            for k in HEADS], dim=1)


def network_tensors(net: LsfcNet, cfg: RlLsfcConfig) -> dict[str, np.ndarray]:
    t = {k: v.detach().cpu().numpy().copy() for k, v in net.state_dict().items()}
    t[SCALARIZATION] = np.asarray(cfg.weights, dtype=np.float32)
    return t


# ---------------------------------------------------------------- evaluation


def summarize(episodes: list[dict[str, float]]) -> dict[str, float]:
    tmdl = float(np.mean([e["tmdl"] for e in episodes]))
    ajer = float(np.mean([e["ajer"] for e in episodes]))
    # S is linear, so S_log of the episode means is S_log of the mean S (the selection criterion).
    return {"tmdl": tmdl, "ajer": ajer, "s_log": metrics.s_log(tmdl, ajer),
            "mean_s_log": float(np.mean([e["s_log"] for e in episodes]))}


# ---------------------------------------------------------------- what a rollout worker runs (any pool)

_WORKER: dict[str, Any] = {}


def worker_setup(scenario: Scenario, cfg: RlLsfcConfig, seed: int) -> None:
    _WORKER.update(scenario=scenario, cfg=cfg, seed=seed, sim=scenario.make_sim(),
                   hetero=np.asarray(scenario.federation.hetero_factors, dtype=float))


def play_episode(weights: dict[str, np.ndarray], episode: int) -> dict[str, Any]:
    """Training episode `episode` (1-based) with the behaviour policy on `weights`: its valued decisions and metrics.
    A pure function of its arguments and the worker's set-up: its exploration RNG is seeded by (seed, episode)."""
    scenario, cfg, seed, sim = _WORKER["scenario"], _WORKER["cfg"], _WORKER["seed"], _WORKER["sim"]
    log = EpisodeLog()
    behaviour = LsfcExploration(cfg, np.random.default_rng([seed, 1, episode]), log)
    behaviour.network = LsfcNetwork(weights)
    behaviour.eps1 = epsilon1(episode, cfg)
    sim.execution_log = []
    try:
        result = scenario.play(InProcessDriver(behaviour), train_seed(cfg, seed, episode - 1), sim)
        w = sim.workload
        values = value_components(log.decisions, sim.execution_log, _WORKER["hetero"], w.expected_hetero,
                                  w.standard_runtime, cfg)
    finally:
        sim.execution_log = None
    done = ~np.isnan(values).any(axis=1)
    states = np.stack(log.states)[done] if done.any() else np.zeros((0, lsfc_dim(len(_WORKER["hetero"]))),
                                                                      np.float32)
    actions = np.array([c for _, c, _ in log.decisions], dtype=np.int64)[done]
    ajer = result.ajer()
    return {"episode": episode, "eps1": behaviour.eps1, "states": states, "actions": actions,
            "values": values[done].astype(np.float32), "decisions": len(log.decisions),
            "tmdl": float(result.tmdl), "ajer": ajer, "s_log": metrics.s_log(result.tmdl, ajer)}


def eval_episode(weights: dict[str, np.ndarray] | None, name: str, episode_seed: int) -> dict[str, float]:
    """One validation episode of the greedy learned policy (`weights`) or of baseline `name`."""
    scenario = _WORKER["scenario"]
    policy = (RlLsfcPolicy(tensors=weights, meta={"scenario_params": scenario.describe()}) if weights is not None
              else create(name))
    return scenario.run_episode(InProcessDriver(policy), episode_seed)


def evaluate_episodes(scenario: Scenario, policy: Policy, cfg: RlLsfcConfig) -> list[dict[str, float]]:
    driver = InProcessDriver(policy)
    return [scenario.run_episode(driver, cfg.eval_seed + i) for i in range(cfg.eval_episodes)]


class RlLsfcTrainer(ReplayRun):
    """Holds the network, optimiser, buffer and RNGs of one run; checkpoints all of them for --resume."""

    algorithm = "rl-lsfc"
    policy_name = POLICY_NAME
    selected_by = "best validation S_log"
    style = CurveStyle("s_log", "S_log of the mean S (validation, higher is better)", "RL-LSFC")
    play_fn = staticmethod(play_episode)

    def __init__(self, scenario: Scenario, cfg: RlLsfcConfig, seed: int, out: Path):
        if not hasattr(scenario, "federation") or scenario.federation.hetero_factors is None:
            raise ValueError(f"rl-lsfc trains on the heterogeneous scenarios (hetero-elastic-*), not {scenario.name}")
        torch.set_num_threads(max(1, cfg.threads))
        self.scenario, self.cfg, self.seed, self.out = scenario, cfg, seed, out
        self.n_actions = scenario.federation.n
        self.state_dim = lsfc_dim(self.n_actions)
        torch.manual_seed(seed)
        self.rng = np.random.default_rng(seed)   # the learner's: which buffered decisions each pass samples
        self.device = torch.device(cfg.device)
        self.net = LsfcNet(self.n_actions, cfg).to(self.device)   # initialised on CPU: same start on any device
        self.optim = torch.optim.Adam(self.net.parameters(), lr=cfg.lr)
        self.buffer = ReplayBuffer(cfg.buffer_size, self.state_dim, value_dim=len(HEADS))
        self.init_run_state()
        self.baseline_episodes: dict[str, list[dict[str, float]]] = {}

    def network_weights(self) -> dict[str, np.ndarray]:
        return network_tensors(self.net, self.cfg)

    def worker_setup(self):
        return worker_setup, (self.scenario, self.cfg, self.seed)

    # ---------------------------------------------------------------- one episode

    def learn(self, played: dict[str, Any]) -> dict[str, Any]:
        """Buffer a played episode's valued decisions and run the training pass that follows it."""
        ep = played["episode"]
        if ep != self.episode + 1:
            raise RuntimeError(f"episode {ep} played out of order (expected {self.episode + 1})")
        values = played["values"]
        if len(values):
            self.buffer.add(played["states"], played["actions"], values)
        loss = self.train_pass(ep)
        self.episode = ep
        row = {"episode": ep, "eps1": played["eps1"], "lr": self.cfg.lr_at(ep), "loss": loss,
               "decisions": played["decisions"], "valued": int(len(values)),
               **{f"mean_{h}": float(values[:, i].mean()) if len(values) else None for i, h in enumerate(HEADS)},
               "tmdl": played["tmdl"], "ajer": played["ajer"], "s_log": played["s_log"]}
        self.train_rows.append(row)
        return row

    def train_pass(self, episode: int) -> float | None:
        """One pass over `batch` decisions sampled from the buffer, in minibatches; mean MSE over the heads."""
        if len(self.buffer) < self.cfg.batch:
            return None
        for g in self.optim.param_groups:
            g["lr"] = self.cfg.lr_at(episode)
        s, a, v = self.buffer.sample(self.cfg.batch, self.rng)
        temporal, rest = lsfc_split(s, self.n_actions)
        temporal, rest, a, v = (torch.from_numpy(np.ascontiguousarray(x)).to(self.device)
                                for x in (temporal, rest, a, v))

        def loss_of(sl: slice) -> torch.Tensor:
            comp = self.net(temporal[sl], rest[sl])                                   # (b, 3, C)
            taken = comp.gather(2, a[sl, None, None].expand(-1, len(HEADS), 1)).squeeze(2)  # (b, 3)
            return torch.nn.functional.mse_loss(taken, v[sl])

        return self.fit_minibatches(len(a), loss_of)

    # ---------------------------------------------------------------- evaluation

    def eval_seeds(self) -> list[int]:
        return [self.cfg.eval_seed + i for i in range(self.cfg.eval_episodes)]

    def evaluate_baselines(self) -> None:
        for name in self.cfg.baselines:
            if name not in self.baselines:
                eps = self.evaluate_episodes(eval_episode, None, name, self.eval_seeds())
                self.baseline_episodes[name] = eps
                self.baselines[name] = summarize(eps)

    def evaluate(self) -> dict[str, Any]:
        tensors = network_tensors(self.net, self.cfg)
        eps = self.evaluate_episodes(eval_episode, tensors, POLICY_NAME, self.eval_seeds())
        m = summarize(eps)
        fsn = {name: metrics.fsn_002(eps, base) for name, base in self.baseline_episodes.items()}
        row = {"episode": self.episode, "eps1": epsilon1(self.episode, self.cfg), **m, "fsn": fsn,
               **{f"{name}_s_log": b["s_log"] for name, b in self.baselines.items()},
               "train_seconds": round(self.train_seconds, 1), "wall_seconds": round(self.wall_seconds, 1)}
        self.curve.append(row)
        if self.best is None or m["s_log"] > self.best["s_log"]:
            self.best = dict(row)
            self.save_model(self.out / BEST_MODEL, tensors, {**m, "fsn": fsn}, best=True)
        return row

    # ---------------------------------------------------------------- files and resume

    def metadata_extra(self) -> dict[str, Any]:
        return {"choices": {
            "lstm": f"one LSTM of size {self.cfg.lstm_hidden} shared by the clusters, last hidden state",
            "ih_event": "missed a deadline on a cluster with eta_c < eta_j",
            "ic_event": "first execution waited for executors at its cluster",
            "minibatch": f"B = {self.cfg.batch} sampled decisions, minibatches of {self.cfg.minibatch}",
            "exploration": f"RL-FC's eps1 schedule, eps2 = {self.cfg.eps2}, guide {self.cfg.guide}"}}

    def checkpoint_extra(self) -> dict[str, Any]:
        return {"baseline_episodes": self.baseline_episodes}

    def after_restore(self, state: dict[str, Any]) -> None:
        self.baseline_episodes = json.loads(state["baseline_episodes"])


def train_rl_lsfc(scenario: Scenario, episodes: int | None, seed: int, out: Path, resume: bool = False,
                  progress: bool = True, options: dict[str, Any] | None = None,
                  rollouts: RolloutSpec | None = None) -> dict[str, Any]:
    """`emulator train --algo rl-lsfc`: train, evaluate, checkpoint; write the model artifact and learning curve.
    `rollouts`: who plays the episodes (--workers, --ray); the model does not depend on it."""
    cfg = RlLsfcConfig.from_options(dict(options or {}), episodes=episodes)
    ckpt = common.prepare_out(out, CHECKPOINT, resume)
    started = time.perf_counter()
    trainer = RlLsfcTrainer(scenario, cfg, seed, out)
    if resume:
        trainer.restore(ckpt)
    trainer.start_rollouts(rollouts)
    try:
        trainer.evaluate_baselines()
        if not trainer.curve:
            trainer.evaluate()   # the untrained network: where the learning curve starts
        trainer.wall_seconds += time.perf_counter() - started
        common.run_episodes(trainer, cfg, f"rl-lsfc {scenario.name}", ("val_s_log", "s_log", ".3f"),
                            enabled=progress)
    finally:
        trainer.close()
    final = trainer.curve[-1]
    keys = ("tmdl", "ajer", "s_log", "mean_s_log")
    checksum = trainer.save_model(out / MODEL, network_tensors(trainer.net, cfg),
                                  {**{k: final[k] for k in keys}, "fsn": final["fsn"]})
    trainer.checkpoint()
    trainer.write_curve()
    return {"algo": "rl-lsfc", "scenario": scenario.name, "seed": seed, "episodes": trainer.episode,
            "train_seconds": round(trainer.train_seconds, 1), "wall_seconds": round(trainer.wall_seconds, 1),
            "model": str(out / MODEL), "checksum": checksum,
            "best_model": str(out / BEST_MODEL), "best": trainer.best,
            "final": {**{k: final[k] for k in keys}, "fsn": final["fsn"]}, "baselines": trainer.baselines,
            "learning_curve": str(out / CURVE_PNG), "rollouts": (rollouts or RolloutSpec()).describe()}


register_algo("rl-lsfc", train_rl_lsfc, families={"multicluster"}, parallel=True)
