"""CLQLMRS: SARSA Q-learning for cache and data locality on node heartbeats (CLQLMRS).

On each heartbeat the policy decides which pending map asks get containers on this node, reading where each job's
input blocks and cached replicas are (Ask.job.input_blocks) and YARN's host / rack / ANY counts (AskOnNode). The
decision is a pure function of the observation and the published model (algorithms.clqlmrs.model: Q-table, ε;
exploration draws come from a generator seeded by the observation). The policy reads the model and never writes
it; the learner (algorithms.clqlmrs.learner), which the engine builds from the registry, writes it. See the
package doc (algorithms/clqlmrs/__init__.py) for the states, rewards and the two table encodings.

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
from pathlib import Path
from typing import Any

import numpy as np

from algorithms.clqlmrs.config import POLICY_NAME, ClqlmrsConfig
from algorithms.clqlmrs.encoding import (
    PLACE,
    WAIT,
    LocalityState,
    Step,
    cached_fraction,
    placement,
    read_locality,
    rng_for,
)
from algorithms.clqlmrs.model import ClqlmrsModel, ModelView
from policy_engine.locality import AskOnNode, add_assignment, place
from policy_engine.policies.fifo import fifo_order, memory_floor
from policy_engine.policy import ONLINE_LEARNING, SCHEDULE, SCHEDULING_OPPORTUNITIES, Policy, register
from policy_engine.qlearning import QTable
from policy_engine.types import Assignment, Locality, ScheduleDecision, ScheduleObservation


class _Candidate:
    """An ask with a locality preference on this node. Its counts, cached fraction, task count and block states
    are worked out when first read: most candidates of a heartbeat are never looked at (the first PLACE in FIFO
    order ends the pass, and nothing more fits once the node is full). Nothing they are made of changes before."""

    __slots__ = ("ask", "node", "_view", "_cached", "_counts")

    def __init__(self, ask, node):
        self.ask, self.node = ask, node
        self._view = self._cached = self._counts = None

    @property
    def view(self) -> AskOnNode:
        v = self._view
        if v is None:
            v = self._view = AskOnNode(self.ask, self.node)
        return v

    @property
    def cached(self) -> float:
        c = self._cached
        if c is None:
            c = self._cached = cached_fraction(self.ask)
        return c

    @property
    def n_tasks(self) -> int:
        ask = self.ask
        return max(len(ask.job.input_blocks) if ask.job is not None else 0, ask.num_containers)

    @property
    def counts(self) -> list[int]:
        """The job's pending blocks on this node by state, minus those launched this heartbeat."""
        c = self._counts
        if c is None:
            c = self._counts = _state_counts(self.ask, self.node)
        return c


def _state_counts(ask, node) -> list[int]:
    """features.locality.state_counts as a list: numpy costs more than it saves on a job's few blocks, and this
    runs for every map ask of every heartbeat."""
    counts = [0, 0, 0, 0, 0]
    job = ask.job
    if job is not None:
        for b in job.input_blocks:
            counts[read_locality(b, node)] += 1
    return counts


@register(POLICY_NAME, "CLQLMRS: SARSA Q-learning on cache / data / rack locality per heartbeat, learns online "
                       "from Report (CLQLMRS)", {SCHEDULE}, model="optional",
          learner="algorithms.clqlmrs.learner:ClqlmrsLearner.for_policy")
