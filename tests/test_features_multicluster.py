"""RL-FC (529) and RL-LSFC (839) state vectors from RouteObservations."""

import numpy as np
import pytest

from policy_engine.features.multicluster import (
    lsfc_dim,
    lsfc_split,
    lsfc_state,
    lsfc_states,
    occupation_traversal,
    rlfc_dim,
    rlfc_state,
    rlfc_states,
)
from policy_engine.types import ClusterDemand, ClusterState, JobCategory, RouteJob, RouteObservation


def _obs(history_len=120, clusters=5, per_cluster=False):
    cs = []
    for i in range(clusters):
        hist = (np.arange(history_len, dtype=np.float32) + 1000 * i) / 10_000
        cs.append(ClusterState(cluster_id=10 + i, capacity=500 + 100 * i, max_capacity=700 + 100 * i,
                               current_capacity=500 + 100 * i, available=100, hetero_factor=60 + 10 * i,
                               occupation_history=hist, missed_deadlines=3 * i))
    jobs = [
        RouteJob("regular", JobCategory.REGULAR, np.full(10, 200), executor_runtime=50.0, deadline=0.0,
                 duration=50.0),
        RouteJob("stream", JobCategory.STREAMING, np.array([30] * 8 + [60] * 2), executor_runtime=10.0,
                 deadline=12.0, duration=400.0, executions=20, expected_hetero_factor=80.0, hetero_sensitivity=3,
                 per_cluster=tuple(ClusterDemand(10 + i, np.array([30 + i] * 10), 10.0 + i, 12.0 - i)
                                   for i in range(clusters)) if per_cluster else ()),
    ]
    return RouteObservation(jobs=jobs, clusters=cs, time=500.0, request_id="t:0")


def test_rlfc_state_has_table_one_layout():
    obs = _obs()
    assert rlfc_dim(5) == 529
    s = rlfc_state(obs, 1)
    assert s.shape == (529,) and s.dtype == np.float32
    block = s[:515].reshape(5, 103)
    np.testing.assert_allclose(block[:, 0], [0.2, 0.4, 0.6, 0.8, 1.0])          # sequence number
    np.testing.assert_allclose(block[:, 1], np.array([500, 600, 700, 800, 900]) / 2000)  # capability
    # latest 100 of 120 steps, oldest first: values 20..119 of cluster 2
    np.testing.assert_allclose(block[2, 2:102], (np.arange(20, 120) + 2000) / 10_000, rtol=1e-6)
    np.testing.assert_allclose(block[:, 102], np.array([0, 3, 6, 9, 12]) / 100)   # missed deadlines
    job = s[515:]
    assert job[0] == pytest.approx(1.0)                                          # streaming
    np.testing.assert_allclose(job[1:11], np.array([30] * 8 + [60] * 2) / 2000)
    np.testing.assert_allclose(job[11:], [0.1, 0.12, 0.4])
    assert rlfc_state(obs, 0)[515] == pytest.approx(1 / 3)                       # regular


def test_rlfc_short_history_is_zero_padded_at_the_old_end():
    s = rlfc_state(_obs(history_len=30), 0)
    hist = s[:103][2:102]
    assert np.all(hist[:70] == 0)
    np.testing.assert_allclose(hist[70:], np.arange(30) / 10_000, rtol=1e-6)


def test_rlfc_states_batch_equals_single_rows():
    obs = _obs()
    batch = rlfc_states(obs)
    assert batch.shape == (2, 529)
    for j in range(2):
        np.testing.assert_array_equal(batch[j], rlfc_state(obs, j))


def test_traversal_of_105_steps_gives_ten_overlapping_segments_of_fifteen():
    h = np.arange(105, dtype=np.float32)
    t = occupation_traversal(h)
    assert t.shape == (150,)
    segs = t.reshape(10, 15)
    for k in range(10):
        np.testing.assert_array_equal(segs[k], np.arange(10 * k, 10 * k + 15))
    # consecutive segments overlap by 5 elements
    np.testing.assert_array_equal(segs[0][10:], segs[1][:5])
    with pytest.raises(ValueError):
        occupation_traversal(np.zeros(100))


def test_lsfc_state_has_table_one_layout_of_seed_002():
    obs = _obs(per_cluster=True)
    assert lsfc_dim(5) == 839
    s = lsfc_state(obs, 1)
    assert s.shape == (839,)
    clusters = s[:775].reshape(5, 155)
    np.testing.assert_allclose(clusters[:, 1], np.array([500, 600, 700, 800, 900]) / 2000)
    np.testing.assert_allclose(clusters[:, 2], np.array([700, 800, 900, 1000, 1100]) / 2000)
    np.testing.assert_allclose(clusters[:, 3], [0.6, 0.7, 0.8, 0.9, 1.0])
    # traversal of the latest 105 of 120 steps (values 15..119): segment 1 starts at step 15 + 10
    seg = clusters[0, 4:154].reshape(10, 15)
    np.testing.assert_allclose(seg[1], np.arange(25, 40) / 10_000, rtol=1e-6)
    job = s[775:]
    assert job.shape == (64,)
    np.testing.assert_allclose(job[:3], [1.0, 0.8, 0.6])
    np.testing.assert_allclose(job[3:53].reshape(5, 10)[:, 0], (30 + np.arange(5)) / 2000)
    np.testing.assert_allclose(job[53:58], (10.0 + np.arange(5)) / 100)
    np.testing.assert_allclose(job[58:63], (12.0 - np.arange(5)) / 100)
    assert job[63] == pytest.approx(0.4)


def test_lsfc_job_without_per_cluster_entries_uses_its_own_fields():
    s = lsfc_state(_obs(), 0)
    job = s[775:]
    np.testing.assert_allclose(job[3:53], np.full(50, 200 / 2000))
    np.testing.assert_allclose(job[53:58], 0.5)


def test_lsfc_split_separates_lstm_input_from_the_rest():
    obs = _obs(per_cluster=True)
    states = lsfc_states(obs)
    np.testing.assert_array_equal(states[1], lsfc_state(obs, 1))
    temporal, rest = lsfc_split(states)
    assert temporal.shape == (2, 5, 10, 15) and rest.shape == (2, 25 + 64)
    np.testing.assert_array_equal(temporal[1, 3].reshape(-1), states[1, 3 * 155 + 4:3 * 155 + 154])
    np.testing.assert_allclose(rest[0, :5], [0.2, 0.25, 0.35, 0.6, 0.0])
    with pytest.raises(ValueError):
        lsfc_split(np.zeros(529))


def test_bad_job_index_and_bad_distribution_are_refused():
    obs = _obs()
    with pytest.raises(IndexError):
        rlfc_state(obs, 2)
    obs.jobs[0].request_distribution = np.arange(7)
    with pytest.raises(ValueError, match="10 slots"):
        rlfc_state(obs, 0)
