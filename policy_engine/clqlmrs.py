"""CLQLMRS (Ghazali et al., J. Cloud Computing 2022; seed 001): locality states, rewards, state encodings and the
online SARSA learner that updates the `clqlmrs` policy's Q-table from Report feedback.

The paper
---------
A launch puts a task in one of five locality states: CL (the node caches the task's block), DL (the node stores
it), CRL / DRL (a node of the same rack caches / stores it) or NO. The reward of a launch in state X is
w_X * N_X / N with w = +1, +0.5, -0.25, -0.5, -1 for CL, DL, CRL, DRL, NO, where N_X counts the job's tasks
launched in state X so far (this one included) and N is the job's task count (Table 2; the example of Fig. 2:
DL, DRL, CL on a 3-task job give +0.5/3, -0.5/3, +1/3). SARSA with α = 0.1, γ = 0.95; ε-greedy with ε = 1,
multiplied by 0.999 every 10 episodes. The paper's Q-table is indexed by (previous state, task → node action).

Two encodings (policy option `mode`)
------------------------------------
* `paper`: faithful. State = the locality state of the previous launch (5 values), action = (task index within
  the job's input, node), hashed into a fixed-size table. It only knows *which* task went *where*, so what it
  learns is tied to one job's block placement on one cluster: a new job or a new node starts from zero.
* `abstract` (default): the Q-table is indexed by what makes a placement good or bad on *any* job and cluster,
  so a table trained on one workload keeps working on another:
    - the candidate's locality level on this node (CL / DL / CRL / DRL / NO),
    - the job's cached input fraction (0, < 1/3, < 2/3, >= 2/3): how much a cache hit is worth waiting for,
      the quantity Adaptive Cache Local scheduling bases its skip count on,
    - how long the ask has waited, in heartbeats per cluster node (< 0.5, < 1, < 2, >= 2): comparable across
      cluster sizes, like CapacityScheduler's locality delays,
    - the node's load (free memory >= or < half): a busy node frees a slot again soon.
  Actions are PLACE (launch one container of this job here) and WAIT (leave the job for another heartbeat).
  Jobs are visited in FIFO order and the first whose action is PLACE gets the container: the table learns the
  skip rule that Delay and ACL fix by hand (wait for a cached or local replica, how long, depending on the
  cached fraction and the time already waited). (`order=q` ranks jobs by Q(s, PLACE) instead, cache-local
  first across jobs; it interleaves jobs and lengthens mean job time, see the policy's options.)
  A WAIT step earns `-wait_cost` (default 0.05): the paper never waits (it has no such action), and without a
  cost of waiting the table would postpone a bad launch for ever (its reward is negative). 0.05 makes waiting for
  ever worth wait_cost / (1 - gamma) = -1, no better than the worst launch (NO: -1 * N_NO / N >= -1); with 0.01
  the learned table waited so long that 3 concurrent WordCounts took 19 % longer than under FIFO. A job that has
  waited `max_wait` (1) heartbeats per cluster node is placed whatever the table says (liveness).

Learning from Report
--------------------
`ClqlmrsLearner` attaches to an Engine: it sees each decision (obs, decision) and each Report event. The policy's
`trace(obs)` replays the decision with the (state, action) of every step; a PLACE step's reward comes from the
ContainerStarted (or, when no start was reported, ContainerFinished) event of that application on that node, with
the locality the ApplicationMaster actually got. SARSA updates Q(s, a) once the step's reward and the job's next
(s', a') are known; JobFinished ends the job's trajectory (terminal update) and counts one episode for the ε
schedule. The table is saved atomically (temp file + rename) every `save_every_s` seconds and on close.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from policy_engine.features.locality import REWARD, ReadLocality, cached_fraction, read_locality, state_counts
from policy_engine.features.locality import candidate_state as features_candidate_state
from policy_engine.locality import AskOnNode
from policy_engine.proto import pb
from policy_engine.qlearning import EpsilonSchedule, sarsa_update
from policy_engine.types import Ask, Locality, Node, ScheduleObservation

__all__ = ["LocalityState", "REWARD_WEIGHTS", "cached_fraction", "read_locality", "state_counts", "locality_reward",
           "placement", "ClqlmrsLearner"]

if TYPE_CHECKING:
    from policy_engine.engine import Engine
    from policy_engine.policies.clqlmrs import ClqlmrsPolicy

log = logging.getLogger(__name__)

POLICY_NAME = "clqlmrs"
ALPHA, GAMMA = 0.1, 0.95
EPSILON, EPSILON_DECAY, DECAY_EVERY = 1.0, 0.999, 10


# The five states and Table 2's weights are shared with the emulator, ACL and the gymnasium environment.
LocalityState = ReadLocality
REWARD_WEIGHTS = REWARD
LOCAL_STATES = (LocalityState.CL, LocalityState.DL)


def locality_reward(state: LocalityState | int, counts, n_tasks: int) -> float:
    """w_state * N_state / N; `counts[state]` must already include the task being rewarded."""
    if n_tasks <= 0:
        raise ValueError(f"a job has at least one task, not {n_tasks}")
    return float(REWARD_WEIGHTS[int(state)] * counts[int(state)] / n_tasks)


def state_from_report(level: int, rack_cached: bool) -> LocalityState:
    """Map the protocol's locality (what YARN/the AM reports) to the paper's five states."""
    if level == Locality.CACHE_LOCAL:
        return LocalityState.CL
    if level == Locality.NODE_LOCAL:
        return LocalityState.DL
    if level == Locality.RACK_LOCAL:
        return LocalityState.CRL if rack_cached else LocalityState.DRL
    return LocalityState.NO


# ---------------------------------------------------------------------------------------------- candidates


def has_locality_preference(ask: Ask) -> bool:
    """Map-like asks (input blocks or host/rack entries) are learned; others (reduces, AMs) are placed FIFO."""
    if ask.job is not None and ask.job.input_blocks:
        return True
    return any(lr.resource_name != "*" for lr in ask.locality)


def placement(view: AskOnNode, node: Node, counts: np.ndarray | None = None) -> tuple[LocalityState, Locality] | None:
    """The paper's state of launching one more container of this ask on this node now and the protocol level YARN's
    counts allow; None when nothing can go. The ApplicationMaster runs its best-placed pending task on the
    container, so the state is the best one left in `counts` (state_counts of the ask's pending blocks on this
    node, minus what this heartbeat already launched)."""
    level = next(iter(view.best_levels()), None)
    if level is None:
        return None
    if counts is not None and counts.any():
        best = LocalityState(int(np.flatnonzero(counts)[0]))
    else:
        best = features_candidate_state(view.ask, node)
    if level in (Locality.CACHE_LOCAL, Locality.NODE_LOCAL):
        if best in LOCAL_STATES:
            return best, level
        return (LocalityState.CL if level == Locality.CACHE_LOCAL else LocalityState.DL), level
    if level == Locality.RACK_LOCAL:
        return (best if best in (LocalityState.CRL, LocalityState.DRL) else LocalityState.DRL), level
    return LocalityState.NO, level


# ---------------------------------------------------------------------------------------------- encodings

PLACE, WAIT = 0, 1


@dataclass(frozen=True)
class AbstractEncoding:
    """State index of (locality level, cached fraction, waiting, node load); actions PLACE / WAIT."""

    cache_edges: tuple[float, ...] = (1e-9, 1 / 3, 2 / 3)
    wait_edges: tuple[float, ...] = (0.5, 1.0, 2.0)  # heartbeats waited per cluster node
    load_edges: tuple[float, ...] = (0.5,)           # node's allocated memory fraction
    mode: str = "abstract"

    @property
    def dims(self) -> tuple[int, int, int, int]:
        return (len(LocalityState), len(self.cache_edges) + 1, len(self.wait_edges) + 1, len(self.load_edges) + 1)

    @property
    def shape(self) -> tuple[int, int]:
        return int(np.prod(self.dims)), 2

    def encode(self, state: LocalityState, cached: float, opportunities: int, num_nodes: int, node: Node) -> int:
        _, nc, nw, nl = self.dims
        c = int(np.searchsorted(self.cache_edges, cached, side="right"))
        w = int(np.searchsorted(self.wait_edges, opportunities / max(num_nodes, 1), side="right"))
        total = node.total.memory_mb
        used = 1.0 - node.unallocated.memory_mb / total if total > 0 else 1.0
        ld = int(np.searchsorted(self.load_edges, used, side="right"))
        return ((int(state) * nc + c) * nw + w) * nl + ld

    def decode(self, index: int) -> dict[str, int]:
        _, nc, nw, nl = self.dims
        ld, index = index % nl, index // nl
        w, index = index % nw, index // nw
        c, level = index % nc, index // nc
        return {"level": level, "cached_bucket": c, "wait_bucket": w, "load_bucket": ld}

    def describe(self) -> dict[str, Any]:
        return {"mode": self.mode, "cache_edges": list(self.cache_edges), "wait_edges": list(self.wait_edges),
                "load_edges": list(self.load_edges)}


@dataclass(frozen=True)
class PaperEncoding:
    """State = previous launch's locality state; action = (task index, node) hashed into max_tasks x max_nodes."""

    max_tasks: int = 1024
    max_nodes: int = 32
    mode: str = "paper"

    @property
    def shape(self) -> tuple[int, int]:
        return len(LocalityState), self.max_tasks * self.max_nodes

    def action(self, task: int | str, node: Node) -> int:
        """Task T_i is its block id when known (stable while other tasks finish), else its input position.
        crc32, not hash(): stable across processes, so a saved table means the same after a restart."""
        slot = zlib.crc32(task.encode()) if isinstance(task, str) else task
        return (slot % self.max_tasks) * self.max_nodes + zlib.crc32(node.host.encode()) % self.max_nodes

    def describe(self) -> dict[str, Any]:
        return {"mode": self.mode, "max_tasks": self.max_tasks, "max_nodes": self.max_nodes}


