"""DeepRM on a real YARN: the engine's DeepRM view of plugin heartbeats (algorithms.deeprm.view).

Sim == real on a script: the same job sets through the emulator's own DeepRM view (slot tags) and through heartbeats
shaped as the plugin builds them (asks in submission order, the run-time application tag, running containers with
start times only; encoded to protobuf and decoded again as the server does) make the same choices, step by step.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from algorithms.deeprm.sim import DeepRMConfig, DeepRMSimulation
from algorithms.deeprm.script import start_steps, waves
from emulator.drivers import make_driver
from emulator.scenario import get_scenario
from policy_engine import codec
from algorithms.deeprm.view import MAX_RUNTIME_MS, RUNTIME_TAG, DeepRMViewConfig
from policy_engine.engine import Engine, EngineMetrics
from policy_engine.features.deeprm import BACKLOG, SLOT_TAG
from policy_engine.policy import create
from policy_engine.types import (ANY, Ask, ClusterSummary, Container, ContainerFinished, JobMetadata, LocalityRequest,
                                 Node, Resource, ScheduleObservation)

MODEL = Path(__file__).resolve().parent.parent / "models" / "deeprm-pg.safetensors"
POLICIES = [("deeprm-pg", str(MODEL)), ("sjf", None), ("packer", None), ("sjf-holdback", None)]


def choices(policy: str, model: str | None, seed: int, yarn: bool, load: float = 0.75, wire: bool = False):
    """(step, job) of every start in one job set, driven by DeepRM's own view or by plugin-shaped heartbeats."""
    sim = DeepRMSimulation(DeepRMConfig(load=load, simu_len=50), seed)
    started = []
    with make_driver(policy, model=model) as d:
        while not sim.done and not sim.truncated:
            if yarn:
                if sim.any_waiting_fits(0):
                    obs = sim.observe_yarn(0)
                    if wire:   # as the server sees it: the plugin's protobuf message, decoded and validated
                        obs = codec.decode_schedule_bytes(codec.encode_schedule(obs).SerializeToString())
                    decision = d.schedule(obs)
                    before = set(sim.running)
                    sim.apply_yarn(decision, 0)
                    started += [(sim.t, j) for j in sim.running if j not in before]
            elif sim.any_fits():
                before = set(sim.running)
                sim.apply(d.schedule(sim.observe()))
                started += [(sim.t, j) for j in sim.running if j not in before]
            sim.advance()
            events = sim.take_events()
            if events:
                d.report(events)
    return started, sim.metrics()


@pytest.mark.parametrize("policy,model", POLICIES)
def test_plugin_heartbeats_make_the_same_choices_as_deeprms_own_view(policy, model):
    for seed in range(5):
        for load in (0.75, 0.9):
            own, m_own = choices(policy, model, 7000 + seed, yarn=False, load=load)
            plugin, m_plugin = choices(policy, model, 7000 + seed, yarn=True, load=load, wire=seed == 0)
            assert plugin == own, f"{policy} seed {7000 + seed} load {load}: first difference at " \
                f"{next((a, b) for a, b in zip(own, plugin) if a != b) if own != plugin else None}"
            assert m_plugin["slowdown"] == m_own["slowdown"]
            assert len(own) > 20


def test_the_learned_policy_decides_differently_from_sjf_on_plugin_heartbeats():
    """The sim == real check can fail: the policies' choices differ on these job sets, and the view carries it."""
    a, _ = choices("deeprm-pg", str(MODEL), 7001, yarn=True)
    b, _ = choices("sjf", None, 7001, yarn=True)
    assert a != b


