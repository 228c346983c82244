"""RL-FC: route the buffered job and cluster with the highest learned action value.

The value network of Liu et al. (an MLP, two ReLU hidden layers, one output per cluster) scores one job at a
time from its 529-dimension state (Table I); every buffered job is scored and the best (job, cluster) pair wins
(section IV-C1). Inference is plain numpy on the saved weights, so serving needs neither torch nor a GPU, and
the policy is a pure function of the observation. The weights come from `emulator train --algo rl-fc`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from policy_engine.artifact import ArtifactError, load_artifact
from policy_engine.policy import ROUTE, ObservationMismatch, Policy, register
from policy_engine.types import RouteDecision, RouteObservation

POLICY_NAME = "rl-fc"
# Which buffered job a decision routes: "best", the paper's (the best-valued (job, cluster) pair over the whole
# buffer), or "oldest" (the job waiting longest, to its best-valued cluster: time-critical jobs do not wait behind
# better-valued ones; issue 28's held-out workloads). A model trained with one records it; `job_order` overrides.
JOB_ORDERS = ("best", "oldest")
# Tensor names in the artifact, input to output; weights are (out, in) as torch.nn.Linear stores them.
LAYER_NAMES = ("hidden1", "hidden2", "output")


def job_states(obs: RouteObservation) -> np.ndarray:
    """The (jobs, 529) float32 matrix of Table I states, one row per buffered job."""
    from policy_engine.features.multicluster import rlfc_states

    return rlfc_states(obs)


def single_threaded_blas() -> None:
    """Limit BLAS to one thread, process-wide.

    A decision multiplies a handful of rows by the weights: OpenBLAS's thread pool only adds hand-offs there, and
    on a busy 2-core machine it made one forward pass 20x slower (16 ms instead of 0.6 ms).
    """
    global _BLAS_LIMITED
    if not _BLAS_LIMITED:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1, user_api="blas")
        _BLAS_LIMITED = True


_BLAS_LIMITED = False


class ValueNetwork:
    """Forward pass of the trained MLP in numpy (float32)."""

    def __init__(self, tensors: dict[str, np.ndarray]):
        single_threaded_blas()
        layers = []
        prev_out = None
        for name in LAYER_NAMES:
            try:
                w = np.asarray(tensors[f"{name}.weight"], dtype=np.float32)
                b = np.asarray(tensors[f"{name}.bias"], dtype=np.float32)
            except KeyError as e:
                raise ArtifactError(f"rl-fc model lacks tensor {e.args[0]!r}") from None
            if w.ndim != 2 or b.shape != (w.shape[0],) or (prev_out is not None and w.shape[1] != prev_out):
                raise ArtifactError(f"rl-fc model: tensor {name} has inconsistent shape {w.shape} / {b.shape}")
            # Stored transposed once so every call is a plain row-major matmul.
            layers.append((np.ascontiguousarray(w.T), b))
            prev_out = w.shape[0]
        self.layers = layers
        self.input_dim = layers[0][0].shape[0]
        self.n_actions = layers[-1][0].shape[1]

    def __call__(self, states: np.ndarray) -> np.ndarray:
        x = np.asarray(states, dtype=np.float32)
        for i, (wt, b) in enumerate(self.layers):
            x = x @ wt + b
            if i < len(self.layers) - 1:
                np.maximum(x, 0.0, out=x)
        return x


@register(POLICY_NAME, "RL-FC: learned job-and-cluster values, best buffered job (job_order=oldest: the oldest) to "
          "best cluster",
          {ROUTE}, model="required", families={"multicluster"})
class RlFcPolicy(Policy):
    name = POLICY_NAME
    capabilities = frozenset({ROUTE})

    def __init__(self, model: str | Path | None = None, tensors: dict[str, np.ndarray] | None = None,
                 meta: dict[str, Any] | None = None, job_order: str | None = None):
        if (model is None) == (tensors is None):
            raise ValueError("rl-fc needs exactly one of a model artifact path or weight tensors")
        if model is not None:
            tensors, meta = load_artifact(model, policy=POLICY_NAME)
        self.meta = dict(meta or {})
        trained = (self.meta.get("hyperparameters") or {}).get("job_order", "best")
        self.job_order = job_order or trained
        if self.job_order not in JOB_ORDERS:
            raise ValueError(f"rl-fc job_order must be one of {', '.join(JOB_ORDERS)}, not {self.job_order!r}")
        self.network = ValueNetwork(tensors)
        self.model_version = str(self.meta.get("model_version", ""))
        self.model_checksum = str(self.meta.get("checksum", ""))

    def values(self, obs: RouteObservation, first_only: bool = False) -> np.ndarray:
        """Action values, shape (buffered jobs, clusters), clusters in observation order (`first_only`: the
        oldest buffered job's row alone)."""
        if len(obs.clusters) != self.network.n_actions:
            raise ObservationMismatch(f"rl-fc model was trained for {self.network.n_actions} clusters; the observation has "
                             f"{len(obs.clusters)}")
        states = job_states(obs)
        if states.shape[1] != self.network.input_dim:
            raise ObservationMismatch(f"rl-fc model expects {self.network.input_dim}-dimension states, got {states.shape[1]}")
        return self.network(states[:1] if first_only else states)

    def route(self, obs: RouteObservation) -> RouteDecision:
        if self.job_order == "oldest":   # the buffer is in arrival order
            return RouteDecision(0, obs.clusters[int(np.argmax(self.values(obs, first_only=True)[0]))].cluster_id)
        q = self.values(obs)
        job, cluster = divmod(int(np.argmax(q)), q.shape[1])  # first maximum: deterministic ties
        return RouteDecision(job, obs.clusters[cluster].cluster_id)
