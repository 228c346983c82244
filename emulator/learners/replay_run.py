"""The run bookkeeping RL-FC and RL-LSFC share: model metadata, torch checkpoints for --resume, learning curves.

Both learners play episodes, value their decisions and fit a network from a replay buffer; they differ in the
network, the values and the metric that selects the best model. A trainer subclasses ReplayRun, sets the class
attributes below and fills in the hooks; everything that touches files is here, once.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from policy_engine.extras import require

require("torch", extra="train", feature="RL-FC and RL-LSFC training")

import torch  # noqa: E402

from emulator.learners import common  # noqa: E402

CHECKPOINT = "checkpoint.pt"
MODEL = "model.safetensors"
BEST_MODEL = "best-model.safetensors"
CURVE_JSON = "learning-curve.json"
CURVE_PNG = "learning-curve.png"
PLOT_EVERY_S = 300.0
# hyper-parameters a resumed run may change (how long it runs and how often it reports), not what it learns
RESUMABLE_CHANGES = ("episodes", "eval_every", "checkpoint_every", "threads", "device")
# the numeric type of the weights sent to the rollout workers
WEIGHTS_DTYPE = np.float32


def train_seed(cfg: Any, seed: int, episode: int) -> int:
    """Workload seed of 0-based training `episode` of a run seeded `seed`."""
    return cfg.train_seed + 100_000 * seed + episode


@dataclasses.dataclass(frozen=True)
class CurveStyle:
    """How the learning-curve PNG shows a learner's validation metric."""

    metric: str             # key of an evaluation row, e.g. "eval_app"
    ylabel: str
    label: str              # the learner's name in the legend


