"""The routing baselines of RL-FC and RL-LSFC on hand-made observations."""

from collections import Counter

import numpy as np
import pytest

from policy_engine.engine import Engine, sequence_from_request_id
from policy_engine.policy import ROUTE, create, spec
from policy_engine.routing import mean_occupation, most_likely
from policy_engine.types import ClusterDemand, ClusterState, JobCategory, RouteJob, RouteObservation, RouteSequence


def cluster(cid, capacity, occ, available=None, current=None, hetero=0.0):
    hist = np.asarray(occ, dtype=np.float32)
    current = current or capacity
    if available is None:
        available = int(current * (1 - (hist[-1] if hist.size else 0)))
    return ClusterState(cid, capacity, current, current, available, hetero, hist)


def job(jid, counts, per_cluster=()):
    return RouteJob(jid, JobCategory.STREAMING, np.asarray(counts, dtype=np.int64), 10.0, 12.0, 100.0, 5,
                    per_cluster=tuple(per_cluster))


# cluster 1 small and idle-ish in percent, cluster 2 large with more free executors in absolute terms
CLUSTERS = [cluster(1, 500, [0.2] * 100), cluster(2, 1900, [0.5] * 100), cluster(3, 800, [0.9] * 100)]
JOBS = [job("mid", [100] * 10), job("small", [30] * 8 + [60] * 2), job("big", [300] * 10)]   # means 100, 36, 300


def obs(jobs=JOBS, clusters=CLUSTERS, request_id="ep:0"):
    return RouteObservation(jobs=list(jobs), clusters=list(clusters), time=500.0, request_id=request_id)


@pytest.mark.parametrize("name,job_index,cluster_id", [
    ("sf-p", 1, 1),   # smallest mean request (36); lowest average occupation (20 %)
    ("lf-p", 2, 1),   # largest (300)
    ("sf-e", 1, 2),   # most available executors on average: 1900 * 0.5 = 950 > 500 * 0.8 = 400
    ("lf-e", 2, 2),
])
def test_seed_000_rules(name, job_index, cluster_id):
    d = create(name).route(obs())
    assert (d.job_index, d.cluster_id) == (job_index, cluster_id)


def test_baselines_use_the_latest_100_steps_only():
    # cluster 1 was busy long ago but idle for the latest 100 steps
    c1 = cluster(1, 500, [1.0] * 50 + [0.0] * 100)
    c2 = cluster(2, 500, [0.1] * 150)
    assert mean_occupation(c1) == 0.0
    assert create("sf-p").route(obs(clusters=[c1, c2])).cluster_id == 1


def test_empty_history_uses_the_occupation_now():
    c1 = cluster(1, 1000, [], available=100)
    c2 = cluster(2, 500, [], available=400)
    assert mean_occupation(c1) == pytest.approx(0.9)
    assert create("sf-e").route(obs(clusters=[c1, c2])).cluster_id == 2


def test_ties_go_to_the_earliest_job_and_cluster():
    jobs = [job("a", [50] * 10), job("b", [50] * 10)]
    clusters = [cluster(7, 1000, [0.5] * 10), cluster(8, 1000, [0.5] * 10)]
    d = create("sf-e").route(obs(jobs, clusters))
    assert (d.job_index, d.cluster_id) == (0, 7)


def test_random_is_a_function_of_the_request_id_and_uniform():
    policy = create("random")
    o = obs()
    assert policy.route(o) == policy.route(obs(request_id="ep:0"))
    picks = Counter()
    for n in range(3000):
        o.request_id = f"ep:{n}"
        d = policy.route(o)
        picks[(d.job_index, d.cluster_id)] += 1
    assert len(picks) == 9                                  # every (job, cluster) pair comes up
    assert max(picks.values()) / min(picks.values()) < 1.5   # about uniform (333 each)


# ---------------------------------------------------------------- RL-LSFC


