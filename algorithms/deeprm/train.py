"""DeepRM learner (Mao et al., HotNets 2016; DeepRM): REINFORCE with a time-dependent baseline.

Each iteration draws `jobsets` fresh job sets (arrival sequences) of the `deeprm` scenario and plays each of them
`rollouts` times (20 Monte-Carlo rollouts, section III of DeepRM) with the current stochastic policy. A rollout
is the scenario's episode exactly: at every time step the policy is asked while a slot job fits, picks one of DeepRM's
M + 1 actions (start slot i's job, or the void action that ends the step), and time moves on with the reward
-Σ 1/T_j over the jobs in the system, so an episode's return is minus its jobs' total slowdown. Every decision's
return G (γ = 1: everything that follows) is compared with the time-dependent baseline b, the mean return of the
same job set's rollouts from the same time step on, and the policy gradient

    ∇θ Σ_rollouts Σ_decisions log πθ(a | s) · (G - b)

(divided by the number of rollouts) takes one Adam step (lr 0.001; `optimizer=rmsprop` is the DeepRM paper's).
Two options make REINFORCE learn from scratch within a few hundred iterations on 2 CPU cores (the shipped recipe):
`normalize_advantages` divides G - b by its standard deviation over the iteration, and `entropy_coef` adds an
entropy bonus that decays linearly to 0 at iteration `entropy_decay`. The network has one hidden layer of 20 units
(`--set hidden=64,32` for a larger one). Rollouts run in numpy with the served policy's own forward pass
(algorithms.deeprm.policy); torch is only used for the gradient step. `--set workers=N` spreads an
iteration's job sets over N processes (bit-identical to one: every rollout has its own seed).

Validation: every `eval_every` iterations the greedy policy (the served `deeprm-pg`) plays `eval_episodes` fixed
job sets through the scenario, beside SJF and Packer on the same job sets; the best one is kept as
best-model.safetensors, and the wall time of the first evaluation that beats SJF is recorded.

Output in --out: model.safetensors (final), best-model.safetensors, checkpoint.pt (for --resume),
learning-curve.json and learning-curve.png. `--episodes` counts iterations.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from policy_engine.extras import require

require("torch", extra="train", feature="DeepRM-PG training (emulator train --algo deeprm-pg)")

import torch  # noqa: E402
from torch import nn  # noqa: E402

from algorithms.deeprm.sim import DeepRMConfig, DeepRMSimulation  # noqa: E402
from emulator.drivers import InProcessDriver  # noqa: E402
from emulator.learners import common  # noqa: E402
from emulator.scenario import Scenario  # noqa: E402
from emulator.training import register_algo  # noqa: E402
from policy_engine.features.deeprm import ImageSpec, render  # noqa: E402
from algorithms.deeprm.policy import POLICY_NAME, PolicyNetwork, action_probs  # noqa: E402
from algorithms.deeprm.sjf import holds_back  # noqa: E402
from policy_engine.policy import OptionError, create  # noqa: E402

CHECKPOINT = "checkpoint.pt"
MODEL = "model.safetensors"
BEST_MODEL = "best-model.safetensors"
CURVE_JSON = "learning-curve.json"
CURVE_PNG = "learning-curve.png"
PLOT_EVERY_S = 120.0
# Hyper-parameters that may change on --resume without changing what has been trained so far.
RESUMABLE = ("iterations", "eval_every", "checkpoint_every", "threads", "workers", "batch")


@dataclass
class DeepRMPgConfig:
    # Policy network (DeepRM: one hidden layer of 20 neurons); ReLU hidden layers, M + 1 outputs.
    hidden: tuple[int, ...] = (20,)
    iterations: int = 1000
    jobsets: int = 10          # job sets per iteration ("several")
    rollouts: int = 20         # Monte-Carlo rollouts per job set (DeepRM and DeepRM: 20)
    lr: float = 1e-3           # Adam (DeepRM)
    optimizer: str = "adam"    # "adam" (DeepRM) or "rmsprop" (the DeepRM paper's, rho 0.9)
    # Advantages divided by their standard deviation over the iteration's decisions (after the baseline), so the
    # step size does not follow the scale of the returns (which grows with load and episode length).
    normalize_advantages: bool = False
    # Entropy bonus: entropy_coef · mean entropy of π(·|s) over the decisions joins the objective, decaying linearly
    # to 0 at iteration entropy_decay (0: constant). Keeps a warm-started, near-deterministic policy exploring.
    entropy_coef: float = 0.0
    entropy_decay: int = 0
    discount: float = 1.0      # γ = 1: the return is minus the remaining slowdown
    # "time": b is the mean return of the job set's rollouts from the same simulated time step on (every decision
    # of a step shares its return); "step": from the same decision index on (DeepRM's reference code).
    baseline: str = "time"
    # DeepRM's environment reads an empty slot or a job that does not fit as the void action; masking them out
    # of the softmax (default) spends no samples on learning that. The served policy follows the model's choice.
    mask_invalid: bool = True
    # With masking: the void action is not offered while nothing runs and a slot job fits. Waiting then frees no
    # room (the cluster is empty) and only delays; a greedy network that voids there would idle the cluster for
    # good (a warm-started network did, on 2 of 50 validation job sets). The served policy follows the model.
    keep_busy: bool = True
    # Optional warm start, as DeepRM's reference code offers (its pg_su): before REINFORCE, fit the network to a
    # heuristic's choices (cross-entropy) on `imitate_jobsets` of its episodes for `imitate_epochs` passes.
    # "sjf-holdback" is SJF that keeps long jobs waiting while they would leave little room (DeepRM's learned
    # behaviour as a rule); `imitate_rounds` > 1 adds DAgger rounds on the network's own states.
    imitate: str = ""               # "", "sjf" or "sjf-holdback"
    imitate_jobsets: int = 200
    imitate_epochs: int = 20
    imitate_batch: int = 256
    imitate_rounds: int = 1
    rl_lr: float = 0.0              # Adam's lr for REINFORCE after a warm start (0: lr)
    # Or start from a trained deeprm-pg model (e.g. a warm start saved by an earlier run): its weights, with a fresh
    # optimiser at lr; its warm-start record and checksum go into this run's metadata.
    init: str = ""
    loads: tuple[float, ...] = ()   # training loads, one per job set in turn; () = the scenario's load
    max_rollout_steps: int = 1000   # a training rollout stops after this many time steps
    eval_every: int = 10
    eval_episodes: int = 20
    eval_seed: int = 900_000        # validation job sets; the benchmark's test job sets are seeds 0..19
    baselines: tuple[str, ...] = ("sjf", "packer")
    train_seed: int = 1_000_000     # job set k of iteration i, run seed s: train_seed + 10^7·s + jobsets·i + k
    checkpoint_every: int = 10
    workers: int = 1                # processes playing rollouts (1: in this process)
    threads: int = 1                # torch threads for the gradient step
    batch: int = 4096               # decisions per forward/backward chunk of the gradient step

    @classmethod
    def from_options(cls, options: dict[str, Any], **overrides: Any) -> DeepRMPgConfig:
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - fields)
        if unknown:
            raise OptionError(f"unknown deeprm-pg hyper-parameter(s) {', '.join(unknown)}; valid: {', '.join(fields)}")
        values = {**options, **{k: v for k, v in overrides.items() if v is not None}}
        try:
            for k, conv in (("hidden", int), ("loads", float), ("baselines", str)):
                if k in values:
                    v = values[k]
                    if isinstance(v, str):
                        v = [x for x in v.split(",") if x]
                    elif not isinstance(v, (list, tuple)):
                        v = [v]
                    values[k] = tuple(conv(x) for x in v)
            for k in ("mask_invalid", "keep_busy", "normalize_advantages"):
                if isinstance(values.get(k), str):
                    values[k] = values[k].lower() in ("1", "true", "yes")
            cfg = cls(**values)
            cfg.validate()
        except (ValueError, TypeError) as e:  # an out-of-range or mistyped --set
            raise OptionError(f"deeprm-pg hyper-parameters: {e}") from None
        return cfg

    def validate(self) -> None:
        if not self.hidden or any(h <= 0 for h in self.hidden):
            raise ValueError(f"hidden must be positive layer sizes, got {self.hidden}")
        for k in ("iterations", "jobsets", "rollouts", "eval_every", "imitate_rounds", "eval_episodes",
                  "checkpoint_every", "workers", "threads", "batch", "max_rollout_steps"):
            if int(getattr(self, k)) < 1:
                raise ValueError(f"{k} must be >= 1, got {getattr(self, k)}")
        if self.rollouts < 2:
            raise ValueError("rollouts must be >= 2: the baseline is their mean")
        if not 0 < self.lr < 1 or not 0 <= self.rl_lr < 1 or not 0 < self.discount <= 1:
            raise ValueError("need 0 < lr < 1, 0 <= rl_lr < 1 and 0 < discount <= 1")
        if self.init and self.imitate:
            raise ValueError("init and imitate are two warm starts; give one")
        if self.imitate not in ("", *TEACHERS):
            raise ValueError(f"imitate must be one of {', '.join(TEACHERS)} or empty, not {self.imitate!r}")
        if self.optimizer not in ("adam", "rmsprop"):
            raise ValueError(f"optimizer must be adam or rmsprop, not {self.optimizer!r}")
        if self.entropy_coef < 0 or self.entropy_decay < 0:
            raise ValueError("entropy_coef and entropy_decay must be >= 0")
        if self.baseline not in ("time", "step"):
            raise ValueError(f"baseline must be time or step, not {self.baseline!r}")


# ------------------------------------------------------------------------------------------------ rollouts


@dataclass
class Rollout:
    """One played episode: every decision's state (as render() arrays), mask, action and time step; the rewards."""

    used: np.ndarray       # (D, time_horizon, num_res) int16
    slot_len: np.ndarray   # (D, M) int16
    slot_dem: np.ndarray   # (D, M, num_res) int16
    backlog: np.ndarray    # (D,) int16
    since: np.ndarray      # (D,) int16
    valid: np.ndarray      # (D, M + 1) bool
    action: np.ndarray     # (D,) int64
    step: np.ndarray       # (D,) int64: the time step of each decision
    rewards: np.ndarray    # (T,) float64: one per time step
    slowdown: float


