"""Issue 24, item 4: the batched path's vectorised code decides exactly as the code before it.

The same batches, shaped like benchmarks/plugin_scale.py's 10,000-node runs (benchmarks/engine_batching.py's
Workload, smaller: map asks naming 3 hosts per task, asked per host, rack and ANY, nodes with 0-4 GB free; the
asks' counts follow the placements, so batches carry changed and unchanged asks as the plugin's do), go through
BatchScheduler(fast=False) (the loops as they were) and BatchScheduler(fast=True) (numpy where it pays), each on its
own engine: every node gets the same containers at the same levels, the same decision ids, and the missed-opportunity
counts end equal. For CLQLMRS the reference also keeps the policy's candidate loop and the learner as they were
(below, copied from before the change), fed the same Report events, some on another NodeManager of the placed node's
host (the learner's by-host lookup): the Q-tables end bit-identical."""

from __future__ import annotations

import dataclasses
import random
from collections import deque
from pathlib import Path

import numpy as np
import pytest

from algorithms.clqlmrs.encoding import PLACE, WAIT, LocalityState, Step, locality_reward, placement, \
    state_from_report
from algorithms.clqlmrs.learner import ClqlmrsLearner, _Transition
from algorithms.clqlmrs.policy import ClqlmrsPolicy
from engine_batching import Workload
from policy_engine.batch import BatchScheduler, parse_batch_request
from policy_engine.engine import Engine
from policy_engine.features.locality import candidate_state, state_counts
from policy_engine.learning import LearningLoop
from policy_engine.locality import add_assignment
from policy_engine.policy import create
from policy_engine.types import (
    Ask,
    BlockInfo,
    ContainerFinished,
    ContainerStarted,
    JobFinished,
    JobMetadata,
    Locality,
    LocalityRequest,
    Node,
    Resource,
)

ROOT = Path(__file__).resolve().parent.parent
CLQLMRS_MODEL = ROOT / "models" / "clqlmrs-mini.safetensors"


# ------------------------------------------------------------------ the reference: CLQLMRS as it was

class ReferenceClqlmrs(ClqlmrsPolicy):
    """CLQLMRS with its candidate loop as before issue 24 (every candidate built up front; placement and state
    redone every round)."""

    def decide(self, obs):
        from policy_engine.locality import AskOnNode, place
        from policy_engine.policies.fifo import fifo_order, memory_floor
        from policy_engine.types import ScheduleDecision

        from algorithms.clqlmrs.encoding import has_locality_preference, rng_for
        from algorithms.clqlmrs.policy import _Candidate

        view = self.model.view
        node = obs.node
        free = node.unallocated
        out = []
        learned = []
        floor = memory_floor(obs.asks)
        for ask in fifo_order(obs.asks):
            if free.memory_mb < floor:
                break
            if ask.num_containers <= 0:
                continue
            if has_locality_preference(ask):
                learned.append(_Candidate(ask, node))
                continue
            free, _ = place(out, AskOnNode(ask, node), free)
        rng = rng_for(self.config.seed, obs) if view.epsilon > 0 else None
        if self.model.encoding.mode == "paper":
            steps = self._paper(obs, view, learned, free, out, rng)
        else:
            steps = self._abstract(obs, view, learned, free, out, rng)
        return ScheduleDecision(out), steps

    def _abstract(self, obs, view, learned, free, out, rng):
        import math

        q, enc, node, cfg = view.q, self.model.encoding, obs.node, self.config
        epsilon = view.epsilon
        num_nodes = obs.cluster.num_nodes or 1
        decided = {}
        steps = []
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
                    if c.ask.scheduling_opportunities >= cfg.max_wait * num_nodes:
                        a = PLACE
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
            c = learned[best]
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
                c = learned[i]
                steps.append(Step(c.ask.application_id, node.node_id, s, WAIT, state, state == LocalityState.CRL,
                                  c.n_tasks, place=False))
        return steps