def test_scripted_jobs_start_in_the_policys_order():
    # what yarn_plugin DeepRmIT runs on a real YARN: a blocker, then six jobs waiting behind it
    jobs = [[0, 4, 20, 1], [1, 2, 8, 1], [2, 3, 10, 1], [2, 1, 2, 1], [2, 2, 7, 1], [2, 2, 5, 1], [2, 10, 6, 1]]
    pg = waves(start_steps(jobs, "deeprm-pg", str(MODEL)))
    assert pg == [[0], [3, 4, 5, 6], [1], [2]]          # the node filled exactly, the first-submitted job 1 later ...
    assert waves(start_steps(jobs, "fifo"))[1] == [1, 2, 3]     # ... where FIFO takes them in submission order
    assert waves(start_steps(jobs, "packer"))[1] == [1, 2, 3]
    assert waves(start_steps(jobs, "sjf"))[1] == [1, 3, 4]


def test_scripted_order_does_not_hang_on_the_real_clusters_timing():
    """On a real YARN the blocker ends 1-2 s after its tagged length and submissions may round to a neighbouring
    step: the engine then decides at another step, with other steps since the last arrival, than the emulator. The
    IT's script gives DeepRM-PG the same waves however late the blocker ends and wherever the late arrivals round
    to, and holds no job back while it fits (which the plugin's wait cap would end natively)."""
    jobs = [[0, 4, 20, 1], [1, 2, 8, 1], [2, 3, 10, 1], [2, 1, 2, 1], [2, 2, 7, 1], [2, 2, 5, 1], [2, 10, 6, 1]]
    expected = [[0], [3, 4, 5, 6], [1], [2]]
    for blocker in range(3, 9):
        script = [[0, blocker, 20, 1]] + jobs[1:]
        assert waves(start_steps(script, "deeprm-pg", str(MODEL))) == expected, f"blocker of {blocker} steps"
    for shift in (-1, 1):
        script = [[a + shift if a == 2 else a, n, m, v] for a, n, m, v in jobs]
        assert waves(start_steps(script, "deeprm-pg", str(MODEL))) == expected, f"arrivals shifted {shift}"
    # no deliberate hold: at no step did a waiting job fit the free units
    start = start_steps(jobs, "deeprm-pg", str(MODEL))
    for t in range(max(start) + 1):
        used = sum(m for j, (a, n, m, v) in enumerate(jobs) if start[j] <= t < start[j] + n)
        waiting = [m for j, (a, n, m, v) in enumerate(jobs) if a <= t < start[j]]
        assert all(m > 20 - used for m in waiting), f"step {t}: a job that fits is held back"
    # the script the IT used before: its first choice flips with the blocker's real end
    old = [[0, 4, 20, 1], [1, 14, 6, 1], [1, 2, 5, 1], [1, 1, 5, 1], [2, 12, 8, 1], [2, 3, 2, 1], [2, 2, 9, 1]]
    flips = {str(waves(start_steps([[0, b, 20, 1]] + old[1:], "deeprm-pg", str(MODEL)))[1]) for b in (4, 5)}
    assert len(flips) == 2


def test_emulator_in_process_equals_grpc_on_plugin_heartbeats():
    scenario = get_scenario("deeprm", heartbeats="yarn", nodes=2, simu_len=30)
    out = {}
    for remote in (None, "spawn"):
        with make_driver("deeprm-pg", model=str(MODEL), remote=remote, timeout=30.0) as d:
            out[remote] = [scenario.run_episode(d, s) for s in (11, 12)]
    assert out[None] == out["spawn"]


def test_many_nodes_scale_the_arrivals_and_keep_one_node_identical():
    one = DeepRMSimulation(DeepRMConfig(), 5)
    again = DeepRMSimulation(DeepRMConfig(nodes=1), 5)
    assert one.arrival.tolist() == again.arrival.tolist()
    four = DeepRMSimulation(DeepRMConfig(simu_len=200, nodes=4), 5)
    two = DeepRMSimulation(DeepRMConfig(simu_len=200, nodes=2), 5)
    assert 1.6 < four.num_jobs / two.num_jobs < 2.4
    with pytest.raises(ValueError, match="heartbeats=yarn"):
        get_scenario("deeprm", nodes=2)


# ---------------------------------------------------------------------------------------------- the view itself