def sim_state(sim: DeepRMSimulation, spec: ImageSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """The arrays render() draws, straight from the simulator: what the served policy reads off the observation."""
    h = spec.time_horizon
    used = np.zeros((h, spec.num_res), dtype=np.int64)
    for j in sim.running:
        used[:min(int(sim.finish[j] - sim.t), h)] += sim.demand[j]
    slot_len = np.zeros(spec.num_slots, dtype=np.int64)
    slot_dem = np.zeros((spec.num_slots, spec.num_res), dtype=np.int64)
    newest = -1
    for k, j in enumerate(sim.slots):
        if j is not None:
            slot_len[k] = sim.length[j]
            slot_dem[k] = sim.demand[j]
            newest = max(newest, int(sim.arrival[j]))
    for j in sim.backlog:
        newest = max(newest, int(sim.arrival[j]))
    since = sim.t - newest if newest >= 0 else spec.max_track_since_new
    return used, slot_len, slot_dem, len(sim.backlog), since


def sjf_action(sim: DeepRMSimulation, valid: np.ndarray) -> int:
    """The `sjf` policy's next pick: the shortest fitting slot job, the first slot on ties."""
    fitting = np.flatnonzero(valid[:-1])
    return int(fitting[np.argmin([sim.length[sim.slots[k]] for k in fitting])])


def holdback_action(sim: DeepRMSimulation, valid: np.ndarray) -> int:
    """The `sjf-holdback` policy's next pick: SJF among the fitting slot jobs it does not hold back, else void."""
    free = sim.free.tolist()
    keep = [k for k in np.flatnonzero(valid[:-1])
            if not holds_back(int(sim.length[sim.slots[k]]), sim.demand[sim.slots[k]].tolist(), free)]
    if not keep:
        return len(valid) - 1
    return int(keep[np.argmin([sim.length[sim.slots[k]] for k in keep])])


TEACHERS = {"sjf": sjf_action, "sjf-holdback": holdback_action}


def play(config: DeepRMConfig, jobset_seed: int, net: PolicyNetwork | None, rng: np.random.Generator | None,
         mask: bool, max_steps: int, teacher=None, keep_busy: bool = False) -> Rollout:
    """One episode of the scenario, as algorithms.deeprm.scenarios runs it: the stochastic policy (actions drawn
    with `rng`), with rng=None the greedy one (what the served `deeprm-pg` does), or with `teacher` a heuristic's
    actions (for imitation). With both `net` and `teacher`, the network acts and the recorded actions are the
    teacher's choices in the states the network reaches (DAgger's labels). `keep_busy`: no void action while the
    cluster is idle and a job fits (see DeepRMPgConfig.keep_busy)."""
    sim = DeepRMSimulation(config, jobset_seed)
    spec = config.spec
    m = spec.num_slots
    if net is not None:
        net.for_states(spec)
    elif teacher is None:
        raise ValueError("play needs a network, a teacher or both")
    states: list[tuple] = []
    valids, actions, steps, rewards = [], [], [], []
    while not sim.done and not sim.truncated and sim.t < max_steps:
        while True:
            valid = np.array([j is not None and sim.fits(j) for j in sim.slots] + [not (keep_busy and not sim.running)])
            if not valid[:m].any():
                break
            s = sim_state(sim, spec)
            label = a = teacher(sim, valid) if teacher is not None else -1
            if net is not None:
                p = action_probs(net.from_state(*s), valid if mask else None)
                a = int(np.argmax(p)) if rng is None else int((np.cumsum(p) > rng.random()).argmax())
            states.append(s)
            valids.append(valid)
            actions.append(a if teacher is None else label)
            steps.append(len(rewards))
            if a == m or not valid[a]:
                break
            sim.start_job(sim.slots[a])
        rewards.append(sim.advance())
        sim.take_events()
    d = len(states)
    h, r = spec.time_horizon, spec.num_res
    slow = sim.metrics()["slowdown"] if sim.done else unfinished_slowdown(sim)
    return Rollout(
        used=np.array([s[0] for s in states], dtype=np.int16).reshape(d, h, r),
        slot_len=np.array([s[1] for s in states], dtype=np.int16).reshape(d, m),
        slot_dem=np.array([s[2] for s in states], dtype=np.int16).reshape(d, m, r),
        backlog=np.array([s[3] for s in states], dtype=np.int16), since=np.array([s[4] for s in states], np.int16),
        valid=np.array(valids, dtype=bool).reshape(d, m + 1), action=np.array(actions, dtype=np.int64),
        step=np.array(steps, dtype=np.int64), rewards=np.array(rewards, dtype=np.float64), slowdown=float(slow))


def unfinished_slowdown(sim: DeepRMSimulation) -> float:
    """Mean slowdown of an episode cut short, counting every job that has arrived (and was not dropped) with the
    least slowdown it can still reach: started jobs with their finish time, waiting ones as if started now."""
    started = sim.start >= 0
    waiting = np.array([j for j, _ in sim.waiting()], dtype=np.int64)
    end = np.where(started, sim.finish, -1)
    end[waiting] = sim.t + sim.length[waiting]
    seen = end >= 0
    if not seen.any():
        return float("nan")
    return float(np.mean((end[seen] - sim.arrival[seen]) / sim.length[seen]))


def returns_to_go(rewards: np.ndarray, discount: float) -> np.ndarray:
    """G_t = Σ_{t' >= t} γ^(t'-t) r_t'."""
    g = np.zeros(len(rewards) + 1)
    for t in range(len(rewards) - 1, -1, -1):
        g[t] = rewards[t] + discount * g[t + 1]
    return g[:-1]


def advantages(rollouts: list[Rollout], discount: float, baseline: str) -> list[np.ndarray]:
    """Each decision's return minus the time-dependent baseline over the job set's rollouts.

    A decision at time step t gets the return of the step's reward and all after it (every decision of a step
    shares it). Baseline "time": b_t is the mean of the rollouts' returns from step t (0 for a rollout already
    over); "step": the returns are indexed by decision and b_k is the mean at the k-th decision (DeepRM's code).
    """
    per_step = [returns_to_go(r.rewards, discount) for r in rollouts]
    if baseline == "time":
        values = per_step
        index = [r.step for r in rollouts]
    else:
        values = [g[r.step] for g, r in zip(per_step, rollouts)]
        index = [np.arange(len(r.step)) for r in rollouts]
    horizon = max((len(v) for v in values), default=0)
    padded = np.zeros((len(values), horizon))
    for i, v in enumerate(values):
        padded[i, :len(v)] = v
    b = padded.mean(axis=0)
    return [v[i] - b[i] for v, i in zip(values, index)]


# The process pool's per-worker copy of what every rollout needs (sent once, when the pool starts).
_WORKER: dict[str, Any] = {}


def _init_worker(configs: list[DeepRMConfig], mask: bool, max_steps: int, keep_busy: bool = False) -> None:
    from algorithms.rl_fc.policy import single_threaded_blas

    single_threaded_blas()
    _WORKER.update(configs=configs, mask=mask, max_steps=max_steps, keep_busy=keep_busy)


def play_jobset(tensors: dict[str, np.ndarray], config_index: int, jobset_seed: int, rollout_seeds: list[list[int]]
                ) -> list[Rollout]:
    net = PolicyNetwork(tensors)
    cfg = _WORKER["configs"][config_index]
    net.for_states(cfg.spec)
    return [play(cfg, jobset_seed, net, np.random.default_rng(s), _WORKER["mask"], _WORKER["max_steps"],
                 keep_busy=_WORKER["keep_busy"])
            for s in rollout_seeds]


# ------------------------------------------------------------------------------------------------ network


def make_network(input_dim: int, n_actions: int, hidden: tuple[int, ...]):
    class PolicyMLP(nn.Module):
        """Image -> M + 1 logits; parameter names (fc.0 ... fc.N) are the artifact's tensor names."""

        def __init__(self):
            super().__init__()
            sizes = [input_dim, *hidden, n_actions]
            self.fc = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for layer in self.fc[:-1]:
                x = torch.relu(layer(x))
            return self.fc[-1](x)

    return PolicyMLP()


def network_tensors(net) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy().copy() for k, v in net.state_dict().items()}