class ReplayRun:
    """Run state (episode count, curve, baselines, best model, timings) and the files written from it."""

    algorithm: str          # "rl-fc", "rl-lsfc"
    policy_name: str        # the policy that serves the saved artifact
    selected_by: str        # what picks best-model.safetensors, for the metadata
    style: CurveStyle

    # set by the subclass __init__ before init_run_state()
    scenario: Any
    cfg: Any
    seed: int
    out: Path
    net: torch.nn.Module
    optim: torch.optim.Optimizer
    state_dim: int
    n_actions: int

    # set by the subclass: the module-level functions a rollout worker runs (see emulator.learners.rollouts)
    pool: Any = None

    def init_run_state(self) -> None:
        self.episode = 0                              # episodes completed
        self.play_weights: dict[str, np.ndarray] | None = None   # weights the next round is played with
        self.curve: list[dict[str, Any]] = []         # one row per evaluation
        self.train_rows: list[dict[str, Any]] = []    # one row per training episode
        self.baselines: dict[str, dict[str, float]] = {}
        self.best: dict[str, Any] | None = None
        self.train_seconds = 0.0   # playing training episodes, valuing them and the training passes
        self.wall_seconds = 0.0    # the whole run: training, evaluations, checkpoints
        self._plotted_at = time.monotonic()

    def plot_due(self) -> bool:
        """The PNG is redrawn at most every PLOT_EVERY_S during a run (matplotlib takes seconds), and at the end."""
        return time.monotonic() - self._plotted_at >= PLOT_EVERY_S

    def train_seed(self, episode: int) -> int:
        return train_seed(self.cfg, self.seed, episode)

    # ---------------------------------------------------------------- rollouts (emulator.learners.rollouts)

    def network_weights(self) -> dict[str, np.ndarray]:
        """The network's weights as the rollout workers' numpy policy reads them."""
        raise NotImplementedError

    def start_rollouts(self, spec: Any) -> None:
        """Start the pool that plays this run's episodes (`--workers`, `--ray`); `worker_setup()` says what every
        worker builds once."""
        from emulator.learners.rollouts import make_pool

        setup, args = self.worker_setup()
        self.pool = make_pool(spec, setup, args)
        if self.play_weights is None:
            self.play_weights = self.network_weights()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def worker_setup(self) -> tuple[Callable, tuple]:
        raise NotImplementedError

    def submit_round(self, first: int, last: int, weights: dict[str, np.ndarray]) -> list[Any]:
        """Episodes first..last (1-based) played with `weights`, as futures in episode order."""
        return [self.pool.submit(self.play_fn, weights, ep) for ep in range(first, last + 1)]

    def play_fn(self, weights: dict[str, np.ndarray], episode: int) -> dict[str, Any]:
        raise NotImplementedError

    def evaluate_episodes(self, fn: Callable, weights: dict[str, np.ndarray] | None, name: str,
                          seeds: list[int]) -> list[dict[str, float]]:
        """Validation episodes of one policy (`weights` for the learned one, `name` for a baseline), in the pool."""
        futures = [self.pool.submit(fn, weights, name, s) for s in seeds]
        return [f.result() for f in futures]

    def fit_minibatches(self, n: int, loss_of: Callable[[slice], torch.Tensor]) -> float:
        """One training pass over n sampled decisions in minibatches of cfg.minibatch (loss_of gives a slice's loss);
        the mean loss."""
        losses = []
        self.net.train()
        for start in range(0, n, self.cfg.minibatch):
            loss = loss_of(slice(start, start + self.cfg.minibatch))
            self.optim.zero_grad()
            loss.backward()
            self.optim.step()
            losses.append(loss.item())
        return float(np.mean(losses))

    # ---------------------------------------------------------------- hooks

    def metadata_extra(self) -> dict[str, Any]:
        """Learner-specific metadata keys (design choices worth recording with the model)."""
        return {}

    def checkpoint_extra(self) -> dict[str, Any]:
        """Learner-specific checkpoint entries (JSON-able values are stored as JSON strings by the caller)."""
        return {}

    def before_restore(self, state: dict[str, Any]) -> None:
        """Called before the network and optimiser are loaded (e.g. to size a network built lazily)."""

    def after_restore(self, state: dict[str, Any]) -> None:
        """Called last; the behaviour policy must be re-synced with the restored network here."""

    # ---------------------------------------------------------------- files

    def metadata(self, metrics: dict[str, Any], best: bool) -> dict[str, Any]:
        return {
            "policy": self.policy_name, "algorithm": self.algorithm, "scenario": self.scenario.name,
            "scenario_params": self.scenario.describe(), "seed": self.seed, "episodes_trained": self.episode,
            "selected": self.selected_by if best else "final episode",
            "hyperparameters": dataclasses.asdict(self.cfg), "state_dim": self.state_dim,
            "n_clusters": self.n_actions, **self.metadata_extra(),
            "validation": {"episodes": self.cfg.eval_episodes, "seed": self.cfg.eval_seed, **metrics},
            "baselines_validation": self.baselines, "train_seconds": round(self.train_seconds, 1),
            "wall_seconds": round(self.wall_seconds, 1),
            "model_version": f"{self.algorithm}-{self.scenario.name}-s{self.seed}-ep{self.episode}",
        }

    def save_model(self, path: Path, tensors: dict[str, np.ndarray], metrics: dict[str, Any],
                   best: bool = False) -> str:
        from policy_engine.artifact import save_artifact

        return save_artifact(path, tensors, self.metadata(metrics, best))

    def checkpoint(self) -> None:
        state = {
            "config": dataclasses.asdict(self.cfg), "scenario": self.scenario.name, "seed": self.seed,
            "episode": self.episode, "state_dim": self.state_dim, "n_actions": self.n_actions,
            "net": self.net.state_dict(), "optim": self.optim.state_dict(),
            "buffer": {k: torch.from_numpy(v) for k, v in self.buffer.state_dict().items()},
            "rng": json.dumps(self.rng.bit_generator.state),
            # the round in flight when the run stops is played again with these on --resume
            "play_weights": {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in self.play_weights.items()},
            "torch_rng": torch.get_rng_state(),
            "curve": json.dumps(self.curve), "train_rows": json.dumps(self.train_rows),
            "baselines": json.dumps(self.baselines), "best": json.dumps(self.best),
            "train_seconds": self.train_seconds, "wall_seconds": self.wall_seconds,
            **{k: json.dumps(v) for k, v in self.checkpoint_extra().items()},
        }
        tmp = self.out / f".{CHECKPOINT}.tmp"
        torch.save(state, tmp)
        os.replace(tmp, self.out / CHECKPOINT)

    def restore(self, path: Path) -> None:
        state = common.read_torch_checkpoint(path, self.cfg, RESUMABLE_CHANGES)
        if state["scenario"] != self.scenario.name or state["seed"] != self.seed:
            raise ValueError(f"checkpoint {path} is for scenario {state['scenario']} seed {state['seed']}, not "
                             f"{self.scenario.name} seed {self.seed}")
        self.before_restore(state)
        self.net.load_state_dict(state["net"])
        self.optim.load_state_dict(state["optim"])
        self.buffer.load_state_dict({k: v.numpy() for k, v in state["buffer"].items()})
        self.rng.bit_generator.state = json.loads(state["rng"])
        if "play_weights" not in state:
            raise ValueError(f"checkpoint {path} is from before rounds of rollouts (no play_weights): it cannot be "
                             "continued bit-identically; start a new run")
        self.play_weights = {k: v.numpy() for k, v in state["play_weights"].items()}
        torch.set_rng_state(state["torch_rng"])
        self.episode = state["episode"]
        self.curve = json.loads(state["curve"])
        self.train_rows = json.loads(state["train_rows"])
        self.baselines = json.loads(state["baselines"])
        self.best = json.loads(state["best"])
        self.train_seconds = float(state["train_seconds"])
        self.wall_seconds = float(state.get("wall_seconds", 0.0))
        self.after_restore(state)

    def write_curve(self, plot: bool = True) -> None:
        data = {"scenario": self.scenario.name, "seed": self.seed, "config": dataclasses.asdict(self.cfg),
                "baselines": self.baselines, "evaluations": self.curve, "episodes": self.train_rows,
                "train_seconds": round(self.train_seconds, 1), "wall_seconds": round(self.wall_seconds, 1)}
        common.write_json(self.out / CURVE_JSON, data)
        if plot:
            plot_learning_curve(data, self.out / CURVE_PNG, self.style)
            self._plotted_at = time.monotonic()


