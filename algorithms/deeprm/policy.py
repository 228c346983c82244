"""DeepRM (Mao et al., HotNets 2016; DeepRM): the learned policy network, served behind Schedule.

One Schedule call is one DeepRM time step. The policy reads DeepRM's image off the observation (running
containers, the M job slots, the backlog; policy_engine.features.deeprm), asks the network for its M + 1 action
preferences (start the job of slot i, or the void action), starts the chosen job, updates the image as DeepRM's
environment does (the job joins the cluster's occupancy, its slot takes the backlog's first job) and asks again,
until it picks the void action or no slot job fits. Actions that cannot be taken (an empty slot, a job that does
not fit) are masked out when the model was trained with `mask_invalid` (the default); otherwise picking one ends
the step, as in DeepRM's environment. Models trained with `keep_busy` (the default) are not offered the void
action while nothing runs and a job fits.

The greedy choice (highest probability, first on ties) is the default; `sample=true` draws from the network's
distribution instead, seeded by the request id so the policy stays a pure function of its observation. Inference
is numpy on the saved weights (no torch); the weights come from `emulator train --algo deeprm-pg`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from policy_engine.artifact import ArtifactError, load_artifact
from policy_engine.features.deeprm import BACKLOG, SLOT_TAG, ImageSpec, num_slots, since_newest_ask, slot_asks
from algorithms.deeprm.random_policy import request_rng
from algorithms.rl_fc.policy import single_threaded_blas
from policy_engine.policy import DEEPRM_JOBS, SCHEDULE, ObservationMismatch, Policy, register
from policy_engine.types import Ask, Assignment, Locality, ScheduleDecision, ScheduleObservation

POLICY_NAME = "deeprm-pg"
LAYER_PREFIX = "fc"   # tensors fc.0.weight, fc.0.bias, ... input to output; weights (out, in) as torch stores them


class PolicyNetwork:
    """Forward pass of the policy MLP (ReLU hidden layers, M + 1 logits) in numpy float32."""

    def __init__(self, tensors: dict[str, np.ndarray]):
        single_threaded_blas()
        layers = []
        i = 0
        while f"{LAYER_PREFIX}.{i}.weight" in tensors:
            w = np.asarray(tensors[f"{LAYER_PREFIX}.{i}.weight"], dtype=np.float32)
            b = np.asarray(tensors.get(f"{LAYER_PREFIX}.{i}.bias", np.zeros(0)), dtype=np.float32)
            if w.ndim != 2 or b.shape != (w.shape[0],) or (layers and layers[-1][0].shape[1] != w.shape[1]):
                raise ArtifactError(f"deeprm-pg model: layer {i} has inconsistent shape {w.shape} / {b.shape}")
            if not (np.isfinite(w).all() and np.isfinite(b).all()):
                raise ArtifactError(f"deeprm-pg model: layer {i} holds NaN or infinite weights")
            layers.append((np.ascontiguousarray(w.T), b))
            i += 1
        if len(layers) < 2:
            raise ArtifactError("deeprm-pg model needs tensors fc.0 (hidden) .. fc.N (output); found "
                                f"{sorted(tensors)[:6]}")
        self.layers = layers
        self.input_dim = layers[0][0].shape[0]
        self.n_actions = layers[-1][0].shape[1]
        self.hidden = tuple(wt.shape[1] for wt, _ in layers[:-1])
        self.state_input: StateInput | None = None

    def for_states(self, spec: ImageSpec) -> None:
        """Enable `from_state` (the network's input must be `spec`'s image)."""
        if self.state_input is not None and self.state_input.spec == spec:
            return
        if self.input_dim != spec.time_horizon * spec.width:
            raise ArtifactError(f"deeprm-pg model takes {self.input_dim} inputs; the image is "
                                f"{spec.time_horizon} x {spec.width}")
        self.state_input = StateInput(self.layers[0][0].T, self.layers[0][1], spec)

    def from_state(self, used, slot_len, slot_dem, backlog: int, since: int) -> np.ndarray:
        """Logits of one state given as render()'s arrays (see StateInput)."""
        x = self.state_input(used, slot_len, slot_dem, backlog, since)
        for wt, b in self.layers[1:]:
            np.maximum(x, 0.0, out=x)
            x = x @ wt + b
        return x

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float32)
        for i, (wt, b) in enumerate(self.layers):
            x = x @ wt + b
            if i < len(self.layers) - 1:
                np.maximum(x, 0.0, out=x)
        return x


