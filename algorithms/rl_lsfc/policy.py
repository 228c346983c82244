"""RL-LSFC (Liu, Wang, Quan, ICPP 2020): route the buffered job and cluster with the highest scalarized value.

The network of the paper's Fig. 3, served in numpy: every cluster's segmented occupation history (10 segments of
15 steps, `lsfc_split`) goes through one LSTM (weights shared by the clusters); the clusters' last hidden states
join the non-temporal part of the 839-value state (cluster and job features, Table 1) in a shared fully connected
layer; three separate heads (a second FC layer and an output layer each) estimate the value components v1 (the
job's own missed deadlines), v2 (missed deadlines of all jobs on the cluster) and v3 (the job's delay ratio), one
output per cluster. The action value is their weighted sum w1·v1 + w2·v2 + w3·v3 (linear scalarization, Sec. 4.3),
the weights stored in the model as the tensor `scalarization`. Every buffered job is scored and the best
(job, cluster) pair wins (the paper's outer iterator over the global buffer).

The occupation block is the same for every job of one observation, so the LSTM runs once per decision. Inference
is plain numpy (float32): serving needs neither torch nor a GPU. The weights come from
`emulator train --algo rl-lsfc`; tensors are named as the torch modules store them (nn.LSTM gate order i, f, g, o).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from policy_engine.artifact import ArtifactError, load_artifact
from algorithms.rl_fc.policy import single_threaded_blas
from policy_engine.policy import ROUTE, ObservationMismatch, Policy, register
from policy_engine.types import RouteDecision, RouteObservation

POLICY_NAME = "rl-lsfc"
HEADS = ("v1", "v2", "v3")
# Tensor names in the artifact (torch layout: Linear weights are (out, in); LSTM weights (4H, in) / (4H, H)).
LSTM_TENSORS = ("lstm.weight_ih_l0", "lstm.weight_hh_l0", "lstm.bias_ih_l0", "lstm.bias_hh_l0")
FC_LAYERS = ("fc1", *(f"{h}_{layer}" for h in HEADS for layer in ("fc2", "out")))
SCALARIZATION = "scalarization"


def job_states(obs: RouteObservation) -> np.ndarray:
    """The (jobs, 839) float32 matrix of Table 1 states, one row per buffered job."""
    from policy_engine.features.multicluster import lsfc_states

    return lsfc_states(obs)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (np.tanh(0.5 * x) + 1.0)   # overflow-free logistic


class LsfcNetwork:
    """Forward pass of the trained RL-LSFC network in numpy (float32)."""

    def __init__(self, tensors: dict[str, np.ndarray]):
        single_threaded_blas()

        def get(name: str) -> np.ndarray:
            try:
                return np.asarray(tensors[name], dtype=np.float32)
            except KeyError:
                raise ArtifactError(f"rl-lsfc model lacks tensor {name!r}") from None

        w_ih, w_hh, b_ih, b_hh = (get(n) for n in LSTM_TENSORS)
        hidden = w_hh.shape[1] if w_hh.ndim == 2 else -1
        if (w_ih.ndim != 2 or w_hh.shape != (4 * hidden, hidden) or w_ih.shape[0] != 4 * hidden
                or b_ih.shape != (4 * hidden,) or b_hh.shape != (4 * hidden,)):
            raise ArtifactError(f"rl-lsfc model: LSTM tensors have inconsistent shapes {w_ih.shape}, {w_hh.shape}, "
                                f"{b_ih.shape}, {b_hh.shape}")
        self.hidden = hidden
        self.segment = w_ih.shape[1]
        self.w_ih, self.w_hh, self.b = np.ascontiguousarray(w_ih.T), np.ascontiguousarray(w_hh.T), b_ih + b_hh
        self.layers: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name in FC_LAYERS:
            w, b = get(f"{name}.weight"), get(f"{name}.bias")
            if w.ndim != 2 or b.shape != (w.shape[0],):
                raise ArtifactError(f"rl-lsfc model: tensor {name} has inconsistent shape {w.shape} / {b.shape}")
            self.layers[name] = (np.ascontiguousarray(w.T), b)
        fc1_in, fc1_out = self.layers["fc1"][0].shape
        outs = set()
        for h in HEADS:
            w2, w3 = self.layers[f"{h}_fc2"][0], self.layers[f"{h}_out"][0]
            if w2.shape[0] != fc1_out or w3.shape[0] != w2.shape[1]:
                raise ArtifactError(f"rl-lsfc model: head {h} does not fit the shared layer ({w2.shape}, {w3.shape})")
            outs.add(w3.shape[1])
        if len(outs) != 1:
            raise ArtifactError(f"rl-lsfc model: heads disagree on the number of clusters ({sorted(outs)})")
        self.n_actions = outs.pop()
        # fc1 takes every cluster's last hidden state plus the non-temporal rest (5 per cluster + 4 + 12 per cluster)
        self.rest_dim = fc1_in - self.n_actions * hidden
        if self.rest_dim != 17 * self.n_actions + 4:
            raise ArtifactError(f"rl-lsfc model: fc1 takes {fc1_in} inputs; {self.n_actions} clusters with LSTM "
                                f"size {hidden} need {self.n_actions * hidden + 17 * self.n_actions + 4}")
        weights = get(SCALARIZATION)
        if weights.shape != (len(HEADS),) or not np.all(np.isfinite(weights)):
            raise ArtifactError(f"rl-lsfc model: scalarization weights must be 3 finite numbers, got {weights}")
        self.weights = weights

    def lstm(self, temporal: np.ndarray) -> np.ndarray:
        """(..., segments, segment) -> the last hidden state (..., H), zero initial state."""
        x = np.asarray(temporal, dtype=np.float32)
        lead = x.shape[:-2]
        x = x.reshape(-1, *x.shape[-2:])
        h = np.zeros((x.shape[0], self.hidden), dtype=np.float32)
        c = np.zeros_like(h)
        gates_in = x @ self.w_ih + self.b          # (N, T, 4H): the input part of every step at once
        H = self.hidden
        for t in range(x.shape[1]):
            g = gates_in[:, t] + h @ self.w_hh
            s = _sigmoid(g)   # one call for the i, f, o gates (the g block's sigmoid is unused): fewer numpy calls
            c = s[:, H:2 * H] * c + s[:, :H] * np.tanh(g[:, 2 * H:3 * H])
            h = s[:, 3 * H:] * np.tanh(c)
        return h.reshape(*lead, H)

    def components(self, temporal: np.ndarray, rest: np.ndarray) -> np.ndarray:
        """temporal (B, C, segments, segment), rest (B, rest_dim) -> value components (B, 3, C)."""
        hidden = self.lstm(temporal).reshape(len(rest), -1)
        return self._heads(np.concatenate([hidden, np.asarray(rest, dtype=np.float32)], axis=1))

    def _heads(self, x: np.ndarray) -> np.ndarray:
        w, b = self.layers["fc1"]
        shared = np.maximum(x @ w + b, 0.0)
        out = []
        for h in HEADS:
            w2, b2 = self.layers[f"{h}_fc2"]
            w3, b3 = self.layers[f"{h}_out"]
            out.append(np.maximum(shared @ w2 + b2, 0.0) @ w3 + b3)
        return np.stack(out, axis=1)

    def state_components(self, states: np.ndarray) -> np.ndarray:
        """Value components (jobs, 3, C) of the states of one observation (their occupation block is shared, so
        the LSTM runs on the first row only)."""
        from policy_engine.features.multicluster import lsfc_split

        temporal, rest = lsfc_split(states, self.n_actions)
        hidden = self.lstm(temporal[0]).reshape(1, -1)
        x = np.concatenate([np.repeat(hidden, len(rest), axis=0), rest.astype(np.float32)], axis=1)
        return self._heads(x)

    def __call__(self, states: np.ndarray) -> np.ndarray:
        """Scalarized action values (jobs, C) of one observation's states."""
        return np.einsum("k,bkc->bc", self.weights, self.state_components(states))