def evaluate_baseline(scenario: Scenario, name: str, seeds: list[int]) -> dict[str, float]:
    """A baseline policy's mean slowdown on `seeds`, through the scenario."""
    driver = InProcessDriver(create(name))
    slow = np.array([scenario.run_episode(driver, s)["slowdown"] for s in seeds])
    return {"slowdown": float(slow.mean()), "slowdown_std": float(slow.std())}


class DeepRMPgTrainer:
    """Network, optimiser and history of one run; checkpoints all of them for --resume."""

    def __init__(self, scenario: Scenario, cfg: DeepRMPgConfig, seed: int, out: Path):
        config = getattr(scenario, "config", None)
        if not isinstance(config, DeepRMConfig):
            raise ValueError(f"deeprm-pg trains on the deeprm scenario, not {scenario.name}")
        torch.set_num_threads(max(1, cfg.threads))
        torch.manual_seed(seed)
        self.scenario, self.cfg, self.seed, self.out = scenario, cfg, seed, out
        self.keep_busy = cfg.keep_busy and cfg.mask_invalid
        self.spec: ImageSpec = config.spec
        self.configs = [dataclasses.replace(config, load=float(x), job_rate=None) for x in cfg.loads] or [config]
        self.net = make_network(self.spec.time_horizon * self.spec.width, self.spec.num_slots + 1, cfg.hidden)
        self.optim = (torch.optim.Adam(self.net.parameters(), lr=cfg.lr) if cfg.optimizer == "adam" else
                      torch.optim.RMSprop(self.net.parameters(), lr=cfg.lr, alpha=0.9, eps=1e-6))
        self.iteration = 0
        self.rows: list[dict[str, Any]] = []       # one per iteration
        self.curve: list[dict[str, Any]] = []      # one per evaluation
        self.baselines: dict[str, dict[str, float]] = {}
        self.best: dict[str, Any] | None = None
        self.first_beat_sjf: dict[str, Any] | None = None
        self.imitation: dict[str, Any] | None = None
        self.train_seconds = 0.0
        self.wall_seconds = 0.0
        self.pool = None          # emulator.learners.rollouts: inline, local processes or Ray
        self.rollouts = None      # --workers / --ray (a RolloutSpec); None: cfg.workers local processes
        self._plotted_at = time.monotonic()

    # ---------------------------------------------------------------- one iteration

    def jobset_seed(self, iteration: int, k: int) -> int:
        return self.cfg.train_seed + 10_000_000 * self.seed + self.cfg.jobsets * iteration + k

    def play_iteration(self) -> list[list[Rollout]]:
        tensors = network_tensors(self.net)
        jobs = [(tensors, k % len(self.configs), self.jobset_seed(self.iteration, k),
                 [[self.seed, self.iteration, k, r] for r in range(self.cfg.rollouts)])
                for k in range(self.cfg.jobsets)]
        if self.pool is None:
            from emulator.learners.rollouts import RolloutSpec, make_pool

            spec = self.rollouts or RolloutSpec(self.cfg.workers)
            self.pool = make_pool(spec, _init_worker, (self.configs, self.cfg.mask_invalid,
                                                       self.cfg.max_rollout_steps, self.keep_busy))
        futures = [self.pool.submit(play_jobset, *job) for job in jobs]
        return [f.result() for f in futures]

    def entropy_weight(self) -> float:
        """The entropy bonus's coefficient at this iteration (linear decay to 0 at `entropy_decay`)."""
        c = self.cfg
        if not c.entropy_decay:
            return c.entropy_coef
        return c.entropy_coef * max(0.0, 1.0 - self.iteration / c.entropy_decay)

    def gradient_step(self, jobsets: list[list[Rollout]]) -> tuple[float, float]:
        """One optimiser step on -Σ log π(a|s)·(G - b) / rollouts (minus the entropy bonus); returns the policy
        loss and the mean entropy of the decisions' action distributions."""
        rollouts = [r for js in jobsets for r in js]
        adv = np.concatenate([a for js in jobsets for a in advantages(js, self.cfg.discount, self.cfg.baseline)])
        if self.cfg.normalize_advantages:
            adv = adv / (adv.std() + 1e-8)
        cat = self.stack(rollouts)
        beta = self.entropy_weight()
        self.optim.zero_grad()
        total = entropy = 0.0
        for lo in range(0, len(adv), self.cfg.batch):
            sl = slice(lo, lo + self.cfg.batch)
            logp_all = self.log_prob_table(cat, sl)
            logp = logp_all.gather(1, torch.from_numpy(cat["action"][sl])[:, None])[:, 0]
            pg = -(logp * torch.from_numpy(adv[sl].astype(np.float32))).sum() / len(rollouts)
            # masked actions have p = 0 and log p = -inf: the clamp makes their p·log p term (and its gradient) 0
            ent = -(logp_all.exp() * logp_all.clamp(min=-1e9)).sum(dim=1)
            loss = pg - beta * ent.sum() / len(rollouts) if beta else pg
            loss.backward()
            total += float(pg.item())
            entropy += float(ent.detach().sum())
        self.optim.step()
        return total, entropy / max(len(adv), 1)

    def stack(self, rollouts: list[Rollout]) -> dict[str, np.ndarray]:
        return {k: np.concatenate([getattr(r, k) for r in rollouts]) for k in
                ("used", "slot_len", "slot_dem", "backlog", "since", "valid", "action")}

    def log_prob_table(self, cat: dict[str, np.ndarray], sl: slice):
        """log π(· | s) of the stored decisions `sl` (−inf for masked actions), rendered in one batch."""
        x = render(cat["used"][sl], cat["slot_len"][sl], cat["slot_dem"][sl], cat["backlog"][sl], cat["since"][sl],
                   self.spec)
        logits = self.net(torch.from_numpy(x.reshape(len(x), -1)))
        if self.cfg.mask_invalid:
            logits = logits.masked_fill(~torch.from_numpy(cat["valid"][sl]), float("-inf"))
        return torch.log_softmax(logits, dim=1)

    def log_probs(self, cat: dict[str, np.ndarray], sl: slice):
        """log π(a | s) of the stored decisions `sl`."""
        return self.log_prob_table(cat, sl).gather(1, torch.from_numpy(cat["action"][sl])[:, None])[:, 0]

    def imitate(self) -> dict[str, Any]:
        """The optional warm start: cross-entropy towards the teacher's actions. Round 1 plays the teacher's own
        episodes; every further round (DAgger) lets the network play `imitate_jobsets` fresh job sets greedily,
        adds the teacher's choices in the states it reached, and fits again on everything gathered so far."""
        t0 = time.perf_counter()
        teacher = TEACHERS[self.cfg.imitate]
        rng = np.random.default_rng([self.seed, 7])
        data: list[Rollout] = []
        rounds = []
        for rnd in range(self.cfg.imitate_rounds):
            base = self.cfg.train_seed + 10_000_000 * self.seed + 5_000_000 + 100_000 * rnd
            net = None
            if rnd:
                net = PolicyNetwork(network_tensors(self.net))
                net.for_states(self.spec)
            played = [play(self.configs[k % len(self.configs)], base + k, net, None, self.cfg.mask_invalid,
                           self.cfg.max_rollout_steps, teacher=teacher, keep_busy=self.keep_busy)
                      for k in range(self.cfg.imitate_jobsets)]
            data += played
            cat = self.stack(data)
            n = len(cat["action"])
            losses = []
            for _ in range(self.cfg.imitate_epochs):
                order = rng.permutation(n)
                total = 0.0
                for lo in range(0, n, self.cfg.imitate_batch):
                    idx = order[lo:lo + self.cfg.imitate_batch]
                    loss = -self.log_probs({k: v[idx] for k, v in cat.items()}, slice(None)).mean()
                    self.optim.zero_grad()
                    loss.backward()
                    self.optim.step()
                    total += float(loss.item()) * len(idx)
                losses.append(round(total / n, 5))
            with torch.no_grad():
                logp = torch.cat([self.log_probs(cat, slice(lo, lo + self.cfg.batch))
                                  for lo in range(0, n, self.cfg.batch)])
            rounds.append({"round": rnd + 1, "decisions": n, "loss": losses,
                           "student_slowdown": (float(np.mean([r.slowdown for r in played])) if rnd else None),
                           "mean_prob_of_teacher_action": float(torch.exp(logp).mean()),
                           "teacher_action_likeliest": float((logp > np.log(0.5)).float().mean())})
        self.imitation = {"teacher": self.cfg.imitate, "decisions": n, "epochs": self.cfg.imitate_epochs,
                          "rounds": rounds, "loss": rounds[-1]["loss"],
                          "mean_prob_of_teacher_action": rounds[-1]["mean_prob_of_teacher_action"],
                          "seconds": round(time.perf_counter() - t0, 1)}
        if self.cfg.rl_lr:
            for group in self.optim.param_groups:
                group["lr"] = self.cfg.rl_lr
        return self.imitation

    def load_init(self) -> None:
        """`init`: the weights of a deeprm-pg model with this run's network shape and image."""
        from policy_engine.artifact import load_artifact

        tensors, meta = load_artifact(self.cfg.init, policy=POLICY_NAME)
        state = self.net.state_dict()
        if set(tensors) != set(state) or any(tuple(tensors[k].shape) != tuple(v.shape) for k, v in state.items()):
            raise ValueError(f"init model {self.cfg.init} has layers {sorted((k, tensors[k].shape) for k in tensors)}, "
                             f"not this run's hidden={list(self.cfg.hidden)}")
        if meta.get("image_spec", {}) != dataclasses.asdict(self.spec):
            raise ValueError(f"init model {self.cfg.init} was trained on another image ({meta.get('image_spec')})")
        self.net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in tensors.items()})
        self.imitation = {"init_model": self.cfg.init, "init_checksum": meta.get("checksum"),
                          "init_model_version": meta.get("model_version"), "init_seed": meta.get("seed"),
                          "init_hyperparameters": meta.get("hyperparameters"), **(meta.get("imitation") or {})}

    def run_iteration(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        jobsets = self.play_iteration()
        t1 = time.perf_counter()
        beta = self.entropy_weight()
        loss, entropy = self.gradient_step(jobsets)
        self.iteration += 1
        rollouts = [r for js in jobsets for r in js]
        reward = np.array([r.rewards.sum() for r in rollouts])
        slow = np.array([r.slowdown for r in rollouts])
        row = {"iteration": self.iteration, "slowdown": float(slow.mean()), "reward": float(reward.mean()),
               "reward_std": float(reward.std()), "decisions": int(sum(len(r.action) for r in rollouts)),
               "loss": loss, "entropy": entropy, "entropy_coef": beta, "rollout_seconds": round(t1 - t0, 3),
               "gradient_seconds": round(time.perf_counter() - t1, 3)}
        self.rows.append(row)
        return row

    # ---------------------------------------------------------------- evaluation

    def eval_seeds(self) -> list[int]:
        return [self.cfg.eval_seed + i for i in range(self.cfg.eval_episodes)]

    def evaluate_baselines(self) -> None:
        for name in self.cfg.baselines:
            if name not in self.baselines:
                self.baselines[name] = evaluate_baseline(self.scenario, name, self.eval_seeds())

    def evaluate(self) -> dict[str, Any]:
        """The greedy policy on the validation job sets (what `deeprm-pg` serving this network does there)."""
        tensors = network_tensors(self.net)
        net = PolicyNetwork(tensors)
        net.for_states(self.spec)
        runs = [play(self.scenario.config, s, net, None, self.cfg.mask_invalid, self.cfg.max_rollout_steps,
                     keep_busy=self.keep_busy)
                for s in self.eval_seeds()]
        slow = np.array([r.slowdown for r in runs])
        m = {"slowdown": float(slow.mean()), "slowdown_std": float(slow.std())}
        row = {"iteration": self.iteration, **m, "train_seconds": round(self.train_seconds, 1),
               "wall_seconds": round(self.wall_seconds, 1)}
        self.curve.append(row)
        sjf = self.baselines.get("sjf")
        if self.first_beat_sjf is None and sjf is not None and m["slowdown"] < sjf["slowdown"]:
            self.first_beat_sjf = dict(row)
        if self.best is None or m["slowdown"] < self.best["slowdown"]:
            self.best = dict(row)
            self.save_model(self.out / BEST_MODEL, tensors, m, best=True)
        return row

    # ---------------------------------------------------------------- files

    def policy_meta(self) -> dict[str, Any]:
        return {"image_spec": dataclasses.asdict(self.spec), "mask_invalid": self.cfg.mask_invalid,
                "keep_busy": self.keep_busy}

    def metadata(self, metrics: dict[str, float], best: bool) -> dict[str, Any]:
        return {
            "policy": POLICY_NAME, "algorithm": "deeprm-pg (REINFORCE, time-dependent baseline)",
            "scenario": self.scenario.name, "scenario_params": self.scenario.describe(), "seed": self.seed,
            "iterations_trained": self.iteration, "selected": "best validation slowdown" if best else "final",
            "hyperparameters": dataclasses.asdict(self.cfg), **self.policy_meta(),
            "validation": {"episodes": self.cfg.eval_episodes, "seed": self.cfg.eval_seed, **metrics},
            "baselines_validation": self.baselines, "first_beat_sjf": self.first_beat_sjf, "imitation": self.imitation,
            "train_seconds": round(self.train_seconds, 1), "wall_seconds": round(self.wall_seconds, 1),
            "model_version": f"deeprm-pg-{self.scenario.name}-s{self.seed}-it{self.iteration}",
        }

    def save_model(self, path: Path, tensors: dict[str, np.ndarray], metrics: dict[str, float],
                   best: bool = False) -> str:
        from policy_engine.artifact import save_artifact

        return save_artifact(path, tensors, self.metadata(metrics, best))

    def checkpoint(self) -> None:
        state = {
            "config": dataclasses.asdict(self.cfg), "scenario": self.scenario.name,
            "scenario_params": json.dumps(self.scenario.describe(), sort_keys=True), "seed": self.seed,
            "iteration": self.iteration, "net": self.net.state_dict(), "optim": self.optim.state_dict(),
            "rows": json.dumps(self.rows), "curve": json.dumps(self.curve), "baselines": json.dumps(self.baselines),
            "best": json.dumps(self.best), "first_beat_sjf": json.dumps(self.first_beat_sjf),
            "imitation": json.dumps(self.imitation),
            "train_seconds": self.train_seconds, "wall_seconds": self.wall_seconds,
        }
        tmp = self.out / f".{CHECKPOINT}.tmp"
        torch.save(state, tmp)
        os.replace(tmp, self.out / CHECKPOINT)

    def restore(self, path: Path) -> None:
        state = common.read_torch_checkpoint(path, self.cfg, RESUMABLE)
        if state["scenario"] != self.scenario.name or state["seed"] != self.seed or \
                state["scenario_params"] != json.dumps(self.scenario.describe(), sort_keys=True):
            raise ValueError(f"checkpoint {path} is for scenario {state['scenario']} seed {state['seed']} with other "
                             f"parameters, not this run's; resume with the same --scenario, --param and --seed")
        self.net.load_state_dict(state["net"])
        self.optim.load_state_dict(state["optim"])
        self.iteration = int(state["iteration"])
        self.rows = json.loads(state["rows"])
        self.curve = json.loads(state["curve"])
        self.baselines = json.loads(state["baselines"])
        self.best = json.loads(state["best"])
        self.first_beat_sjf = json.loads(state["first_beat_sjf"])
        self.imitation = json.loads(state["imitation"])
        self.train_seconds = float(state["train_seconds"])
        self.wall_seconds = float(state["wall_seconds"])

    def write_curve(self, plot: bool = True) -> None:
        data = {"scenario": self.scenario.name, "scenario_params": self.scenario.describe(), "seed": self.seed,
                "config": dataclasses.asdict(self.cfg), "baselines": self.baselines, "evaluations": self.curve,
                "iterations": self.rows, "first_beat_sjf": self.first_beat_sjf, "imitation": self.imitation,
                "train_seconds": round(self.train_seconds, 1), "wall_seconds": round(self.wall_seconds, 1)}
        common.write_json(self.out / CURVE_JSON, data)
        if plot:
            plot_learning_curve(data, self.out / CURVE_PNG)
            self._plotted_at = time.monotonic()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None


def plot_learning_curve(data: dict[str, Any], path: Path) -> None:
    """DeepRM's Fig. 3: mean slowdown and mean reward (± std) per iteration; validation vs SJF and Packer."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    rows = data["iterations"]
    if rows:
        x = np.array([r["iteration"] for r in rows])
        ax.plot(x, [r["slowdown"] for r in rows], color="C0", lw=0.8, alpha=0.7, label="training rollouts")
        reward = np.array([r["reward"] for r in rows])
        std = np.array([r["reward_std"] for r in rows])
        ax2.plot(x, reward, color="C2", lw=0.8, label="mean reward per rollout")
        ax2.fill_between(x, reward - std, reward + std, color="C2", alpha=0.2, label="± std")
    ev = data["evaluations"]
    if ev:
        ax.plot([r["iteration"] for r in ev], [r["slowdown"] for r in ev], "o-", ms=3, color="black",
                label="validation (greedy)")
    for i, (name, m) in enumerate(sorted(data["baselines"].items())):
        ax.axhline(m["slowdown"], color=f"C{i + 3}", ls="--", label=f"{name.upper()} (validation)")
    ax.set_xlabel("iteration")
    ax.set_ylabel("mean job slowdown")
    ax.set_title(f"DeepRM-PG on {data['scenario']} (load {data['scenario_params'].get('load')})")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax2.set_xlabel("iteration")
    ax2.set_ylabel("total reward per rollout (−Σ slowdown)")
    ax2.legend(fontsize=8)
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def train_deeprm_pg(scenario: Scenario, episodes: int | None, seed: int, out: Path, resume: bool = False,
                    progress: bool = True, options: dict[str, Any] | None = None,
                    rollouts: Any = None) -> dict[str, Any]:
    """`emulator train --algo deeprm-pg`: iterations of REINFORCE, evaluations, checkpoints, the artifact.
    `rollouts` (--workers, --ray) takes the place of `--set workers=N`; the model does not depend on either."""
    options = dict(options or {})
    if rollouts is not None:
        options["workers"] = rollouts.workers
    cfg = DeepRMPgConfig.from_options(options, iterations=episodes)
    ckpt = common.prepare_out(out, CHECKPOINT, resume)
    started = time.perf_counter()
    trainer = DeepRMPgTrainer(scenario, cfg, seed, out)
    trainer.rollouts = rollouts
    if resume:
        trainer.restore(ckpt)
    if cfg.init and trainer.imitation is None:
        trainer.load_init()   # before the baselines' episodes: a bad file fails at once
    trainer.evaluate_baselines()
    if cfg.imitate and trainer.imitation is None:
        t0 = time.perf_counter()
        trainer.imitate()
        trainer.train_seconds += time.perf_counter() - t0
        trainer.curve = []   # the warm-started network is iteration 0
        trainer.evaluate()
        trainer.checkpoint()   # a resume does not imitate again
    if not trainer.curve:
        trainer.evaluate()   # iteration 0: the untrained network
    trainer.wall_seconds += time.perf_counter() - started
    bar = common.progress(cfg.iterations, trainer.iteration, f"deeprm-pg {scenario.name}", enabled=progress)
    bar.unit = "it"
    last = trainer.curve[-1]
    try:
        while trainer.iteration < cfg.iterations:
            t0 = time.perf_counter()
            row = trainer.run_iteration()
            trainer.train_seconds += time.perf_counter() - t0
            it = trainer.iteration
            if it % cfg.eval_every == 0 or it == cfg.iterations:
                last = trainer.evaluate()
            trainer.wall_seconds += time.perf_counter() - t0
            if it % cfg.checkpoint_every == 0 and it < cfg.iterations:
                trainer.checkpoint()
                trainer.write_curve(plot=time.monotonic() - trainer._plotted_at >= PLOT_EVERY_S)
            bar.set_postfix({"slowdown": f"{row['slowdown']:.2f}", "reward": f"{row['reward']:.1f}",
                             "val": f"{last['slowdown']:.3f}",
                             "sjf": f"{trainer.baselines.get('sjf', {}).get('slowdown', float('nan')):.3f}"})
            bar.update(1)
    finally:
        trainer.close()
        bar.close()
    if trainer.curve[-1]["iteration"] != trainer.iteration:
        trainer.evaluate()
    final = {k: trainer.curve[-1][k] for k in ("slowdown", "slowdown_std")}
    checksum = trainer.save_model(out / MODEL, network_tensors(trainer.net), final)
    trainer.checkpoint()
    trainer.write_curve()
    return {"algo": "deeprm-pg", "scenario": scenario.name, "seed": seed, "iterations": trainer.iteration,
            "train_seconds": round(trainer.train_seconds, 1), "wall_seconds": round(trainer.wall_seconds, 1),
            "model": str(out / MODEL), "checksum": checksum, "best_model": str(out / BEST_MODEL),
            "best": trainer.best, "final": final, "baselines": trainer.baselines,
            "first_beat_sjf": trainer.first_beat_sjf, "learning_curve": str(out / CURVE_PNG)}


register_algo("deeprm-pg", train_deeprm_pg, families={"deeprm"}, parallel=True)
