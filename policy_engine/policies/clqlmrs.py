"""CLQLMRS: SARSA Q-learning for cache and data locality on node heartbeats (seed 001).

On each heartbeat the policy decides which pending map asks get containers on this node, reading where each job's
input blocks and cached replicas are (Ask.job.input_blocks) and YARN's host / rack / ANY counts (AskOnNode). The
decision is a pure function of the observation and the Q-table this object holds (exploration draws come from a
generator seeded by the observation); the learner (policy_engine.clqlmrs.ClqlmrsLearner) is separate and updates
the table. See policy_engine/clqlmrs.py for the states, rewards and the two table encodings.

Options (`policy-engine serve --policy clqlmrs --set KEY=VALUE`):
  mode=abstract|paper   table encoding (default abstract; a loaded model fixes it)
  learn=true|false      learn online from Report feedback while serving (default true); false freezes the table
                        and turns exploration off
  save_to=PATH          where the learned table is persisted (default: nowhere, in memory only; never over the
                        --model file); loaded on start when it exists, so a restarted engine resumes
  save_every_s=30       seconds between periodic saves (also saved on shutdown)
  epsilon=0.05          exploration while learning online (decayed x epsilon_decay every decay_every finished jobs)
  alpha=0.1 gamma=0.95 epsilon_decay=0.999 decay_every=10   the paper's SARSA settings
  wait_cost=0.05        reward of one WAIT step (abstract mode only)
  max_wait=1            a job that has waited this many heartbeats per cluster node is placed whatever the table
                        says (abstract mode). Liveness: with a discounted WAIT cost, waiting for ever is worth at
                        least -wait_cost / (1 - gamma), so a table alone could starve a job. 1 (about one heartbeat
                        interval) is of the order of ACL's own budget (C <= 3 skips); with 3, three concurrent
                        64 MB-block WordCounts took 27.7 s instead of 22.3 s (FIFO 19.8, ACL 22.7)
  order=fifo            which job gets the node among those whose table action is PLACE (abstract mode): the
                        earliest submitted (fifo, default; a job whose action is WAIT lets the node go to the next,
                        as in delay scheduling) or the highest Q(s, PLACE) (q: cache-local first across jobs, which
                        interleaves jobs and measured 17-40 % longer mean job times on 3 concurrent WordCounts)
  seed=0                seed of exploration draws
  (wait_cost, max_wait and order default to the values a loaded model was trained with)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from policy_engine.clqlmrs import (
    ALPHA,
    DECAY_EVERY,
    EPSILON_DECAY,
    GAMMA,
    PLACE,
    POLICY_NAME,
    WAIT,
    AbstractEncoding,
    ClqlmrsLearner,
    LocalityState,
    PaperEncoding,
    Step,
    cached_fraction,
    has_locality_preference,
    make_encoding,
    placement,
    read_locality,
    rng_for,
    state_counts,
)
from policy_engine.locality import AskOnNode
from policy_engine.policies.fifo import fifo_order
from policy_engine.policy import ONLINE_LEARNING, SCHEDULE, Policy, register
from policy_engine.qlearning import EpsilonSchedule, QTable
from policy_engine.types import Assignment, Locality, ScheduleDecision, ScheduleObservation

ONLINE_EPSILON = 0.05
DEFAULT_WAIT_COST = 0.05
DEFAULT_MAX_WAIT = 1.0


def _as_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0"):
        return value.lower() in ("true", "yes", "1")
    raise ValueError(f"{name} must be true or false, not {value!r}")


def _as_float(name: str, value: Any, lo: float, hi: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, not {value!r}") from None
    if not (lo <= v <= hi) or math.isnan(v):
        raise ValueError(f"{name} must be in [{lo}, {hi}], not {value!r}")
    return v


@dataclass(slots=True)
class _Candidate:
    ask: Any
    view: AskOnNode
    cached: float
    n_tasks: int
    counts: np.ndarray  # the job's pending blocks on this node by state, minus those launched this heartbeat


@register(POLICY_NAME, "CLQLMRS: SARSA Q-learning on cache / data / rack locality per heartbeat, learns online "
                       "from Report (seed 001)", {SCHEDULE}, model="optional")
class ClqlmrsPolicy(Policy):
    name = POLICY_NAME
    capabilities = frozenset({SCHEDULE})

    def __init__(self, model: str | Path | None = None, mode: str | None = None, learn: Any = True,
                 save_to: str | Path | None = None, save_every_s: Any = 30.0, epsilon: Any = None,
                 alpha: Any = ALPHA, gamma: Any = GAMMA, epsilon_decay: Any = EPSILON_DECAY,
                 decay_every: Any = DECAY_EVERY, wait_cost: Any = None, max_wait: Any = None, order: Any = None,
                 seed: Any = 0, max_tasks: Any = 1024, max_nodes: Any = 32):
        self.learn = _as_bool("learn", learn)
        self.alpha = _as_float("alpha", alpha, 1e-9, 1.0)
        self.gamma = _as_float("gamma", gamma, 0.0, 1.0)
        self.epsilon_decay = _as_float("epsilon_decay", epsilon_decay, 1e-9, 1.0)
        self.decay_every = int(_as_float("decay_every", decay_every, 1, 1e9))
        self.save_every_s = _as_float("save_every_s", save_every_s, 0.0, 1e9)
        self.seed = int(_as_float("seed", seed, 0, 2 ** 63 - 1))
        # The learned table goes to save_to, never over the --model artifact; a save_to that exists is what a
        # restarted engine resumes from (it wins over --model, which is only the starting point).
        self.save_to = Path(save_to) if save_to else None
        source = self.save_to if self.save_to is not None and self.save_to.exists() else (
            Path(model) if model else None)
        meta: dict[str, Any] = {}
        if source is not None:
            from policy_engine.artifact import load_artifact

            _, meta = load_artifact(source, policy=POLICY_NAME)  # checksum and structure checked here
            stored = meta.get("encoding", {})
            if mode is not None and mode != stored.get("mode"):
                raise ValueError(f"model {source} holds a {stored.get('mode')!r} table, not mode={mode!r}")
            mode = stored.get("mode", "abstract")
            max_tasks, max_nodes = stored.get("max_tasks", max_tasks), stored.get("max_nodes", max_nodes)
        self.encoding: AbstractEncoding | PaperEncoding = make_encoding(
            mode or "abstract", int(_as_float("max_tasks", max_tasks, 1, 1 << 16)),
            int(_as_float("max_nodes", max_nodes, 1, 1 << 16)))
        if source is not None:
            self.table = QTable.load(source, POLICY_NAME, shape=self.encoding.shape)
            self.model_checksum = self.table.meta.get("checksum", "")
            self.model_version = f"{self.encoding.mode}-{self.table.meta.get('episodes', 0)}ep-" \
                                 f"{self.model_checksum[:12]}"
        else:
            self.table = QTable.zeros(*self.encoding.shape)
        # Behaviour settings a model was trained with come back with it unless overridden here.
        wait_cost = meta.get("wait_cost", DEFAULT_WAIT_COST) if wait_cost is None else wait_cost
        max_wait = meta.get("max_wait", DEFAULT_MAX_WAIT) if max_wait is None else max_wait
        order = meta.get("order", "fifo") if order is None else order
        self.wait_cost = _as_float("wait_cost", wait_cost, 0.0, 1e3)
        self.max_wait = _as_float("max_wait", max_wait, 0.0, 1e6)
        if order not in ("fifo", "q"):
            raise ValueError(f"order must be 'fifo' or 'q', not {order!r}")
        self.order = order
        if epsilon is None:
            epsilon = ONLINE_EPSILON if self.learn else 0.0
        self.epsilon = _as_float("epsilon", epsilon, 0.0, 1.0)
        self.episodes_done = int(meta.get("episodes", 0))
        self.prev_state = int(LocalityState.NO)  # paper mode: the state the last launch reached
        if self.learn:
            self.capabilities = frozenset({SCHEDULE, ONLINE_LEARNING})

    # ------------------------------------------------------------ learner hook (used by Engine / server)

    def make_learner(self) -> ClqlmrsLearner | None:
        if not self.learn:
            return None
        return ClqlmrsLearner(self, save_to=self.save_to, save_every_s=self.save_every_s, alpha=self.alpha,
                              gamma=self.gamma,
                              schedule=EpsilonSchedule(self.epsilon, self.epsilon_decay, self.decay_every),
                              episodes_done=self.episodes_done)

    def save(self, path: str | Path, meta: dict[str, Any]) -> str:
        return self.table.save(path, POLICY_NAME, {"encoding": self.encoding.describe(), "wait_cost": self.wait_cost,
                                                   "max_wait": self.max_wait, "order": self.order, "seed": self.seed,
                                                   **meta})

    # ------------------------------------------------------------ decisions

    def schedule(self, obs: ScheduleObservation) -> ScheduleDecision:
        return self.decide(obs)[0]

    def trace(self, obs: ScheduleObservation) -> list[Step]:
        """The (state, action) steps behind `schedule(obs)`, for the learner."""
        return self.decide(obs)[1]

    def decide(self, obs: ScheduleObservation) -> tuple[ScheduleDecision, list[Step]]:
        node = obs.node
        free = node.unallocated
        out: list[Assignment] = []
        learned: list[_Candidate] = []
        for ask in fifo_order(obs.asks):
            if ask.num_containers <= 0:
                continue
            view = AskOnNode(ask, node)
            if has_locality_preference(ask):
                n_tasks = max(len(ask.job.input_blocks) if ask.job is not None else 0, ask.num_containers)
                learned.append(_Candidate(ask, view, cached_fraction(ask), n_tasks, state_counts(ask, node)))
                continue
            for level in tuple(view.best_levels()):  # no input to be local to: FIFO's placement
                n = min(view.available(level), ask.resource.max_copies_in(free))
                if n > 0:
                    _add(out, ask.ask_id, level, n)
                    view.take(level, n)
                    free = free.minus(ask.resource, n)
        rng = rng_for(self.seed, obs) if self.epsilon > 0 else None
        if self.encoding.mode == "paper":
            steps = self._paper(obs, learned, free, out, rng)
        else:
            steps = self._abstract(obs, learned, free, out, rng)
        return ScheduleDecision(out), steps

    def _abstract(self, obs, learned, free, out, rng) -> list[Step]:
        q, enc, node = self.table.q, self.encoding, obs.node
        num_nodes = obs.cluster.num_nodes or 1
        decided: dict[int, tuple[int, int, LocalityState, Locality]] = {}
        steps: list[Step] = []
        while learned:
            best, best_q = -1, -math.inf
            for i, c in enumerate(learned):
                if not c.ask.resource.fits_in(free):
                    decided.pop(i, None)
                    continue
                cs = placement(c.view, node, c.counts)
                if cs is None:
                    decided.pop(i, None)
                    continue
                s = enc.encode(cs[0], c.cached, c.ask.scheduling_opportunities, num_nodes, node)
                prev = decided.get(i)
                if prev is None or prev[0] != s:
                    if c.ask.scheduling_opportunities >= self.max_wait * num_nodes:
                        a = PLACE  # liveness: no table, learned or not, keeps a job waiting forever
                    elif rng is not None and rng.random() < self.epsilon:
                        a = PLACE if rng.random() < 0.5 else WAIT
                    else:
                        a = PLACE if q[s, PLACE] >= q[s, WAIT] else WAIT
                    prev = decided[i] = (s, a, cs[0], cs[1])
                if prev[1] == PLACE:
                    if self.order == "fifo":
                        best = i
                        break
                    if q[s, PLACE] > best_q:
                        best, best_q = i, q[s, PLACE]
            if best < 0:
                break
            c = learned[best]
            s, _, state, level = decided.pop(best)
            if c.counts[state] > 0:
                c.counts[state] -= 1
            c.view.take(level, 1)
            free = free.minus(c.ask.resource, 1)
            _add(out, c.ask.ask_id, level, 1)
            steps.append(Step(c.ask.application_id, node.node_id, s, PLACE, state, state == LocalityState.CRL,
                              c.n_tasks))
        for i, (s, a, state, _) in decided.items():
            if a == WAIT:
                c = learned[i]
                steps.append(Step(c.ask.application_id, node.node_id, s, WAIT, state, state == LocalityState.CRL,
                                  c.n_tasks, place=False))
        return steps

    def _paper(self, obs, learned, free, out, rng) -> list[Step]:
        """Faithful mode: choose (task i -> this node) by Q[previous state, action]; always launch when possible."""
        q, enc, node = self.table.q, self.encoding, obs.node
        s = self.prev_state
        steps: list[Step] = []
        taken: set[tuple[int, int]] = set()  # (candidate, task) pairs launched in this heartbeat
        while True:
            cands = []
            for ci, c in enumerate(learned):
                if not c.ask.resource.fits_in(free):
                    continue
                blocks = c.ask.job.input_blocks[:enc.max_tasks] if c.ask.job is not None else ()
                if not blocks:
                    cs = placement(c.view, node)
                    if cs is not None:
                        cands.append((c, 0, cs[0], cs[1], ci))
                    continue
                for bi, b in enumerate(blocks):
                    ti = b.block_id or bi
                    if (ci, ti) in taken:
                        continue
                    st = read_locality(b, node)
                    level = (c.view.node_level if st in (LocalityState.CL, LocalityState.DL) else
                             Locality.RACK_LOCAL if st in (LocalityState.CRL, LocalityState.DRL) else
                             Locality.OFF_SWITCH)
                    if c.view.available(level) <= 0:
                        # YARN's counts say no pending task wants this level here; fall back to the best level
                        cs = placement(c.view, node)
                        if cs is None:
                            continue
                        st, level = cs
                    cands.append((c, ti, st, level, ci))
            if not cands:
                break
            if rng is not None and rng.random() < self.epsilon:
                pick = cands[int(rng.integers(len(cands)))]
            else:
                values = np.fromiter((q[s, enc.action(x[1], node)] for x in cands), float, len(cands))
                pick = cands[int(np.argmax(values))]
            c, ti, st, level, ci = pick
            taken.add((ci, ti))
            c.view.take(level, 1)
            free = free.minus(c.ask.resource, 1)
            _add(out, c.ask.ask_id, level, 1)
            steps.append(Step(c.ask.application_id, node.node_id, s, enc.action(ti, node), st,
                              st == LocalityState.CRL, c.n_tasks))
            s = int(st)
        return steps


def _add(out: list[Assignment], ask_id: str, level: Locality, n: int) -> None:
    for a in out:
        if a.ask_id == ask_id and a.locality == level:
            a.count += n
            return
    out.append(Assignment(ask_id, n, level))