@register(POLICY_NAME, "RL-LSFC (ICPP 2020): LSTM over segmented occupation + three value heads, best buffered "
                       "job to best cluster", {ROUTE}, model="required", families={"multicluster"})
class RlLsfcPolicy(Policy):
    name = POLICY_NAME
    capabilities = frozenset({ROUTE})

    def __init__(self, model: str | Path | None = None, tensors: dict[str, np.ndarray] | None = None,
                 meta: dict[str, Any] | None = None):
        if (model is None) == (tensors is None):
            raise ValueError("rl-lsfc needs exactly one of a model artifact path or weight tensors")
        if model is not None:
            tensors, meta = load_artifact(model, policy=POLICY_NAME)
            check_model_meta(meta, model)
        self.meta = dict(meta or {})
        self.network = LsfcNetwork(tensors)
        self.model_version = str(self.meta.get("model_version", ""))
        self.model_checksum = str(self.meta.get("checksum", ""))
        params = self.meta.get("scenario_params") or {}
        self.federation = (params.get("clusters"), params.get("hetero_factors"))

    def _check(self, obs: RouteObservation) -> None:
        if len(obs.clusters) != self.network.n_actions:
            raise ObservationMismatch(f"rl-lsfc model was trained for {self.network.n_actions} clusters; the observation has "
                             f"{len(obs.clusters)}")
        caps, hetero = self.federation
        if caps is not None and hetero is not None:
            seen_caps = [c.capacity for c in obs.clusters]
            seen_hetero = [c.hetero_factor for c in obs.clusters]
            if seen_caps != list(caps) or not np.allclose(seen_hetero, hetero):
                raise ObservationMismatch(f"rl-lsfc model was trained on clusters {list(caps)} with heterogeneity factors "
                                 f"{list(hetero)}; the observation has {seen_caps} with {seen_hetero}")

    def values(self, obs: RouteObservation) -> np.ndarray:
        """Scalarized action values, shape (buffered jobs, clusters), clusters in observation order."""
        self._check(obs)
        return self.network(job_states(obs))

    def route(self, obs: RouteObservation) -> RouteDecision:
        q = self.values(obs)
        job, cluster = divmod(int(np.argmax(q)), q.shape[1])  # first maximum: deterministic ties
        return RouteDecision(job, obs.clusters[cluster].cluster_id)


def check_model_meta(meta: dict[str, Any], where: Any) -> None:
    """Refuse a model trained by another algorithm or on a scenario without heterogeneous clusters."""
    algo = meta.get("algorithm")
    if algo != "rl-lsfc":
        raise ArtifactError(f"model file {where} was trained by {algo!r}, not 'rl-lsfc'")
    scenario = str(meta.get("scenario", ""))
    params = meta.get("scenario_params") or {}
    if not scenario.startswith("hetero-elastic") or not params.get("hetero_factors"):
        raise ArtifactError(f"model file {where} was trained on scenario {scenario!r}; rl-lsfc models come from the "
                            f"heterogeneous, elastic scenarios (hetero-elastic-*)")