class ReferenceLearner(ClqlmrsLearner):
    """The learner as before issue 24: a container reported on another node of the host walks every open key."""

    def on_decision(self, trace):
        for step in trace or ():
            job = self._job(step.application_id)
            job.n_tasks = max(job.n_tasks, step.n_tasks, int(job.counts.sum()))
            tr = _Transition(step)
            if not step.place:
                tr.reward = -self.config.wait_cost
            else:
                self._open.setdefault((step.application_id, step.node_id), deque()).append(tr)
            chain = self._paper_chain if self.paper else job.chain
            chain.append(tr)
            if len(chain) > self.MAX_OPEN and chain[0].reward is None:
                self._settle(chain[0], chain[0].step.predicted)
            self._advance(chain)

    def _outcome(self, container_id, app, node_id, level, rack_cached=None):
        if container_id:
            if container_id in self._seen_containers:
                return
            self._seen_containers[container_id] = None
            while len(self._seen_containers) > 100_000:
                self._seen_containers.popitem(last=False)
        queue = self._open.get((app, node_id))
        if not queue:
            host = node_id.split(":", 1)[0]
            queue = next((q for (a, n), q in self._open.items() if a == app and n.split(":", 1)[0] == host and q),
                         None)
        if not queue:
            return
        tr = queue.popleft()
        self._settle(tr, state_from_report(level, tr.step.rack_cached if rack_cached is None else rack_cached))
        chain = self._paper_chain if self.paper else self._job(app).chain
        self._advance(chain)

    def _settle(self, tr, reached):
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
        if self.paper:
            self.model.last_state = int(reached)

    def _finish(self, app):
        job = self.jobs.pop(app, None)
        if job is not None:
            if not self.paper:
                self._flush(job.chain)
            self.finished_rewards.append(job.reward)
        for key in [k for k in self._open if k[0] == app]:
            del self._open[key]
        if self.episode_per_job:
            self.end_episode()


def reference_candidate_state(ask, node, counts=None):
    """features.locality.candidate_state as before issue 24 (numpy for asks without input blocks too)."""
    from policy_engine.features.locality import ReadLocality
    from policy_engine.types import ANY

    if counts is None:
        counts = state_counts(ask, node)
    nz = np.flatnonzero(counts)
    if nz.size:
        return ReadLocality(int(nz[0]))
    for lr in ask.locality:
        if lr.num_containers > 0 and (lr.resource_name == node.host or lr.resource_name == node.node_id):
            return ReadLocality.DL
    for lr in ask.locality:
        if lr.num_containers > 0 and lr.resource_name == node.rack and lr.resource_name != ANY:
            return ReadLocality.DRL
    return ReadLocality.NO


# ------------------------------------------------------------------ driving

def engines(name: str, options: dict) -> tuple[Engine, Engine]:
    """(reference, vectorised) engines of one policy, learners inline (deterministic)."""
    options = dict(options)
    model = options.pop("model", None)
    new = Engine(create(name, model=model, **options))
    new.attach_learner()
    if name != "clqlmrs":
        old = Engine(create(name, model=model, **options))
        old.attach_learner()
        return old, new
    policy = ReferenceClqlmrs(model, **options)
    old = Engine(policy)
    if policy.config.learn:
        old.learner = ReferenceLearner(policy.model)
        old.learning = LearningLoop(old.learner, threaded=False)
    return old, new


def answer(decision) -> list:
    """Per node: its id, its decision's number (ids are "<engine>-<n>"), refusal and containers."""
    return [(r.node_id, r.decision_id.rsplit("-", 1)[-1], r.refusal,
             [(a.ask_id, a.count, a.locality) for a in r.assignments]) for r in decision.results]


