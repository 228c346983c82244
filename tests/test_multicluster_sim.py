"""The multi-cluster simulator on hand-made workloads whose timelines are worked out by hand."""

import numpy as np
import pytest

from emulator.drivers import InProcessDriver
from emulator.multicluster.sim import FIFO, HALTED_FIRST, Federation, MultiClusterSim
from emulator.multicluster.workload import ArrivalPattern, JobProfile, Workload
from policy_engine.policies.multicluster import SmallestFirstE
from policy_engine.types import JobCategory, JobFinished, RouteDecision

REG, TC, ST = int(JobCategory.REGULAR), int(JobCategory.TIME_CRITICAL), int(JobCategory.STREAMING)


def workload(jobs, n_clusters=1):
    """jobs: dicts with arrival, category, executors, runtime, deadline=0, executions=1, period=0."""
    n = len(jobs)
    get = lambda k, d=0: np.array([j.get(k, d) for j in jobs], dtype=np.int64)  # noqa: E731
    execs = get("executions", 1)
    runtime = get("runtime")
    dist = np.repeat(get("executors")[:, None], 10, axis=1)
    return Workload(
        arrival=get("arrival"), category=get("category", REG), executions=execs, period=get("period"),
        duration=np.where(execs > 1, execs * get("period"), runtime), standard_runtime=runtime,
        deadline=get("deadline"), expected_hetero=np.zeros(n), sensitivity=np.zeros(n, dtype=np.int64),
        base_distribution=dist, distribution=np.repeat(dist[:, None, :], n_clusters, axis=1),
        run=np.repeat(runtime[:, None], n_clusters, axis=1),
        cluster_standard_runtime=np.repeat(runtime[:, None], n_clusters, axis=1),
        cluster_deadline=np.repeat(get("deadline")[:, None], n_clusters, axis=1),
        slot=np.zeros((n, int(execs.max())), dtype=np.int64))


def sim_for(federation, scheduler=FIFO, history=100):
    return MultiClusterSim(federation, ArrivalPattern(), JobProfile(), n_jobs=1, local_scheduler=scheduler,
                           history=history, tag="test")


def play_in_order(sim, w):
    """Route the oldest buffered job to cluster 1 each step; return the observations seen."""
    seen = []
    obs = sim.reset(0, workload=w)
    while obs is not None:
        seen.append(obs)
        obs = sim.step(RouteDecision(0, obs.clusters[0].cluster_id))
    return seen


HEAD_OF_LINE = [
    dict(arrival=1, executors=8, runtime=5),                               # j0: holds 8 of 10 over [1, 6)
    dict(arrival=1, category=TC, executors=5, runtime=3, deadline=4),      # j1: waits for j0
    dict(arrival=1, executors=2, runtime=2),                               # j2: fits beside j0
]


def test_fifo_head_of_line_blocks_and_deadline_is_missed():
    sim = sim_for(Federation((10,)), FIFO)
    seen = play_in_order(sim, workload(HEAD_OF_LINE))
    assert [o.time for o in seen] == [1.0, 2.0, 3.0]                 # one job routed per step
    assert [len(o.jobs) for o in seen] == [3, 2, 1]
    r = sim.result()
    # j0 1->6: ratio 1. j1 routed t=2, starts at 6 when j0 frees, ends 9: AR = 9 - 1 = 8 > 4 -> missed.
    # j2 queued behind j1 (strict FIFO) although 2 are free: starts 6, ends 8: AR = 7 over OR 2.
    assert r.ratio_delay == [[1.0], [8 / 3], [7 / 2]]
    assert r.tmdl == 1 and r.missed_per_job.tolist() == [0, 1, 0]
    assert r.ajdr() == pytest.approx(100 * (0 + 5 / 3 + 2.5) / 3)
    assert int(sim.busy[0]) == 0


def test_halted_first_lets_a_fitting_request_pass_a_halted_one():
    sim = sim_for(Federation((10,)), HALTED_FIRST)
    play_in_order(sim, workload(HEAD_OF_LINE))
    r = sim.result()
    # j2 starts at t=3 beside j0 (2 free), ends 5: AR = 4 over 2
    assert r.ratio_delay == [[1.0], [8 / 3], [2.0]]
    assert r.tmdl == 1