def test_most_likely_and_worker_request():
    assert most_likely(np.array([30] * 8 + [60] * 2)) == 30
    assert most_likely(np.array([60] * 5 + [30] * 5)) == 30     # equal counts: the smaller
    assert most_likely(np.array([10, 20, 20, 30, 30, 30, 40, 40, 50, 60])) == 30
    assert sequence_from_request_id("multicluster-uniform/3:17") == RouteSequence("multicluster-uniform/3", 17)
    assert sequence_from_request_id("no-suffix") is None


def hetero_obs(request_id="ep:0"):
    clusters = [cluster(1, 800, [0.5] * 100, hetero=70), cluster(2, 1200, [0.5] * 100, hetero=60),
                cluster(3, 1500, [0.8] * 100, current=1700, hetero=100)]
    # job "x": most likely 100 / 100 / 100 -> 100; job "y": 20 / 400 / 30 -> 150 (more on average though
    # smaller on cluster 1)
    x = job("x", [100] * 10, [ClusterDemand(c, np.array([100] * 10)) for c in (1, 2, 3)])
    y = job("y", [20] * 10, [ClusterDemand(1, np.array([20] * 10)), ClusterDemand(2, np.array([400] * 10)),
                             ClusterDemand(3, np.array([30] * 7 + [90] * 3))])
    return RouteObservation([y, x], clusters, 100.0, request_id)


def test_maf_formula():
    d = create("maf").route(hetero_obs())
    # job x (index 1) has the least worker request; (1 - RO) * CAP / ER = 400/100, 600/100, 0.2 * 1700 / 100 = 3.4
    assert (d.job_index, d.cluster_id) == (1, 2)


def test_maf_divides_by_the_jobs_request_on_each_cluster():
    o = hetero_obs()
    o.jobs = o.jobs[:1]          # only y: 400 / 20 = 20 on cluster 1, 600 / 400 = 1.5, 340 / 30 = 11.3
    assert create("maf").route(o).cluster_id == 1


def sequenced(stream, n):
    o = hetero_obs(f"opaque-id-{stream}-{n}")   # ids are opaque: the turn is RouteRequest.sequence
    o.sequence = RouteSequence(stream, n)
    return o


def test_round_robin_turns_with_the_sequence_number_from_a_random_start():
    policy = create("rr")
    ids = [policy.route(sequenced("episode-a", n)).cluster_id for n in range(7)]
    start = ids[0]
    assert ids == [((start - 1 + n) % 3) + 1 for n in range(7)]
    starts = {policy.route(sequenced(f"episode-{k}", 0)).cluster_id for k in range(30)}
    assert starts == {1, 2, 3}                        # the start differs between episodes
    assert all(policy.route(sequenced("episode-a", n)).job_index == 1 for n in range(3))
    # An older caller without the field but with `<stream>:<n>` ids gets the same turns (the engine reads them).
    engine = Engine(policy)
    assert [engine.route(hetero_obs(f"episode-a:{n}")).cluster_id for n in range(7)] == ids
    # Neither: a cluster drawn from a hash of the id, the same for the same id.
    assert engine.route(hetero_obs("no-turn")) == engine.route(hetero_obs("no-turn"))


def test_ran_picks_least_request_job_and_hashes_the_cluster():
    policy = create("ran")
    seen = Counter(policy.route(hetero_obs(f"e:{n}")).cluster_id for n in range(600))
    assert set(seen) == {1, 2, 3} and min(seen.values()) > 150
    assert policy.route(hetero_obs("e:5")) == policy.route(hetero_obs("e:5"))


@pytest.mark.parametrize("name", ["random", "sf-p", "lf-p", "sf-e", "lf-e", "ran", "rr", "maf"])
def test_registered_as_pure_route_policies(name):
    assert spec(name).capabilities == frozenset({ROUTE}) and spec(name).model == "none"
    p = create(name)
    o = hetero_obs("x:3")
    first = p.route(o)
    assert all(p.route(o) == first for _ in range(3))     # no hidden state
    with pytest.raises(NotImplementedError):
        p.schedule(None)