class StateInput:
    """The first layer's output for a DeepRM state given as render()'s arrays, without drawing the image.

    The image is a set of filled rectangles (occupancy rows, slot blocks, the backlog block) and one column, so
    W·image is a sum of rectangle sums of W, read off prefix sums of W in O(rectangles) instead of O(pixels). Equal
    to `W @ render(...).ravel() + b` up to float rounding; the learner's rollouts and the served policy both use it.
    """

    def __init__(self, weight: np.ndarray, bias: np.ndarray, spec: ImageSpec):
        h, w = spec.time_horizon, spec.width
        wr = np.asarray(weight, dtype=np.float64).reshape(-1, h, w)
        self.spec = spec
        self.bias = np.asarray(bias, dtype=np.float64)
        rows = np.zeros((wr.shape[0], h, w + 1))
        np.cumsum(wr, axis=2, out=rows[:, :, 1:])
        rect = np.zeros((wr.shape[0], h + 1, w + 1))
        np.cumsum(rows, axis=1, out=rect[:, 1:, :])
        self.rows = rows.reshape(wr.shape[0], -1)   # [t, c]: Σ of row t's columns < c
        self.rect = rect.reshape(wr.shape[0], -1)   # [t, c]: Σ of rows < t, columns < c
        self.since_col = wr[:, :, -1].sum(axis=1)
        m, mjs, rs = spec.num_slots, spec.max_job_size, spec.res_slot
        self.res_col = np.array([i * (rs + m * mjs) for i in range(spec.num_res)])
        self.slot_col = np.array([[i * (rs + m * mjs) + rs + k * mjs for i in range(spec.num_res)]
                                  for k in range(m)])
        self.backlog_col = spec.num_res * (rs + m * mjs)
        self.row_base = (np.arange(h) * (w + 1))[:, None]

    def __call__(self, used, slot_len, slot_dem, backlog: int, since: int) -> np.ndarray:
        s = self.spec
        w1 = s.width + 1
        occ = np.minimum(used, s.res_slot)                                      # (h, num_res)
        pos = self.row_base + self.res_col[None, :]
        y = self.rows[:, (pos + occ).ravel()].sum(axis=1) - self.rows[:, pos.ravel()].sum(axis=1)
        length = np.minimum(slot_len, s.time_horizon)[:, None] * w1             # (M, 1)
        size = np.minimum(slot_dem, s.max_job_size)                             # (M, num_res)
        y += self.rect[:, (length + self.slot_col + size).ravel()].sum(axis=1) \
            - self.rect[:, (length + self.slot_col).ravel()].sum(axis=1)
        b = min(int(backlog), s.backlog_size)
        full, rest = divmod(b, s.backlog_width)
        c = self.backlog_col
        y += self.rect[:, full * w1 + c + s.backlog_width] - self.rect[:, full * w1 + c]
        if rest:
            y += self.rows[:, full * w1 + c + rest] - self.rows[:, full * w1 + c]
        y += self.since_col * (min(since, s.max_track_since_new) / s.max_track_since_new)
        return (y + self.bias).astype(np.float32)


def action_probs(logits: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    """Softmax over the actions; with `valid` (bool, same shape) the others get probability 0."""
    z = np.asarray(logits, dtype=np.float64)
    if valid is not None:
        z = np.where(valid, z, -np.inf)
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=-1, keepdims=True)


@register(POLICY_NAME, "DeepRM: REINFORCE-trained policy network over DeepRM's image, one job at a time",
          {SCHEDULE}, model="required", families={"deeprm"})  # reads DeepRM's job slots