def make_encoding(mode: str, max_tasks: int = 1024, max_nodes: int = 32) -> AbstractEncoding | PaperEncoding:
    if mode == "abstract":
        return AbstractEncoding()
    if mode == "paper":
        if max_tasks < 1 or max_nodes < 1:
            raise ValueError(f"max_tasks and max_nodes must be >= 1, not {max_tasks}, {max_nodes}")
        return PaperEncoding(max_tasks, max_nodes)
    raise ValueError(f"mode must be 'abstract' or 'paper', not {mode!r}")


@dataclass(slots=True)
class Step:
    """One decision step of the policy, as the learner needs it."""

    application_id: str
    node_id: str
    state: int
    action: int
    predicted: LocalityState      # the state the policy expected the launch to reach (PLACE steps)
    rack_cached: bool = False     # CRL rather than DRL if the launch turns out rack-local
    n_tasks: int = 0              # the job's task count as far as the policy can tell
    place: bool = True


def rng_for(seed: int, obs: ScheduleObservation) -> np.random.Generator:
    """Exploration randomness drawn from the observation, so a decision is a pure function of (obs, table)."""
    key = [seed, zlib.crc32(obs.node.node_id.encode()), obs.node.timestamp_ms & 0xFFFFFFFFFFFF,
           zlib.crc32(obs.request_id.encode())]
    return np.random.default_rng(key)


