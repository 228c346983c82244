"""`policy-engine serve --policy clqlmrs` learning online from the emulator's remote mode (real gRPC, real process).

One ten-map Sort job per episode on CLQLMRS's 6-node, 2-rack cluster: FIFO launches most maps on whichever node
heartbeats first, so only ~60 % of them read local data. The served policy starts from an empty Q-table (which places like
FIFO), learns from the ContainerStarted / JobFinished reports the emulator sends, and must end up launching
(nearly) every map local: its table changes, is persisted atomically, survives SIGKILL and is reloaded on restart.
"""

from __future__ import annotations

import signal

import numpy as np
import pytest

from emulator.drivers import InProcessDriver, RemoteDriver
from emulator.scenario import get_scenario
from policy_engine.cli import start_engine_subprocess
from algorithms.clqlmrs import PLACE, WAIT, LocalityState
from policy_engine.policy import create

EPISODES = 8


@pytest.fixture(scope="module")
def scenario():
    return get_scenario("locality-sort", maps=10, jobs=1, interarrival_s=0, cache_gb=4)


def _serve(*extra):
    proc, target = start_engine_subprocess("clqlmrs", list(extra))
    return proc, RemoteDriver(target, expect_policy="clqlmrs", process=proc)  # driver.close() stops it


def test_served_policy_learns_online_and_its_decisions_improve(scenario, tmp_path):
    fifo = [scenario.run_episode(InProcessDriver(create("fifo")), seed)["local_task_rate"] for seed in
            range(EPISODES)]
    q_path = tmp_path / "q.safetensors"
    proc, driver = _serve("--set", f"save_to={q_path}", "--set", "epsilon=0", "--set", "save_every_s=0.05")
    try:
        rates = [scenario.run_episode(driver, seed)["local_task_rate"] for seed in range(EPISODES)]
        assert q_path.exists()  # periodic saves while serving
    finally:
        driver.client.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    # The first episode starts from a zero table (FIFO's placements) and learns within it; later ones are local.
    late = float(np.mean(rates[EPISODES // 2:]))
    assert late >= float(np.mean(fifo[EPISODES // 2:])) + 0.2, (rates, fifo)
    assert late >= 0.85, rates
    print("local task rate per episode: served clqlmrs", rates, "fifo", fifo)
    learned = create("clqlmrs", model=str(q_path), learn=False)
    q, enc = learned.table.q, learned.encoding
    assert learned.table.visits.sum() > 50
    remote = [s for s in range(q.shape[0]) if enc.decode(s)["level"] >= LocalityState.CRL and
              learned.table.visits[s].sum() > 0]
    assert remote and all(q[s, PLACE] < q[s, WAIT] for s in remote)  # it learned to wait rather than read remotely
    local = [s for s in range(q.shape[0]) if enc.decode(s)["level"] in (LocalityState.CL, LocalityState.DL) and
             learned.table.visits[s, PLACE] > 0]
    assert local and all(q[s, PLACE] > 0 for s in local)


def test_restart_resumes_the_persisted_table_and_learn_false_freezes_it(scenario, tmp_path):
    q_path = tmp_path / "q.safetensors"
    proc, driver = _serve("--set", f"save_to={q_path}", "--set", "epsilon=0", "--set", "save_every_s=0")
    try:
        scenario.run_episode(driver, 0)
        scenario.run_episode(driver, 1)
    finally:
        driver.client.close()
        proc.send_signal(signal.SIGKILL)  # a crash: no shutdown save, only the periodic atomic ones
        proc.wait(timeout=30)
    assert [p.name for p in tmp_path.iterdir()] == ["q.safetensors"]  # no torn temp file left behind
    after_crash = create("clqlmrs", model=str(q_path), learn=False).table.q.copy()
    assert after_crash.any()

    # Restart with the same save_to: the engine reloads the table (its model version names it) and goes on.
    proc, driver = _serve("--set", f"save_to={q_path}", "--set", "epsilon=0")
    try:
        info = driver.client.info()
        assert info.model_version.startswith("abstract-") and "online-learning" in info.capabilities
        scenario.run_episode(driver, 2)
    finally:
        driver.client.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    resumed = create("clqlmrs", model=str(q_path), learn=False).table
    assert not np.array_equal(resumed.q, after_crash) and resumed.visits.sum() > 0

    # learn=false: serving the same model changes nothing, and the file is left alone.
    before = q_path.read_bytes()
    proc, driver = _serve("--model", str(q_path), "--set", "learn=false")
    try:
        assert "online-learning" not in driver.client.info().capabilities
        a = scenario.run_episode(driver, 3)
        b = scenario.run_episode(driver, 3)
    finally:
        driver.close()
    assert a == b  # frozen: the same episode gives the same result twice
    assert q_path.read_bytes() == before


def test_learning_in_process_and_behind_grpc_give_the_same_episodes(scenario):
    """Exploration draws come from the observations and both drivers attach the same learner: identical runs."""
    local = InProcessDriver(create("clqlmrs", epsilon=0.3))
    in_process = [scenario.run_episode(local, seed) for seed in range(3)]
    proc, driver = _serve("--set", "epsilon=0.3")
    try:
        remote = [scenario.run_episode(driver, seed) for seed in range(3)]
    finally:
        driver.close()
    assert remote == in_process
    assert local.engine.learner.updates > 0