def plot_learning_curve(data: dict[str, Any], path: Path, style: CurveStyle) -> None:
    """Validation metric of the greedy policy per evaluation, baselines as horizontal lines; training-episode TMDL
    and ε1 beside it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    ev = data["evaluations"]
    if ev:
        ax.plot([r["episode"] for r in ev], [r[style.metric] for r in ev], "o-", color="black", ms=3,
                label=style.label)
    for i, (name, m) in enumerate(sorted(data["baselines"].items())):
        ax.axhline(m[style.metric], color=f"C{i}", linestyle="--", label=name.upper())
    ax.set_xlabel("training episode")
    ax.set_ylabel(style.ylabel)
    ax.set_title(f"{data['scenario']}: greedy policy vs baselines")
    ax.legend(fontsize=8)
    rows = data["episodes"]
    if rows:
        x = np.array([r["episode"] for r in rows])
        tmdl = np.array([r["tmdl"] for r in rows], dtype=float)
        k = max(1, len(x) // 50)
        ax2.plot(x[k - 1:], np.convolve(tmdl, np.ones(k) / k, mode="valid"), color="C3",
                 label=f"training-episode TMDL (mean of {k})")
        ax2.set_xlabel("training episode")
        ax2.set_ylabel("TMDL of the behaviour policy")
        ax3 = ax2.twinx()
        ax3.plot(x, [r["eps1"] for r in rows], color="gray", linewidth=0.8)
        ax3.set_ylabel("ε1 (grey)")
        ax2.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
