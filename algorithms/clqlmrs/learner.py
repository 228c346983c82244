"""CLQLMRS's online SARSA learner: learns from the policy's decision traces and from Report events, writes the model.

Built by the engine from the policy registry (`ClqlmrsLearner.for_policy`) and fed through a
policy_engine.learning.LearningLoop, so none of this runs inside a Schedule call. It depends on the model, the
config and the encoding, never on the policy.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from policy_engine.artifact import code_version
from algorithms.clqlmrs.config import ClqlmrsConfig
from algorithms.clqlmrs.encoding import LocalityState, Step, locality_reward, state_from_report
from algorithms.clqlmrs.model import ClqlmrsModel
from policy_engine.qlearning import EpsilonSchedule, sarsa_update
from policy_engine.types import ContainerFinished, ContainerStarted, Event, JobFinished

log = logging.getLogger(__name__)


@dataclass(slots=True, eq=False)  # identity, not field equality: two identical steps are two launches
class _Transition:
    step: Step
    reward: float | None = None
    reached: LocalityState | None = None


@dataclass(slots=True)
class _Job:
    chain: deque = field(default_factory=deque)      # transitions awaiting their successor or reward
    counts: np.ndarray = field(default_factory=lambda: np.zeros(len(LocalityState), np.int64))
    settled: int = 0                                 # counts.sum(), kept as an int (read on every step)
    n_tasks: int = 0
    reward: float = 0.0


class ClqlmrsLearner:
    """SARSA on the model's working Q-table, driven by decision traces and Report events.

    Not thread-safe by itself: one LearningLoop thread (or the in-process caller) drives it.
    """

    MAX_OPEN = 64          # a PLACE step whose outcome never gets reported is settled with its predicted state
    MAX_JOBS = 10_000

    def __init__(self, model: ClqlmrsModel, config: ClqlmrsConfig | None = None, episodes_done: int | None = None):
        self.model = model
        self.config = config = config or model.config
        self.save_to = config.save_path
        self.save_every_s = float(config.save_every_s)
        self.alpha, self.gamma = float(config.alpha), float(config.gamma)
        self.schedule = EpsilonSchedule(config.epsilon, config.epsilon_decay, config.decay_every)
        self.paper = model.encoding.mode == "paper"
        self.episodes = int(model.episodes if episodes_done is None else episodes_done)
        self._episode0 = self.episodes  # ε follows the schedule from the start of this run
        self.updates = 0
        self.jobs: OrderedDict[str, _Job] = OrderedDict()
        self.finished_rewards: deque[float] = deque(maxlen=1000)
        self._paper_chain: deque[_Transition] = deque()   # paper mode: one trajectory over all jobs
        self._open: dict[tuple[str, str], deque[_Transition]] = {}
        # _open's keys by application and host, in _open's order: a container reported on a node other than its
        # step's (another NodeManager of the host) finds its queue without a walk over every open key (that walk,
        # per Report event, was most of the engine's CPU at 10,000 nodes, where _open holds tens of thousands)
        self._open_hosts: dict[str, dict[str, list[tuple[str, str]]]] = {}
        self._seen_containers: OrderedDict[str, None] = OrderedDict()
        self._last_save = time.monotonic()
        self._code_version = code_version()  # once, at start: saves must not run git
        if self.save_to is not None:  # temp files of a save that a crash (SIGKILL) interrupted: the table is intact
            for stale in self.save_to.parent.glob(f".{self.save_to.name}.*.tmp"):
                stale.unlink(missing_ok=True)
        self.saves = 0
        self.errors = 0
        # Online an episode is one finished job; offline training sets this False and ends episodes itself.
        self.episode_per_job = True
        model.detach()  # decisions now read published snapshots of what this learner writes

    @classmethod
    def for_policy(cls, policy: Any) -> ClqlmrsLearner | None:
        """The registry's learner factory: a learner on the served policy's model (`policy.model`), None when
        learning is off. Only the model is used: the learner never calls the policy."""
        return cls(policy.model) if policy.config.learn else None

    def describe(self) -> str:
        where = f"saved to {self.save_to} every {self.save_every_s:g} s and on shutdown" if self.save_to else \
            "kept in memory only (set save_to=PATH to persist it)"
        return (f"learning online (SARSA alpha={self.alpha:g} gamma={self.gamma:g} epsilon={self.model.epsilon:g}); "
                f"Q-table {where}")

    # ------------------------------------------------------------ trajectories

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

    def on_decision(self, trace: list[Step] | None) -> None:
        """One decision's steps, as the policy returned them with the decision."""
        for step in trace or ():
            job = self._job(step.application_id)
            job.n_tasks = max(job.n_tasks, step.n_tasks, job.settled)
            tr = _Transition(step)
            if not step.place:
                tr.reward = -self.config.wait_cost
            else:
                key = (step.application_id, step.node_id)
                queue = self._open.get(key)
                if queue is None:
                    queue = self._open[key] = deque()
                    hosts = self._open_hosts.get(key[0])
                    if hosts is None:
                        hosts = self._open_hosts[key[0]] = {}
                    hosts.setdefault(key[1].split(":", 1)[0], []).append(key)
                queue.append(tr)
            chain = self._paper_chain if self.paper else job.chain
            chain.append(tr)
            if len(chain) > self.MAX_OPEN and chain[0].reward is None:
                self._settle(chain[0], chain[0].step.predicted)
            self._advance(chain)

    # ------------------------------------------------------------ feedback

    def on_events(self, events: list[Event]) -> None:
        for ev in events:
            self.on_event(ev)

    def on_event(self, ev: Event) -> None:
        if isinstance(ev, (ContainerStarted, ContainerFinished)):
            # rack_cached, when the sender knows it (the engine's labels on a real cluster, policy_engine.labels),
            # says CRL or DRL; otherwise the step's own prediction does
            self._outcome(ev.container_id, ev.application_id, ev.node_id, ev.locality, ev.rack_cached)
        elif isinstance(ev, JobFinished):
            self._finish(ev.job_id)

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
            keys = self._open_hosts.get(app, {}).get(host, ())
            queue = next((q for q in map(self._open.__getitem__, keys) if q), None)
        if not queue:
            return  # a container this policy did not place through a learned step (AM, reduce, fallback)
        tr = queue.popleft()
        self._settle(tr, state_from_report(level, tr.step.rack_cached if rack_cached is None else rack_cached))
        chain = self._paper_chain if self.paper else self._job(app).chain
        self._advance(chain)

    def _settle(self, tr: _Transition, reached: LocalityState) -> None:
        if tr.reward is not None:
            return
        job = self._job(tr.step.application_id)
        job.counts[int(reached)] += 1
        job.settled += 1
        n = max(job.n_tasks, job.settled, 1)
        tr.reached = reached
        tr.reward = locality_reward(reached, job.counts, n)
        job.reward += tr.reward
        queue = self._open.get((tr.step.application_id, tr.step.node_id))
        if queue and tr in queue:
            queue.remove(tr)
        if self.paper:
            self.model.last_state = int(reached)

    def _advance(self, chain: deque) -> None:
        while len(chain) >= 2 and chain[0].reward is not None:
            tr, nxt = chain.popleft(), chain[0]
            s_next = nxt.step.state
            if self.paper and tr.reached is not None:
                s_next = int(tr.reached)  # the paper's S_{t+1} is the state the launch reached
            self._update(tr, s_next, nxt.step.action)

    def _update(self, tr: _Transition, s_next: int | None, a_next: int | None) -> None:
        table = self.model.table
        sarsa_update(table.q, tr.step.state, tr.step.action, tr.reward, s_next, a_next, self.alpha, self.gamma)
        table.visits[tr.step.state, tr.step.action] += 1
        self.updates += 1

    def _finish(self, app: str) -> None:
        job = self.jobs.pop(app, None)
        if job is not None:
            if not self.paper:
                self._flush(job.chain)
            self.finished_rewards.append(job.reward)
        for keys in self._open_hosts.pop(app, {}).values():
            for key in keys:
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
        self.model.epsilon = self.schedule.value(self.episodes - self._episode0)

    def end_of_run(self) -> None:
        """Offline: the emulator episode is over; close every open trajectory (paper mode's one included)."""
        for app in list(self.jobs):
            job = self.jobs.pop(app)
            self._flush(job.chain)
            self.finished_rewards.append(job.reward)
        self._flush(self._paper_chain)
        self._open.clear()
        self._open_hosts.clear()
        self.model.last_state = int(LocalityState.NO)
        self.publish()

    # ------------------------------------------------------------ persistence

    def state_meta(self) -> dict[str, Any]:
        return {"episodes": self.episodes, "updates": self.updates, "epsilon": self.model.epsilon,
                "alpha": self.alpha, "gamma": self.gamma, "epsilon_start": self.schedule.start,
                "epsilon_decay": self.schedule.decay, "decay_every": self.schedule.every}

    def save(self, path: str | Path | None = None, extra: dict[str, Any] | None = None) -> str:
        target = Path(path) if path else self.save_to
        if target is None:
            raise ValueError("no path to save the Q-table to")
        checksum = self.model.save(target, {"code_version": self._code_version, **self.state_meta(), **(extra or {})})
        self._last_save = time.monotonic()
        self.saves += 1
        return checksum

    def publish(self) -> None:
        """Make what was learned so far what decisions read (the loop calls it after each Report batch)."""
        self.model.publish()

    def maybe_save(self) -> None:
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