def heartbeat(asks, running=(), free=Resource(20 * 1024, 20), now_ms=100_000, node="n1:0",
              total=Resource(20 * 1024, 20)):
    return ScheduleObservation(Node(node, "n1", "/r", total, free, tuple(running), timestamp_ms=now_ms), list(asks),
                               ClusterSummary(2, 1, Resource(40 * 1024, 40), free), request_id="r")


def ask(app: int, mem_units: int, vc: int, tag: str | None, submit_ms: int = 1000, queue: str = "default",
        parsed: int | None = None):
    tags = {} if tag is None else {RUNTIME_TAG: tag}
    if parsed is None:
        try:
            parsed = max(0, int(tag)) if tag is not None else 0
        except ValueError:
            parsed = 0
    return Ask(f"appattempt_{app}/0/0", application_id=f"application_1_{app:04d}", resource=Resource(mem_units * 1024,
               vc), num_containers=1, locality=(LocalityRequest(ANY, 1),), submit_time_ms=submit_ms, queue=queue,
               job=JobMetadata(expected_runtime_ms=parsed, tags=tags))


def test_missing_malformed_and_absurd_run_time_tags_are_estimated_counted_and_still_scheduled():
    metrics = EngineMetrics()
    engine = Engine(create("sjf"), metrics, deeprm=DeepRMViewConfig(default_runtime_ms=7000))
    asks = [ask(1, 2, 2, None), ask(2, 2, 2, "soon"), ask(3, 2, 2, "-5"), ask(4, 2, 2, str(50 * 365 * 86400_000)),
            ask(5, 2, 2, "0"), ask(6, 2, 2, "3000")]
    decision = engine.schedule(heartbeat(asks))
    assert sorted(a.ask_id for a in decision.assignments) == sorted(a.ask_id for a in asks)   # all six start
    view = engine.state.deeprm
    assert dict(view.estimates) == {"missing": 1, "malformed": 1, "absurd": 3}
    assert [view.runtime_ms[f"application_1_{i:04d}"] for i in range(1, 7)] == [7000] * 5 + [3000]
    assert metrics.registry.get_sample_value("yarnrl_deeprm_runtime_estimates_total", {"reason": "absurd"}) == 3
    # SJF took the tagged 3 s job first: the estimate (7 s) is longer
    assert decision.assignments[0].ask_id == "appattempt_6/0/0"
    assert 0 < MAX_RUNTIME_MS < 50 * 365 * 86400_000


def test_untagged_jobs_are_estimated_from_their_queues_finished_containers():
    engine = Engine(create("sjf"), deeprm=DeepRMViewConfig(default_runtime_ms=60_000))
    engine.report([ContainerFinished(container_id=f"c{i}", application_id="application_1_0099", node_id="n1:0",
                                     runtime_ms=ms) for i, ms in enumerate((4000, 6000))])
    engine.state.deeprm.queue.put("application_1_0099", "default")
    engine.report([ContainerFinished(container_id="c9", application_id="application_1_0099", node_id="n1:0",
                                     runtime_ms=8000)])
    engine.schedule(heartbeat([ask(1, 2, 2, None)]))
    assert engine.state.deeprm.runtime_ms["application_1_0001"] == 8000   # the default queue's mean so far
    engine.schedule(heartbeat([ask(2, 2, 2, None, queue="other")]))
    assert engine.state.deeprm.runtime_ms["application_1_0002"] == 60_000  # no finished container there: default


def test_slots_fill_in_submission_order_and_refill_from_the_backlog():
    engine = Engine(create("sjf", num_slots=2))
    full = Resource(0, 0)
    asks = [ask(i, 2, 2, "1000", submit_ms=1000 * i) for i in range(1, 6)]
    seen = {}
    orig = engine.policy.schedule
    engine.policy.schedule = lambda obs: seen.setdefault("obs", obs) and orig(obs)
    engine.schedule(heartbeat(asks, free=full))
    tags = [(a.application_id[-1], a.job.tags[SLOT_TAG]) for a in seen["obs"].asks]
    assert tags == [("1", "0"), ("2", "1"), ("3", BACKLOG), ("4", BACKLOG), ("5", BACKLOG)]
    # application 1 got a container without the engine (native fallback): its slot takes the backlog's first
    seen.clear()
    engine.schedule(heartbeat(asks[1:], free=full))
    assert [(a.application_id[-1], a.job.tags[SLOT_TAG]) for a in seen["obs"].asks][:2] == [("3", "0"), ("2", "1")]