def test_occupation_history_seen_by_the_policy():
    sim = sim_for(Federation((10,)), FIFO)
    seen = play_in_order(sim, workload(HEAD_OF_LINE))
    # at t=3: steps 0 (idle), 1 and 2 (j0's 8 of 10 busy)
    np.testing.assert_allclose(seen[2].clusters[0].occupation_history, [0.0, 0.8, 0.8])
    assert seen[2].clusters[0].available == 2
    assert seen[2].clusters[0].queued_jobs == 1
    assert seen[2].request_id == "test/0:2"


def test_streaming_batches_release_on_period_and_report_events():
    w = workload([dict(arrival=0, category=ST, executors=10, runtime=4, deadline=5, executions=3, period=10),
                  dict(arrival=11, category=REG, executors=95, runtime=12)])
    sim = sim_for(Federation((100,)), FIFO)
    events = []

    obs = sim.reset(0, workload=w)
    while obs is not None:
        events += sim.take_events()
        obs = sim.step(RouteDecision(0, 1))
    events += sim.take_events()
    r = sim.result()
    # batch 0: 0->4; batch 1 released at 10 -> 14; j1 (95 of 100) routed at 11 waits for batch 1, runs 14-26;
    # batch 2 released at 20 waits until 26 -> ends 30: AR 10 > deadline 5 -> one miss
    assert r.ratio_delay[0] == [1.0, 1.0, 10 / 4]
    assert r.ratio_delay[1] == [15 / 12]
    assert r.tmdl == 1
    kinds = [e.kind for e in events]
    assert kinds.count("job_finished") == 2 and kinds.count("deadline_missed") == 1
    fin = [e for e in events if isinstance(e, JobFinished)]
    stream = next(f for f in fin if f.job_id == "j0")
    assert stream.runtime == 30 and stream.missed_deadlines == 1 and stream.cluster_id == 1
    assert stream.delay_ratio == pytest.approx((1 + 1 + 10 / 4) / 3)


def test_elastic_controller_expands_and_gives_back_in_stages():
    fed = Federation((100,), elastic=(True,), elastic_increment=50, elastic_max=100, elastic_window=10,
                     elastic_threshold=0.95)
    probe = dict(executors=1, runtime=1)
    w = workload([dict(arrival=0, executors=100, runtime=25), dict(arrival=12, **probe),
                  dict(arrival=22, **probe), dict(arrival=32, **probe), dict(arrival=52, **probe)])
    sim = sim_for(fed, HALTED_FIRST)
    seen = play_in_order(sim, w)
    # t=10: window full -> 150; t=20: at most 101/150 -> back to 100; t=30: steps 20-24 at 100/100 -> 150;
    # t=40: nearly idle -> 100; t=50: nothing to give back
    assert [o.clusters[0].current_capacity for o in seen] == [100, 150, 100, 150, 100]
    assert all(o.clusters[0].max_capacity == 200 and o.clusters[0].capacity == 100 for o in seen)
    # the probe routed at t=22 finds all 100 normal executors busy and halts until j0 ends at 25
    assert sim.result().ratio_delay[2] == [4.0]


def test_generated_episode_conserves_jobs_and_events():
    fed = Federation((500, 800, 1200, 1300, 1900))
    sim = MultiClusterSim(fed, ArrivalPattern("uniform"), JobProfile(), n_jobs=120, tag="t")
    driver = InProcessDriver(SmallestFirstE())
    events = []
    obs = sim.reset(3)
    decisions = 0
    while obs is not None:
        assert all(c.available <= c.current_capacity for c in obs.clusters)
        events += sim.take_events()
        obs = sim.step(driver.route(obs))
        decisions += 1
    events += sim.take_events()
    r = sim.result()
    assert decisions == r.decisions == 120
    assert sum(e.kind == "job_finished" for e in events) == 120
    assert sum(e.kind == "deadline_missed" for e in events) == r.tmdl
    assert (r.cluster_of_job >= 0).all()
    assert all(len(x) == n for x, n in zip(r.ratio_delay, sim.workload.executions))
    assert min(min(x) for x in r.ratio_delay) >= 1.0       # nothing runs faster than its optimal time
    assert int(sim.busy.sum()) == 0
    assert sim.occupation.shape == (5, r.steps) and sim.occupation.max() <= 1.0


def test_bad_decisions_are_refused():
    sim = sim_for(Federation((10,)))
    sim.reset(0, workload=workload(HEAD_OF_LINE))
    with pytest.raises(ValueError, match="job index"):
        sim.step(RouteDecision(5, 1))
    with pytest.raises(ValueError, match="unknown cluster"):
        sim.step(RouteDecision(0, 9))