class DeepRMPgPolicy(Policy):
    name = POLICY_NAME
    capabilities = frozenset({SCHEDULE})
    reads = frozenset({DEEPRM_JOBS})  # on a real YARN the engine builds the job slots (deeprm_view)

    def __init__(self, model: str | Path | None = None, tensors: dict[str, np.ndarray] | None = None,
                 meta: dict[str, Any] | None = None, sample: bool | str = False, seed: int = 0):
        if (model is None) == (tensors is None):
            raise ValueError("deeprm-pg needs exactly one of a model artifact path or weight tensors")
        if model is not None:
            tensors, meta = load_artifact(model, policy=POLICY_NAME)
        self.meta = dict(meta or {})
        try:
            self.spec = ImageSpec(**self.meta.get("image_spec", {}))
        except TypeError as e:
            raise ArtifactError(f"deeprm-pg model: bad image_spec in its metadata ({e})") from None
        self.mask_invalid = bool(self.meta.get("mask_invalid", True))
        self.keep_busy = self.mask_invalid and bool(self.meta.get("keep_busy", False))
        self.network = PolicyNetwork(tensors)
        self.network.for_states(self.spec)
        if self.network.n_actions != self.spec.num_slots + 1:
            raise ArtifactError(f"deeprm-pg model has {self.network.n_actions} actions, not M + 1 = "
                                f"{self.spec.num_slots + 1}")
        self.sample = sample in (True, "true", "1", "yes") if isinstance(sample, (bool, str)) else bool(sample)
        self.seed = int(seed)
        self.model_version = str(self.meta.get("model_version", ""))
        self.model_checksum = str(self.meta.get("checksum", ""))

    def schedule(self, obs: ScheduleObservation) -> ScheduleDecision:
        spec = self.spec
        m = spec.num_slots
        stated = num_slots(obs, default=m)
        if stated != m:
            raise ObservationMismatch(f"deeprm-pg model was trained for {m} job slots; the observation has {stated}")
        h = spec.time_horizon
        slots: list[Ask | None] = slot_asks(obs, m)
        backlog = [a for a in obs.asks if a.job is not None and a.job.tags.get(SLOT_TAG) == BACKLOG
                   and a.num_containers > 0]
        used = np.zeros((h, spec.num_res), dtype=np.int64)
        for c in obs.node.running:
            used[:min(-(-c.expected_remaining_ms // spec.step_ms), h)] += spec.units(c.resource)
        slot_len = np.zeros(m, dtype=np.int64)
        slot_dem = np.zeros((m, spec.num_res), dtype=np.int64)

        def fill(k: int, ask: Ask | None) -> None:
            slots[k] = ask
            slot_len[k] = 0 if ask is None else max(0, -(-ask.job.expected_runtime_ms // spec.step_ms))
            slot_dem[k] = 0 if ask is None else spec.units(ask.resource)

        for k, ask in enumerate(slots):
            fill(k, ask)
        started: set[str] = set()
        since = since_newest_ask(obs, spec, started)
        free = obs.node.unallocated
        rng = request_rng(obs.request_id, self.seed) if self.sample else None
        out: list[Assignment] = []
        for _ in range(m + len(backlog)):
            idle = self.keep_busy and not obs.node.running and not out
            valid = np.array([a is not None and a.resource.fits_in(free) for a in slots] + [not idle])
            if not valid[:m].any():
                break
            logits = self.network.from_state(used, slot_len, slot_dem, len(backlog), since)
            p = action_probs(logits, valid if self.mask_invalid else None)
            k = int((np.cumsum(p) > rng.random()).argmax()) if rng is not None else int(np.argmax(p))
            if k == m or not valid[k]:
                break   # the void action (or, unmasked, an action DeepRM's environment reads as void)
            ask = slots[k]
            out.append(Assignment(ask.ask_id, 1, Locality.OFF_SWITCH))
            started.add(ask.ask_id)
            since = since_newest_ask(obs, spec, started)   # the started job no longer counts, as in the learner
            free = free.minus(ask.resource)
            used[:min(int(slot_len[k]), h)] += slot_dem[k]
            fill(k, backlog.pop(0) if backlog else None)
        return ScheduleDecision(out)


def image_spec_dict(spec: ImageSpec) -> dict[str, int]:
    return dataclasses.asdict(spec)


# the paper's baselines register beside DeepRM-PG (the policy registry imports each family's policy module)
from algorithms.deeprm import packer, sjf  # noqa: E402,F401