def drive(name: str, options: dict, nodes: int, tasks: int, per_batch: int, batches: int, seed: int) -> int:
    """Both engines through the same batches and Report events; asserts equality per batch; returns how many
    containers were placed (so a test can check there was something to compare)."""
    old_engine, new_engine = engines(name, options)
    old, new = BatchScheduler(old_engine, fast=False), BatchScheduler(new_engine, fast=True)
    wl = Workload(nodes, tasks, seed)
    rng = random.Random(seed)
    pending = {a[0]: a[3] for a in wl.asks}
    placed = container = 0
    running: list[tuple[str, str, str]] = []
    for k in range(batches):
        wl.asks = [(a[0], a[1], a[2], pending[a[0]], a[4], a[5]) for a in wl.asks]
        data = wl.batch(wl.sample(per_batch), 1000 + k)
        answers = []
        for batcher in (old, new):
            batch = batcher.decode(parse_batch_request(data), data)
            answers.append(batcher.decide(batch))
        want, got = answers
        assert answer(got) == answer(want), f"{name}: batch {k} of {per_batch} nodes decided differently"
        assert got.idle_nodes == want.idle_nodes
        # the RM's side: counts fall by what was placed (a new wave of maps below half), Report events come back
        events = []
        for r in want.results:
            for a in r.assignments:
                pending[a.ask_id] = max(pending[a.ask_id] - a.count, 0)
                app = f"application_1_{int(a.ask_id.split('/', 1)[0][3:]):04d}"
                for _ in range(a.count):
                    container += 1
                    placed += 1
                    # a quarter reported by another NodeManager of the same host (the learner's by-host lookup)
                    node_id = r.node_id if rng.random() < 0.75 else r.node_id.split(":", 1)[0] + ":9999"
                    events.append(ContainerStarted(container_id=f"c{container}", application_id=app,
                                                   node_id=node_id, locality=a.locality))
                    running.append((f"c{container}", app, node_id))
        for _ in range(len(events)):  # as many natively, on random nodes
            container += 1
            app = f"application_1_{rng.randrange(wl.apps):04d}"
            node_id = f"{wl.hosts[rng.randrange(wl.nodes)]}:{rng.choice((8041, 9999))}"
            events.append(ContainerStarted(container_id=f"c{container}", application_id=app, node_id=node_id,
                                           locality=Locality.OFF_SWITCH))
            running.append((f"c{container}", app, node_id))
        while len(running) > 2 * nodes:
            cid, app, node_id = running.pop(rng.randrange(len(running) // 3 + 1))
            events.append(ContainerFinished(container_id=cid, application_id=app, node_id=node_id))
        for ask_id, n in pending.items():
            if n < tasks // 2:
                pending[ask_id] = tasks
        if k == batches // 2:  # one job ends (its open steps and chains go)
            events.append(JobFinished(job_id="application_1_0001"))
        for engine in (old_engine, new_engine):
            engine.report(list(events))
    if old_engine.opportunities is not None:
        assert list(new_engine.opportunities._counts.items()) == list(old_engine.opportunities._counts.items())
    if old_engine.learner is not None:
        old_table, new_table = old_engine.policy.model.table, new_engine.policy.model.table
        assert np.array_equal(new_table.q, old_table.q) and np.array_equal(new_table.visits, old_table.visits)
        assert new_engine.learner.updates == old_engine.learner.updates > 0
    return placed


POLICIES = [("fifo", {}), ("delay", {}), ("acl", {}), ("clqlmrs", {}),
            ("clqlmrs", {"model": str(CLQLMRS_MODEL), "learn": False})]


@pytest.mark.parametrize("name,options", POLICIES, ids=["fifo", "delay", "acl", "clqlmrs", "clqlmrs-model"])
@pytest.mark.parametrize("per_batch", [7, 57])
def test_vectorised_batches_decide_as_before(name, options, per_batch):
    """7 and 57 nodes per batch: plugin_scale's batches at 10,000 nodes with CapacityScheduler's asynchronous
    scheduling and with the FIFO scheduler."""
    placed = drive(name, options, nodes=2000, tasks=40, per_batch=per_batch, batches=240 // per_batch + 6, seed=3)
    assert placed >= 20


def test_candidate_state_as_before():
    """Without input blocks the entries decide, with blocks the blocks do, as before (no numpy for the former)."""
    rng = random.Random(5)
    node = Node("h1:8041", "h1", "/r1", Resource(8192, 8), Resource(4096, 4))
    hosts = ["h1", "h2", "h3"]
    for _ in range(300):
        entries = tuple(LocalityRequest(name, rng.randrange(3), True)
                        for name in rng.sample(["h1", "h1:8041", "h2", "/r1", "/r2", "*"], rng.randrange(4)))
        job = None
        if rng.random() < 0.5:
            blocks = tuple(BlockInfo(f"b{i}", 1, tuple(rng.sample(hosts, 2)),
                                     tuple(rng.sample(hosts, rng.randrange(2))), ("/r1", "/r2"))
                           for i in range(rng.randrange(4)))
            job = JobMetadata(input_blocks=blocks)
        ask = Ask("a", "app", "", "q", "u", 1, 0, Resource(1024, 1), 3, entries, 0, job, True)
        assert candidate_state(ask, node) == reference_candidate_state(ask, node)
        counts = state_counts(ask, node)
        assert candidate_state(ask, node, counts) == reference_candidate_state(ask, node, counts)


# ------------------------------------------------------------------ Report events

def reference_decode_event(ev, where="event"):
    """codec.decode_event as before issue 24 (a dict of keyword arguments per event)."""
    from policy_engine import codec

    kind = ev.WhichOneof("kind")
    if kind is None:
        raise codec.InvalidRequest(f"{codec._where(where)}: no event kind set")
    cls = codec.EVENT_TYPES.get(kind)
    if cls is None:
        raise codec.InvalidRequest(f"{codec._where(where)}: event kind {kind!r} is not supported by this engine")
    msg = getattr(ev, kind)
    values = {}
    for name, how in codec._event_spec(kind, msg):
        v = getattr(msg, name)
        if how:
            if how == codec._RACK_CACHED:
                v = v if msg.HasField("rack_cached") else None
            elif how == codec._LOCALITY:
                loc = codec._LOCALITIES.get(v)
                if loc is None:
                    raise codec.InvalidRequest(f"{codec._where(where)}.{kind}.locality: unknown locality {v}")
                v = loc
            elif how == codec._TOTAL:
                v = codec._resource(v, f"{codec._where(where)}.{kind}.total")
            else:
                v = codec._finite(v, f"{codec._where(where)}.{kind}.{name}")
        values[name] = v
    return cls(timestamp_ms=ev.timestamp_ms, decision_id=ev.decision_id, **values)


def test_report_events_decode_as_before():
    """Every event kind, valid and not (unknown locality, NaN, a negative total, no kind): the same events, or the
    same refusal, as the keyword-argument decoder."""
    from policy_engine.codec import InvalidRequest, decode_event, decode_events, encode_event
    from policy_engine.proto import pb
    from policy_engine.types import EVENT_TYPES

    rng = random.Random(11)
    messages = []
    for _ in range(400):
        cls = rng.choice(list(EVENT_TYPES.values()))
        values = {}
        for f in dataclasses.fields(cls):
            if f.name == "locality":
                values[f.name] = rng.choice(list(Locality))
            elif f.name == "rack_cached":
                values[f.name] = rng.choice([None, True, False])
            elif f.name == "total":
                values[f.name] = Resource(rng.randrange(8192), rng.randrange(8))
            elif f.type in ("str", str):
                values[f.name] = rng.choice(["", "x", f"h{rng.randrange(99)}:8041", "application_1_0001"])
            elif f.type in ("float", float):
                values[f.name] = rng.choice([0.0, 1.5, 3e9])
            elif f.type in ("bool", bool):
                values[f.name] = rng.random() < 0.5
            else:
                values[f.name] = rng.randrange(1 << 20)
        msg = encode_event(cls(**values))
        spoil = rng.random()
        body = getattr(msg, cls.kind)
        if spoil < 0.1 and "locality" in body.DESCRIPTOR.fields_by_name:
            body.locality = 99
        elif spoil < 0.2 and "runtime" in body.DESCRIPTOR.fields_by_name:
            body.runtime = float("nan")
        elif spoil < 0.3 and "total" in body.DESCRIPTOR.fields_by_name:
            body.total.memory_mb = -1
        elif spoil < 0.33:
            msg = pb.Event(timestamp_ms=5)
        messages.append(pb.Event.FromString(msg.SerializeToString()))
    refused = 0
    for i, m in enumerate(messages):
        try:
            want = reference_decode_event(m, i)
        except InvalidRequest as e:
            refused += 1
            with pytest.raises(InvalidRequest) as got:
                decode_event(m, i)
            assert str(got.value) == str(e)
            continue
        got = decode_event(m, i)
        assert type(got) is type(want) and got == want and got.timestamp_ms == want.timestamp_ms \
            and got.decision_id == want.decision_id
    assert 20 <= refused <= 200
    ok = [m for m in messages if m.WhichOneof("kind")]
    try:
        decode_events(ok)
    except InvalidRequest:
        pass  # an invalid one among them: refused as a whole, as before
