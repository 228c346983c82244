"""Tooling every `emulator train` algorithm shares: progress bar, checkpoints with --resume, learning curves.

Checkpoints are model artifacts (policy_engine.artifact: safetensors + JSON metadata, checksummed, written
atomically), so a run killed mid-write resumes from the previous checkpoint and never from a torn file.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from policy_engine.extras import require

require("tqdm", "matplotlib", extra="emulator", feature="training in the emulator")

from tqdm import tqdm  # noqa: E402

from policy_engine.artifact import ArtifactError, load_artifact, save_artifact  # noqa: E402

CHECKPOINT = "checkpoint.safetensors"


def progress(total: int, initial: int = 0, desc: str = "train", enabled: bool = True) -> tqdm:
    return tqdm(total=total, initial=initial, desc=desc, unit="ep", file=sys.stderr, disable=not enabled,
                dynamic_ncols=True)


def save_checkpoint(out: Path, tensors: dict[str, np.ndarray], meta: dict[str, Any]) -> Path:
    path = Path(out) / CHECKPOINT
    save_artifact(path, tensors, meta)
    return path


def load_checkpoint(out: Path, policy: str) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
    """The latest checkpoint in `out`, or None when there is none; a damaged one is an error, not a fresh start."""
    path = Path(out) / CHECKPOINT
    if not path.exists():
        return None
    try:
        return load_artifact(path, policy=policy)
    except ArtifactError as e:
        raise ArtifactError(f"cannot resume: {e}") from None


def write_json(path: Path, obj: Any) -> None:
    """Atomic JSON write (temp file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def plot_learning_curve(path: Path, history: Sequence[dict[str, Any]], series: Sequence[tuple[str, str]],
                        title: str, x: str = "episode", secondary: Sequence[tuple[str, str]] = ()) -> Path:
    """One PNG: `series` (key, label) against `x` on the left axis, `secondary` ones on a right axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for key, label in series:
        pts = [(h[x], h[key]) for h in history if key in h]
        if pts:
            ax.plot(*zip(*pts), marker="o", ms=3, label=label)
    ax.set_xlabel(x)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if secondary:
        ax2 = ax.twinx()
        for key, label in secondary:
            pts = [(h[x], h[key]) for h in history if key in h]
            if pts:
                ax2.plot(*zip(*pts), ls="--", color="grey", label=label)
        h2, l2 = ax2.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    ax.legend(handles, labels, fontsize=8, loc="best")
    ax.set_title(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def rounds(start: int, end: int, size: int) -> list[tuple[int, int]]:
    """The rounds of episodes start+1..end: (first, last) 1-based, cut at multiples of `size` (so a run resumed at
    a round's end plays the same rounds as one that never stopped)."""
    out = []
    while start < end:
        stop = min(end, (start // size + 1) * size)
        out.append((start + 1, stop))
        start = stop
    return out


def run_episodes(trainer: Any, cfg: Any, desc: str, validation: tuple[str, str, str], enabled: bool = True) -> None:
    """The episode loop RL-FC and RL-LSFC share, in rounds of `cfg.rollout_batch` episodes played by the trainer's
    rollout pool while the learner fits the previous round.

    Round r is played with the weights learned from rounds 0..r-2 (the weights of the round before when it was
    submitted), so while the learner trains on round r-1 the workers already play round r. Which weights play
    which episode depends only on the round size, never on how many workers there are or where they run: the same
    seed gives the same model. After each round: evaluate when the round reached a multiple of `cfg.eval_every`,
    checkpoint (with the weights of the round in flight) at a multiple of `cfg.checkpoint_every`. `validation` =
    (progress-bar label, metric key, format) of the metric shown from the latest evaluation."""
    import time

    label, key, fmt = validation
    bar = progress(cfg.episodes, trainer.episode, desc, enabled=enabled)
    last_eval = trainer.curve[-1] if trainer.curve else None
    plan = rounds(trainer.episode, cfg.episodes, cfg.rollout_batch)
    t0 = time.perf_counter()
    in_flight = trainer.submit_round(*plan[0], trainer.play_weights) if plan else None
    for i, (first, last) in enumerate(plan):
        # the next round goes out with the weights learned so far, before this round is learned from
        upcoming = trainer.network_weights()
        nxt = trainer.submit_round(*plan[i + 1], upcoming) if i + 1 < len(plan) else None
        row = None
        for episode in in_flight:
            row = trainer.learn(episode.result())
            bar.update(1)
        trainer.play_weights = upcoming
        in_flight = nxt
        now = time.perf_counter()
        trainer.train_seconds += now - t0
        if last // cfg.eval_every > (first - 1) // cfg.eval_every or last == cfg.episodes:
            last_eval = trainer.evaluate()
        if last // cfg.checkpoint_every > (first - 1) // cfg.checkpoint_every and last < cfg.episodes:
            trainer.checkpoint()
            trainer.write_curve(plot=trainer.plot_due())
        t1 = time.perf_counter()
        trainer.wall_seconds += t1 - t0
        t0 = t1
        post = {"eps1": f"{row['eps1']:.3f}", "tmdl": f"{row['tmdl']:.0f}"}
        if row["loss"] is not None:
            post["loss"] = f"{row['loss']:.4f}"
        if last_eval:
            post[label] = format(last_eval[key], fmt)
        bar.set_postfix(post)
    bar.close()
    if not trainer.curve or trainer.curve[-1]["episode"] != trainer.episode:
        t0 = time.perf_counter()
        trainer.evaluate()
        trainer.wall_seconds += time.perf_counter() - t0


def prepare_out(out: Path, checkpoint: str, resume: bool) -> Path:
    """Create `out` and return its checkpoint path; refuse to overwrite a run without --resume, or to resume none."""
    out.mkdir(parents=True, exist_ok=True)
    ckpt = out / checkpoint
    if ckpt.exists() and not resume:
        raise ValueError(f"{out} already holds a training run ({checkpoint}); pass --resume to continue it or "
                         f"choose another --out")
    if resume and not ckpt.exists():
        raise ValueError(f"--resume: no {checkpoint} in {out}")
    return ckpt


def read_torch_checkpoint(path: Path, cfg: Any, resumable: Sequence[str]) -> dict[str, Any]:
    """A learner's torch checkpoint, loaded without arbitrary code (weights_only), refused with one line when it
    cannot be read or was trained with other hyper-parameters than `cfg` (those in `resumable` may differ)."""
    import torch

    try:
        # no arbitrary code from a checkpoint file; on CPU whatever device trained it (load_state_dict moves it)
        state = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as e:
        raise ValueError(f"checkpoint {path} cannot be read ({type(e).__name__}: {e})") from None
    saved = {k: (tuple(v) if isinstance(v, list) else v) for k, v in state["config"].items()}
    differ = [k for k, v in saved.items() if k not in resumable and getattr(cfg, k) != v]
    if differ:
        raise ValueError(f"checkpoint {path} was trained with other hyper-parameters ({', '.join(differ)}); "
                         f"resume with the same --set values")
    return state


def check_torch_device(name: str) -> None:
    """A learner's `device` option: a torch device this machine has ("cpu", "cuda", "cuda:1"), else one line."""
    import torch

    try:
        dev = torch.device(name)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device {name!r} is not a torch device (cpu, cuda, cuda:N): {e}") from None
    if dev.type == "cuda" and (not torch.cuda.is_available() or (dev.index or 0) >= torch.cuda.device_count()):
        raise ValueError(f"device {name!r}: this machine has no such CUDA device (torch sees "
                         f"{torch.cuda.device_count()}); use device=cpu")
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device {name!r}: only cpu and cuda are supported")


def check_numbers(fields: dict[str, Any], values: dict[str, Any]) -> None:
    """Options whose dataclass default is a number must be finite numbers (a --set typo is not a crash later)."""
    for k, v in values.items():
        default = fields[k].default
        if isinstance(default, (int, float)) and not isinstance(default, bool) and (
                isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
            raise ValueError(f"{k} takes a finite number (default {default}), not {v!r}")