class ClqlmrsPolicy(Policy):
    name = POLICY_NAME
    capabilities = frozenset({SCHEDULE})
    reads = frozenset({SCHEDULING_OPPORTUNITIES})

    def __init__(self, model: str | Path | ClqlmrsModel | None = None, **options: Any):
        """`model`: a model artifact path (or a ClqlmrsModel); options: ClqlmrsConfig's (see the module doc)."""
        self.model = model if isinstance(model, ClqlmrsModel) else ClqlmrsModel.create(model, **options)
        self.config: ClqlmrsConfig = self.model.config
        self.model_version, self.model_checksum = self.model.model_version, self.model.model_checksum
        if self.config.learn:
            self.capabilities = frozenset({SCHEDULE, ONLINE_LEARNING})

    # Read-only views for callers that inspect the policy (tests, training, `emulator` evaluation).
    @property
    def learn(self) -> bool:
        return self.config.learn

    @property
    def encoding(self):
        return self.model.encoding

    @property
    def table(self) -> QTable:
        return self.model.table

    @property
    def epsilon(self) -> float:
        return self.model.view.epsilon

    @property
    def wait_cost(self) -> float:
        return self.config.wait_cost

    @property
    def max_wait(self) -> float:
        return self.config.max_wait

    @property
    def order(self) -> str:
        return self.config.order

    @property
    def seed(self) -> int:
        return self.config.seed

    def save(self, path: str | Path, meta: dict[str, Any]) -> str:
        return self.model.save(path, meta)

    # ------------------------------------------------------------ decisions

    def schedule(self, obs: ScheduleObservation) -> ScheduleDecision:
        return self.decide(obs)[0]

    def schedule_traced(self, obs: ScheduleObservation) -> tuple[ScheduleDecision, list[Step]]:
        return self.decide(obs)

    def trace(self, obs: ScheduleObservation) -> list[Step]:
        """The (state, action) steps behind `schedule(obs)`."""
        return self.decide(obs)[1]

    def decide(self, obs: ScheduleObservation) -> tuple[ScheduleDecision, list[Step]]:
        """The decision and its trace (what the learner learns from), in one pass over the observation."""
        view = self.model.view  # one published snapshot for the whole decision
        node = obs.node
        free = node.unallocated
        out: list[Assignment] = []
        learned: list = []  # the asks with a locality preference (has_locality_preference, inlined: per ask)
        floor = memory_floor(obs.asks)
        for ask in fifo_order(obs.asks):
            if free.memory_mb < floor:
                break  # nothing left fits (FifoOrdered.memory_floor): no placement, no candidate to look at
            if ask.num_containers <= 0:
                continue
            job = ask.job
            if (job is not None and job.input_blocks) or ask.names_places:
                learned.append(ask)
                continue
            free, _ = place(out, AskOnNode(ask, node), free)  # no input to be local to: FIFO's placement
        rng = rng_for(self.config.seed, obs) if view.epsilon > 0 else None
        if self.model.encoding.mode == "paper":
            steps = self._paper(obs, view, [_Candidate(ask, node) for ask in learned], free, out, rng)
        else:
            steps = self._abstract(obs, view, learned, free, out, rng)
        return ScheduleDecision(out), steps

    def _abstract(self, obs, view: ModelView, learned, free, out, rng) -> list[Step]:
        """`learned`: the asks with a locality preference, in FIFO order; each becomes a _Candidate when first
        looked at (most are not: the first PLACE ends a round, a full node ends the decision)."""
        q, enc, node, cfg = view.q, self.model.encoding, obs.node, self.config
        cands: list[_Candidate | None] = [None] * len(learned)
        epsilon = view.epsilon
        num_nodes = obs.cluster.num_nodes or 1
        decided: dict[int, tuple[int, int, LocalityState, Locality]] = {}
        steps: list[Step] = []
        # (placement, state) per candidate: a function of its view and counts, which only a container placed for
        # that candidate changes, so it is worked out once per candidate and again only after its own placement
        # (each round used to redo it for every candidate before the one placed)
        memo: list[tuple | None] = [None] * len(learned)
        floor = memory_floor(obs.asks)
        while learned:
            if free.memory_mb < floor:
                # nothing left fits (FifoOrdered.memory_floor): every candidate would fail fits_in below and drop
                # its pending choice, as here, without a test per candidate
                decided.clear()
                break
            best, best_q = -1, -math.inf
            for i, ask in enumerate(learned):
                if not ask.resource.fits_in(free):
                    decided.pop(i, None)
                    continue
                m = memo[i]
                if m is None:
                    c = cands[i]
                    if c is None:
                        c = cands[i] = _Candidate(ask, node)
                    cs = placement(c.view, node, c.counts)
                    m = memo[i] = (cs, None if cs is None else
                                   enc.encode(cs[0], c.cached, ask.scheduling_opportunities, num_nodes, node))
                cs, s = m
                if cs is None:
                    decided.pop(i, None)
                    continue
                prev = decided.get(i)
                if prev is None or prev[0] != s:
                    if ask.scheduling_opportunities >= cfg.max_wait * num_nodes:
                        a = PLACE  # liveness: no table, learned or not, keeps a job waiting forever
                    elif rng is not None and rng.random() < epsilon:
                        a = PLACE if rng.random() < 0.5 else WAIT
                    else:
                        a = PLACE if q[s, PLACE] >= q[s, WAIT] else WAIT
                    prev = decided[i] = (s, a, cs[0], cs[1])
                if prev[1] == PLACE:
                    if cfg.order == "fifo":
                        best = i
                        break
                    if q[s, PLACE] > best_q:
                        best, best_q = i, q[s, PLACE]
            if best < 0:
                break
            c = cands[best]
            memo[best] = None
            s, _, state, level = decided.pop(best)
            if c.counts[state] > 0:
                c.counts[state] -= 1
            c.view.take(level, 1)
            free = free.minus(c.ask.resource, 1)
            add_assignment(out, c.ask.ask_id, level, 1)
            steps.append(Step(c.ask.application_id, node.node_id, s, PLACE, state, state == LocalityState.CRL,
                              c.n_tasks))
        for i, (s, a, state, _) in decided.items():
            if a == WAIT:
                c = cands[i]
                steps.append(Step(c.ask.application_id, node.node_id, s, WAIT, state, state == LocalityState.CRL,
                                  c.n_tasks, place=False))
        return steps

    def _paper(self, obs, view: ModelView, learned, free, out, rng) -> list[Step]:
        """Faithful mode: choose (task i -> this node) by Q[previous state, action]; always launch when possible."""
        q, enc, node = view.q, self.model.encoding, obs.node
        s = view.last_state
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
            if rng is not None and rng.random() < view.epsilon:
                pick = cands[int(rng.integers(len(cands)))]
            else:
                values = np.fromiter((q[s, enc.action(x[1], node)] for x in cands), float, len(cands))
                pick = cands[int(np.argmax(values))]
            c, ti, st, level, ci = pick
            taken.add((ci, ti))
            c.view.take(level, 1)
            free = free.minus(c.ask.resource, 1)
            add_assignment(out, c.ask.ask_id, level, 1)
            steps.append(Step(c.ask.application_id, node.node_id, s, enc.action(ti, node), st,
                              st == LocalityState.CRL, c.n_tasks))
            s = int(st)
        return steps


