"""CLQLMRS: reward, SARSA update, ε schedule, the policy's decisions, the online learner and Q-table persistence."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from clqlmrs_heartbeats import map_job, node, observe
from policy_engine.artifact import ArtifactError
from algorithms.clqlmrs import (
    PLACE,
    WAIT,
    LocalityState,
    locality_reward,
    state_from_report,
)
from policy_engine.engine import Engine
from policy_engine.policy import create
from policy_engine.qlearning import EpsilonSchedule, QTable, sarsa_update
from policy_engine.types import ContainerFinished, ContainerStarted, JobFinished, Locality

CL, DL, CRL, DRL, NO = (int(s) for s in LocalityState)


# ------------------------------------------------------------------------------------------------ reward


def test_reward_reproduces_the_papers_worked_example():
    """Fig. 2: T1 -> DN1 (data local), T2 -> DN3 (data rack local), T3 -> DN4 (cache local) on a 3-task job."""
    counts = np.zeros(5, int)
    rewards = []
    for state in (DL, DRL, CL):
        counts[state] += 1
        rewards.append(locality_reward(state, counts, 3))
    assert rewards == pytest.approx([0.5 / 3, -0.5 / 3, 1 / 3])


def test_reward_grows_with_the_count_of_tasks_at_that_level():
    counts = np.array([2, 0, 1, 0, 3])
    assert locality_reward(CL, counts, 10) == pytest.approx(0.2)
    assert locality_reward(CRL, counts, 10) == pytest.approx(-0.025)
    assert locality_reward(NO, counts, 10) == pytest.approx(-0.3)
    with pytest.raises(ValueError):
        locality_reward(CL, counts, 0)


def test_reported_locality_maps_to_the_five_states():
    assert state_from_report(Locality.CACHE_LOCAL, False) == LocalityState.CL
    assert state_from_report(Locality.NODE_LOCAL, True) == LocalityState.DL
    assert state_from_report(Locality.RACK_LOCAL, True) == LocalityState.CRL
    assert state_from_report(Locality.RACK_LOCAL, False) == LocalityState.DRL
    assert state_from_report(Locality.OFF_SWITCH, True) == LocalityState.NO


# ------------------------------------------------------------------------------------------------ SARSA


def test_sarsa_update_hand_worked():
    q = np.zeros((3, 2))
    q[1, 0] = 0.4
    # Q(0,1) <- 0 + 0.1 * (0.5 + 0.95 * 0.4 - 0) = 0.088
    td = sarsa_update(q, 0, 1, 0.5, 1, 0, alpha=0.1, gamma=0.95)
    assert q[0, 1] == pytest.approx(0.088)
    assert td == pytest.approx(0.88)
    # again, now from 0.088: 0.088 + 0.1 * (0.5 + 0.38 - 0.088) = 0.1672
    sarsa_update(q, 0, 1, 0.5, 1, 0, alpha=0.1, gamma=0.95)
    assert q[0, 1] == pytest.approx(0.1672)
    # terminal step: no bootstrap. 0.4 + 0.1 * (-1 - 0.4) = 0.26
    sarsa_update(q, 1, 0, -1.0, None, None, alpha=0.1, gamma=0.95)
    assert q[1, 0] == pytest.approx(0.26)


def test_epsilon_decays_by_0999_every_10_episodes():
    sched = EpsilonSchedule()
    assert [sched.value(n) for n in (0, 9, 10, 19, 20, 25)] == pytest.approx(
        [1.0, 1.0, 0.999, 0.999, 0.999 ** 2, 0.999 ** 2])
    with pytest.raises(ValueError):
        EpsilonSchedule(start=1.5)


# ------------------------------------------------------------------------------------------------ policy


def _jobs():
    far = map_job("app1", [(["n2", "n4"], [])] * 3, submit=0)               # input only on rack /r2
    cached = map_job("app2", [(["n1", "n2"], ["n1"])] * 2, submit=1)        # input cached on n1
    return far, cached


def test_zero_table_places_like_fifo_and_labels_locality():
    policy = create("clqlmrs", learn=False)
    decision = Engine(policy).schedule(observe(node("n1"), list(_jobs())))
    assert [(a.ask_id, a.count, a.locality) for a in decision.assignments] == [
        ("app1-maps", 3, Locality.OFF_SWITCH), ("app2-maps", 1, Locality.CACHE_LOCAL)]


def test_learned_table_lets_the_node_go_when_waiting_is_worth_more():
    policy = create("clqlmrs", learn=False)
    obs = observe(node("n1"), list(_jobs()))
    steps = {s.application_id: s for s in policy.trace(obs)}
    s_far, s_cached = steps["app1"].state, steps["app2"].state
    assert policy.encoding.decode(s_far)["level"] == NO and policy.encoding.decode(s_cached)["level"] == CL
    policy.table.q[s_cached, PLACE] = 0.5
    policy.table.q[s_far, PLACE], policy.table.q[s_far, WAIT] = -0.4, -0.1
    # FIFO order: app1 (submitted first) would read off-rack, its table action is WAIT, so the node goes to app2,
    # which takes both of its cache-local containers; app1's WAIT is a learning step.
    assert [(a.ask_id, a.count, a.locality) for a in policy.schedule(obs).assignments] == [
        ("app2-maps", 2, Locality.CACHE_LOCAL)]
    assert [(s.application_id, s.action) for s in policy.trace(obs) if not s.place] == [("app1", WAIT)]


def test_order_q_ranks_jobs_by_their_place_value():
    obs = observe(node("n1", free_gb=1), list(_jobs()))
    for order, first in (("fifo", "app1-maps"), ("q", "app2-maps")):
        policy = create("clqlmrs", learn=False, order=order)
        enc = policy.encoding
        s_cached = enc.encode(LocalityState.CL, 1.0, 0, 4, obs.node)
        s_far = enc.encode(LocalityState.NO, 0.0, 0, 4, obs.node)
        policy.table.q[s_cached, PLACE] = 0.5   # cache-local is worth more...
        policy.table.q[s_far, PLACE] = 0.1      # ...but off-rack is still worth launching
        assert [a.ask_id for a in policy.schedule(obs).assignments] == [first]


def test_decisions_are_a_pure_function_of_observation_and_table():
    policy = create("clqlmrs", epsilon=0.5, learn=True)
    obs = observe(node("n1", ts=1234), list(_jobs()), request_id="r1")
    first = policy.schedule(obs)
    assert all(policy.schedule(obs) == first for _ in range(5))
    different = {str(policy.schedule(observe(node("n1", ts=t), list(_jobs())))) for t in range(40)}
    assert len(different) > 1  # exploration does vary across heartbeats


def test_paper_mode_chooses_task_node_pairs_by_q_value():
    policy = create("clqlmrs", mode="paper", learn=False)
    job = map_job("app1", [(["n2", "n4"], []), (["n1", "n3"], ["n1"])])
    obs = observe(node("n1", free_gb=1), [job])
    # Zero table: first pending task (block 0, off this rack -> the best level YARN's counts allow here).
    (step,) = policy.trace(obs)
    assert step.action == policy.encoding.action("app1-blk0", obs.node) and step.state == NO
    policy.table.q[NO, policy.encoding.action("app1-blk1", obs.node)] = 1.0
    (step,) = policy.trace(obs)
    assert step.action == policy.encoding.action("app1-blk1", obs.node) and step.predicted == LocalityState.CL
    assert policy.schedule(obs).assignments[0].locality == Locality.CACHE_LOCAL


def test_bad_options_are_refused_with_a_message():
    with pytest.raises(ValueError, match="mode"):
        create("clqlmrs", mode="table")
    with pytest.raises(ValueError, match="learn"):
        create("clqlmrs", learn="maybe")
    with pytest.raises(ValueError, match="alpha"):
        create("clqlmrs", alpha=2)


# ------------------------------------------------------------------------------------------------ online learner


def _started(app, node_id, level, cid):
    return ContainerStarted(container_id=cid, application_id=app, node_id=node_id, locality=level)


def test_learner_updates_the_table_from_reports_hand_worked():
    policy = create("clqlmrs", epsilon=0.0)
    engine = Engine(policy)
    learner = engine.attach_learner()
    assert learner is not None and "online-learning" in policy.capabilities
    job = map_job("app2", [(["n1", "n2"], ["n1"])] * 2)
    obs = observe(node("n1", free_gb=2), [job])
    decision = engine.schedule(obs)
    assert sum(a.count for a in decision.assignments) == 2
    steps = policy.trace(obs)
    assert [s.place for s in steps] == [True, True] and steps[0].state == steps[1].state
    s = steps[0].state
    assert not policy.table.q.any()
    engine.report([_started("app2", "n1:8041", Locality.CACHE_LOCAL, "c1")])
    # r1 = 1 * 1/2; successor known: Q(s,P) = 0.1 * (0.5 + 0.95 * 0) = 0.05
    assert policy.table.q[s, PLACE] == pytest.approx(0.05)
    engine.report([_started("app2", "n1:8041", Locality.NODE_LOCAL, "c2"),
                   ContainerFinished(container_id="c1", application_id="app2", node_id="n1:8041",
                                     locality=Locality.CACHE_LOCAL)])
    assert policy.table.q[s, PLACE] == pytest.approx(0.05)  # last step waits for the job's end (terminal)
    engine.report([JobFinished(job_id="app2", succeeded=True)])
    # r2 = 0.5 * 1/2 (one data-local of 2 tasks); terminal: 0.05 + 0.1 * (0.25 - 0.05) = 0.07
    assert policy.table.q[s, PLACE] == pytest.approx(0.07)
    assert policy.table.visits[s, PLACE] == 2 and learner.updates == 2 and learner.episodes == 1


def test_frozen_policy_has_no_learner():
    policy = create("clqlmrs", learn=False)
    assert Engine(policy).attach_learner() is None
    assert "online-learning" not in policy.capabilities and policy.epsilon == 0.0


# ------------------------------------------------------------------------------------------------ persistence


def test_q_table_round_trips_and_reloads_as_the_policys_model(tmp_path):
    policy = create("clqlmrs", learn=False)
    policy.table.q[:] = np.random.default_rng(1).normal(size=policy.table.q.shape)
    path = tmp_path / "q.safetensors"
    policy.save(path, {"episodes": 7})
    again = create("clqlmrs", model=str(path), learn=False)
    assert np.array_equal(again.table.q, policy.table.q)
    assert again.encoding.mode == "abstract" and again.model_version.startswith("abstract-7ep-")
    assert again.schedule(observe(node("n1"), list(_jobs()))) == policy.schedule(observe(node("n1"), list(_jobs())))
    with pytest.raises(ValueError, match="abstract"):
        create("clqlmrs", model=str(path), mode="paper")


def test_corrupt_or_foreign_q_tables_are_refused(tmp_path):
    policy = create("clqlmrs", learn=False)
    path = tmp_path / "q.safetensors"
    policy.save(path, {})
    data = bytearray(path.read_bytes())
    data[-8:] = b"\xff" * 8  # flip bytes inside the tensor data: checksum mismatch
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="checksum"):
        create("clqlmrs", model=str(bad))
    truncated = tmp_path / "truncated.safetensors"
    truncated.write_bytes(path.read_bytes()[:100])
    with pytest.raises(ArtifactError, match="truncated or corrupt"):
        create("clqlmrs", model=str(truncated))
    wrong_shape = tmp_path / "shape.safetensors"
    QTable.zeros(7, 2).save(wrong_shape, "clqlmrs", {"encoding": {"mode": "abstract"}})
    with pytest.raises(ArtifactError, match="shape"):
        create("clqlmrs", model=str(wrong_shape))
    # the server refuses it at start with the reason, not a traceback
    proc = subprocess.run([sys.executable, "-m", "policy_engine.cli", "serve", "--policy", "clqlmrs", "--port", "0",
                           "--model", str(bad)], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "checksum mismatch" in proc.stderr and "Traceback" not in proc.stderr


def test_learner_saves_atomically_and_a_restart_resumes(tmp_path):
    path = tmp_path / "online" / "q.safetensors"
    policy = create("clqlmrs", save_to=str(path), epsilon=0.0)
    engine = Engine(policy)
    engine.attach_learner()
    job = map_job("app2", [(["n1", "n2"], ["n1"])] * 2)
    engine.schedule(observe(node("n1", free_gb=2), [job]))
    engine.report([_started("app2", "n1:8041", Locality.CACHE_LOCAL, "c1"),
                   _started("app2", "n1:8041", Locality.CACHE_LOCAL, "c2"),
                   JobFinished(job_id="app2")])
    engine.close()
    assert [p.name for p in path.parent.iterdir()] == ["q.safetensors"]  # no temp file left behind
    restarted = create("clqlmrs", save_to=str(path))
    assert np.array_equal(restarted.table.q, policy.table.q) and restarted.table.q.any()


def test_no_table_keeps_a_job_waiting_forever():
    policy = create("clqlmrs", learn=False, max_wait=2)
    policy.table.q[:, WAIT] = 10.0  # a table that always prefers to wait
    job = map_job("app1", [(["n2", "n4"], [])] * 2)
    job.scheduling_opportunities = 7  # < 2 x 4 nodes: the table is obeyed
    assert policy.schedule(observe(node("n1"), [job])).assignments == []
    job.scheduling_opportunities = 8  # waited 2 heartbeats per node: placed anyway
    assert sum(a.count for a in policy.schedule(observe(node("n1"), [job])).assignments) == 2


def test_learning_problems_never_fail_scheduling_or_reports(monkeypatch):
    policy = create("clqlmrs", epsilon=0.0)
    engine = Engine(policy)
    learner = engine.attach_learner()
    # outcomes of containers it never placed (AMs, reduces, another scheduler's) are ignored, not errors
    assert engine.report([_started("app9", "n3:8041", Locality.NODE_LOCAL, "c9"),
                          JobFinished(job_id="app9")]) == 2
    assert learner.errors == 0 and learner.updates == 0 and not policy.table.q.any()

    def broken(trace):
        raise RuntimeError("bug in the learner")

    monkeypatch.setattr(learner, "on_decision", broken)
    decision = engine.schedule(observe(node("n1"), list(_jobs())))
    assert sum(a.count for a in decision.assignments) == 4 and learner.errors == 1