def test_admitted_applications_asks_go_first_and_the_image_holds_running_containers():
    engine = Engine(create("deeprm-pg", model=str(MODEL)))
    running = [Container("c1", "application_1_0001", Resource(4 * 1024, 1), start_time_ms=96_000)]
    more = ask(1, 1, 1, "5000")           # the running application asks for one more container
    new = ask(2, 2, 2, "2000", submit_ms=99_000)
    seen = {}
    orig = engine.policy.schedule
    engine.policy.schedule = lambda obs: seen.setdefault("obs", obs) and orig(obs)
    decision = engine.schedule(heartbeat([more, new], running=running, free=Resource(16 * 1024, 19)))
    assert decision.assignments[0].ask_id == more.ask_id
    view = seen["obs"]
    assert [a.application_id for a in view.asks] == ["application_1_0002"]
    (c,) = view.node.running
    # started 4 s ago, tagged 5 s: one step left (whole steps of 1 s); the node is DeepRM's 20-unit machine
    assert c.expected_remaining_ms == 1000 and c.resource == Resource(4 * 1024, 1)
    assert view.node.unallocated == Resource(15 * 1024, 18)   # after the admitted application's container


def test_node_units_scale_any_node_size_to_deeprms_machine():
    engine = Engine(create("sjf"))
    seen = {}
    orig = engine.policy.schedule
    engine.policy.schedule = lambda obs: seen.setdefault("obs", obs) and orig(obs)
    # a 5120 MB / 20 vcore node: 256 MB per unit; a 1300 MB ask rounds up to 6 units, free rounds down
    a = Ask("x/0/0", application_id="application_1_0007", resource=Resource(1300, 3), num_containers=1,
            job=JobMetadata(expected_runtime_ms=2000, tags={RUNTIME_TAG: "2000"}))
    engine.schedule(heartbeat([a], total=Resource(5120, 20), free=Resource(5000, 20)))
    v = seen["obs"]
    assert v.asks[0].resource == Resource(6 * 1024, 3)
    assert v.node.unallocated == Resource(19 * 1024, 20) and v.node.total == Resource(20 * 1024, 20)


def test_pooled_image_sees_other_nodes_containers():
    engine = Engine(create("sjf"), deeprm=DeepRMViewConfig(image="pooled"))
    seen = {}
    orig = engine.policy.schedule
    engine.policy.schedule = lambda obs: seen.setdefault("obs", obs) and orig(obs)
    other = [Container("c1", "application_1_0001", Resource(10 * 1024, 10), start_time_ms=99_000)]
    engine.schedule(heartbeat([ask(3, 2, 2, "1000")], running=other, node="n2:0"))
    engine.schedule(heartbeat([ask(3, 2, 2, "1000")], node="n1:0"))
    v = seen["obs"]
    # the cluster (40 GB, 40 vcores) is the machine: 2 GB / 2 vcores per unit; n2's container is in the image
    assert [c.container_id for c in v.node.running] == ["c1"]
    assert v.node.running[0].resource == Resource(5 * 1024, 5)
    with pytest.raises(ValueError):
        DeepRMViewConfig(image="rack")


def test_observations_that_already_are_deeprm_views_pass_through_unchanged():
    sim = DeepRMSimulation(DeepRMConfig(), 3)
    engine = Engine(create("sjf"))
    obs = sim.observe()
    assert engine.state.deeprm.observe(obs) is None
    assert engine.state.deeprm.slots == [None] * 10