# ---------------------------------------------------------------------------------------------- online learner


@dataclass(slots=True, eq=False)  # identity, not field equality: two identical steps are two launches
class _Transition:
    step: Step
    reward: float | None = None
    reached: LocalityState | None = None


@dataclass(slots=True)
class _Job:
    chain: deque = field(default_factory=deque)      # transitions awaiting their successor or reward
    counts: np.ndarray = field(default_factory=lambda: np.zeros(len(LocalityState), np.int64))
    n_tasks: int = 0
    reward: float = 0.0


class ClqlmrsLearner:
    """SARSA on the policy's own Q-table, driven by an Engine's decisions and Report events.

    Not thread-safe by itself: the aio server and the emulator call it from one thread.
    """

    MAX_OPEN = 64          # a PLACE step whose outcome never gets reported is settled with its predicted state
    MAX_JOBS = 10_000

    def __init__(self, policy: ClqlmrsPolicy, save_to: str | Path | None = None, save_every_s: float = 30.0,
                 alpha: float = ALPHA, gamma: float = GAMMA, schedule: EpsilonSchedule | None = None,
                 episodes_done: int = 0):
        if not 0 < alpha <= 1 or not 0 <= gamma <= 1:
            raise ValueError(f"need 0 < alpha <= 1 and 0 <= gamma <= 1, not alpha={alpha}, gamma={gamma}")
        self.policy = policy
        self.save_to = Path(save_to) if save_to else None
        self.save_every_s = float(save_every_s)
        self.alpha, self.gamma = float(alpha), float(gamma)
        self.schedule = schedule or EpsilonSchedule(policy.epsilon)
        self.episodes = int(episodes_done)
        self._episode0 = self.episodes  # ε follows the schedule from the start of this run
        self.updates = 0
        self.jobs: OrderedDict[str, _Job] = OrderedDict()
        self.finished_rewards: deque[float] = deque(maxlen=1000)
        self._paper_chain: deque[_Transition] = deque()   # paper mode: one trajectory over all jobs
        self._open: dict[tuple[str, str], deque[_Transition]] = {}
        self._seen_containers: OrderedDict[str, None] = OrderedDict()
        self._last_save = time.monotonic()
        self.saves = 0
        self.errors = 0
        # Online an episode is one finished job; offline training sets this False and ends episodes itself.
        self.episode_per_job = True

    def describe(self) -> str:
        where = f"saved to {self.save_to} every {self.save_every_s:g} s and on shutdown" if self.save_to else \
            "kept in memory only (set save_to=PATH to persist it)"
        return (f"learning online (SARSA alpha={self.alpha:g} gamma={self.gamma:g} epsilon={self.policy.epsilon:g}); "
                f"Q-table {where}")

    # ------------------------------------------------------------ wiring

    def attach(self, engine: Engine) -> ClqlmrsLearner:
        engine.listeners.append(self.on_event)
        engine.decision_listeners.append(self.on_decision)
        return self

    def _job(self, app: str) -> _Job:
        job = self.jobs.get(app)
        if job is None:
            job = self.jobs[app] = _Job()
            while len(self.jobs) > self.MAX_JOBS:
                self.jobs.popitem(last=False)
        else:
            self.jobs.move_to_end(app)
        return job

    # ------------------------------------------------------------ decisions

    def on_decision(self, obs: ScheduleObservation, decision) -> None:
        try:
            self._on_decision(obs)
        except Exception:  # learning must never fail a Schedule call: the decision is already made
            self.errors += 1
            log.exception("clqlmrs learner: cannot learn from the decision for %s", obs.node.node_id)

    def _on_decision(self, obs: ScheduleObservation) -> None:
        paper = self.policy.encoding.mode == "paper"
        for step in self.policy.trace(obs):
            job = self._job(step.application_id)
            job.n_tasks = max(job.n_tasks, step.n_tasks, int(job.counts.sum()))
            tr = _Transition(step)
            if not step.place:
                tr.reward = -self.policy.wait_cost
            else:
                self._open.setdefault((step.application_id, step.node_id), deque()).append(tr)
            chain = self._paper_chain if paper else job.chain
            chain.append(tr)
            if len(chain) > self.MAX_OPEN and chain[0].reward is None:
                self._settle(chain[0], chain[0].step.predicted)
            self._advance(chain)
        self._maybe_save()

    # ------------------------------------------------------------ feedback

    def on_event(self, ev: pb.Event) -> None:
        try:
            self._on_event(ev)
        except Exception:  # nor a Report call
            self.errors += 1
            log.exception("clqlmrs learner: cannot learn from a %s event", ev.WhichOneof("kind"))

    def _on_event(self, ev: pb.Event) -> None:
        kind = ev.WhichOneof("kind")
        if kind in ("container_started", "container_finished"):
            e = getattr(ev, kind)
            # rack_cached, when the sender knows it (the engine's labels on a real cluster), says CRL or DRL;
            # otherwise the step's own prediction does
            rack_cached = e.rack_cached if e.HasField("rack_cached") else None
            self._outcome(e.container_id, e.application_id, e.node_id, e.locality, rack_cached)
        elif kind == "job_finished":
            self._finish(ev.job_finished.job_id)
        self._maybe_save()

    def _outcome(self, container_id: str, app: str, node_id: str, level: int, rack_cached: bool | None = None) -> None:
        if container_id:
            if container_id in self._seen_containers:
                return  # started already counted; the finish of the same container is not a second launch
            self._seen_containers[container_id] = None
            while len(self._seen_containers) > 100_000:
                self._seen_containers.popitem(last=False)
        queue = self._open.get((app, node_id))
        if not queue:
            host = node_id.split(":", 1)[0]
            queue = next((q for (a, n), q in self._open.items() if a == app and n.split(":", 1)[0] == host and q),
                         None)
        if not queue:
            return  # a container this policy did not place through a learned step (AM, reduce, fallback)
        tr = queue.popleft()
        self._settle(tr, state_from_report(level, tr.step.rack_cached if rack_cached is None else rack_cached))
        chain = self._paper_chain if self.policy.encoding.mode == "paper" else self._job(app).chain
        self._advance(chain)

    def _settle(self, tr: _Transition, reached: LocalityState) -> None:
        if tr.reward is not None:
            return
        job = self._job(tr.step.application_id)
        job.counts[int(reached)] += 1
        n = max(job.n_tasks, int(job.counts.sum()), 1)
        tr.reached = reached
        tr.reward = locality_reward(reached, job.counts, n)
        job.reward += tr.reward
        queue = self._open.get((tr.step.application_id, tr.step.node_id))
        if queue and tr in queue:
            queue.remove(tr)
        if self.policy.encoding.mode == "paper":
            self.policy.prev_state = int(reached)

    def _advance(self, chain: deque) -> None:
        while len(chain) >= 2 and chain[0].reward is not None:
            tr, nxt = chain.popleft(), chain[0]
            s_next = nxt.step.state
            if self.policy.encoding.mode == "paper" and tr.reached is not None:
                s_next = int(tr.reached)  # the paper's S_{t+1} is the state the launch reached
            self._update(tr, s_next, nxt.step.action)

    def _update(self, tr: _Transition, s_next: int | None, a_next: int | None) -> None:
        sarsa_update(self.policy.table.q, tr.step.state, tr.step.action, tr.reward, s_next, a_next, self.alpha,
                     self.gamma)
        self.policy.table.visits[tr.step.state, tr.step.action] += 1
        self.updates += 1

    def _finish(self, app: str) -> None:
        job = self.jobs.pop(app, None)
        if job is not None:
            if self.policy.encoding.mode == "abstract":
                self._flush(job.chain)
            self.finished_rewards.append(job.reward)
        for key in [k for k in self._open if k[0] == app]:
            del self._open[key]
        if self.episode_per_job:
            self.end_episode()

    def _flush(self, chain: deque) -> None:
        """Terminal updates: the job has no more steps."""
        while chain:
            tr = chain.popleft()
            if tr.reward is None:
                self._settle(tr, tr.step.predicted)
            nxt = chain[0] if chain else None
            if nxt is None:
                self._update(tr, None, None)
            else:
                self._update(tr, nxt.step.state, nxt.step.action)

    def end_episode(self) -> None:
        """One episode done (a finished job online, an emulator episode offline): advance the ε schedule."""
        self.episodes += 1
        self.policy.epsilon = self.schedule.value(self.episodes - self._episode0)

    def end_of_run(self) -> None:
        """Offline: the emulator episode is over; close every open trajectory (paper mode's one included)."""
        for app in list(self.jobs):
            job = self.jobs.pop(app)
            self._flush(job.chain)
            self.finished_rewards.append(job.reward)
        self._flush(self._paper_chain)
        self._open.clear()
        self.policy.prev_state = int(LocalityState.NO)

    # ------------------------------------------------------------ persistence

    def state_meta(self) -> dict[str, Any]:
        return {"episodes": self.episodes, "updates": self.updates, "epsilon": self.policy.epsilon,
                "alpha": self.alpha, "gamma": self.gamma, "epsilon_start": self.schedule.start,
                "epsilon_decay": self.schedule.decay, "decay_every": self.schedule.every}

    def save(self, path: str | Path | None = None, extra: dict[str, Any] | None = None) -> str:
        target = Path(path) if path else self.save_to
        if target is None:
            raise ValueError("no path to save the Q-table to")
        checksum = self.policy.save(target, {**self.state_meta(), **(extra or {})})
        self._last_save = time.monotonic()
        self.saves += 1
        return checksum

    def _maybe_save(self) -> None:
        if self.save_to is not None and time.monotonic() - self._last_save >= self.save_every_s:
            try:
                self.save()
            except OSError as e:  # a full disk must not stop the scheduler; the next attempt may succeed
                log.error("cannot persist the Q-table to %s: %s", self.save_to, e)
                self._last_save = time.monotonic()

    def close(self) -> None:
        if self.save_to is not None:
            self.save()
            log.info("Q-table saved to %s (%d updates, %d episodes)", self.save_to, self.updates, self.episodes)
