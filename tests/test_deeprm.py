"""The DeepRM setting: job distribution, the image, the baselines, and DeepRM's ordering."""

import numpy as np
import pytest

from algorithms.deeprm.sim import DeepRMConfig, DeepRMSimulation
from emulator.evaluate import run_policy
from emulator.scenario import get_scenario
from policy_engine.features.deeprm import ImageSpec, image, slot_asks
from policy_engine.policy import create


def test_jobs_follow_the_papers_distribution_and_load_sets_the_rate():
    cfg = DeepRMConfig(load=0.75, simu_len=20_000)
    assert cfg.rate == pytest.approx(0.75 / (4.1 * 0.225))
    sim = DeepRMSimulation(cfg, seed=0)
    assert sim.num_jobs / cfg.simu_len == pytest.approx(cfg.rate, abs=0.01)
    small = sim.length <= 3
    assert small.mean() == pytest.approx(0.8, abs=0.01)
    assert set(np.unique(sim.length[small])) == {1, 2, 3} and set(np.unique(sim.length[~small])) == set(range(10, 16))
    dom, other = sim.demand.max(axis=1), sim.demand.min(axis=1)
    assert dom.min() == 5 and dom.max() == 10 and other.min() == 1 and other.max() == 2   # 0.25-0.5 r, 0.05-0.1 r
    with pytest.raises(ValueError, match="load"):
        DeepRMConfig(load=1.5)


def test_slots_backlog_and_reward():
    sim = DeepRMSimulation(DeepRMConfig(job_rate=1.0, simu_len=80), seed=1)
    for _ in range(75):
        sim.advance()
    assert all(s is not None for s in sim.slots) and len(sim.backlog) == 60 and sim.dropped == 76 - 70
    waiting = sim.slots + list(sim.backlog)
    assert sim.step_reward() == pytest.approx(-sum(1.0 / sim.length[j] for j in waiting))
    j = sim.slots[3]
    head = sim.backlog[0]
    sim.start_job(j)
    assert sim.slots[3] == head and j in sim.running   # the freed slot takes the backlog's head


def test_image_shows_running_jobs_slots_and_backlog():
    spec = ImageSpec()
    sim = DeepRMSimulation(DeepRMConfig(job_rate=1.0, simu_len=30), seed=2)
    for _ in range(14):
        sim.advance()
    j = sim.slots[0]
    sim.start_job(j)
    img = sim.image()
    assert img.shape == (20, 244) == (spec.time_horizon, spec.width) and img.dtype == np.float32
    length, mem = int(sim.length[j]), int(sim.demand[j][0])
    assert img[:length, :mem].all() and not img[length:, :mem].any() and not img[:, mem:20].any()
    k = sim.slots[1]
    assert img[: sim.length[k], 20 + 10: 20 + 10 + sim.demand[k][0]].all()      # slot 1, resource 0
    backlog_col = (20 + 10 * 10) * 2
    assert img[:, backlog_col: backlog_col + 3].sum() == len(sim.backlog)
    assert np.array_equal(img, image(sim.observe(), spec, sim.t - sim.last_arrival))


def test_baselines_choose_as_deeprm_agents_do():
    sim = DeepRMSimulation(DeepRMConfig(job_rate=1.0, simu_len=12), seed=3)
    for _ in range(10):
        sim.advance()
    obs = sim.observe()
    slots = slot_asks(obs, 10)
    fitting = [a for a in slots if a is not None and a.resource.fits_in(obs.node.unallocated)]
    first = create("sjf").schedule(obs).assignments[0].ask_id
    assert first == min(fitting, key=lambda a: a.job.expected_runtime_ms).ask_id
    free = obs.node.unallocated
    dot = lambda a: a.resource.memory_mb / 1024 * free.memory_mb / 1024 + a.resource.vcores * free.vcores
    assert create("packer").schedule(obs).assignments[0].ask_id == max(fitting, key=dot).ask_id
    rnd = create("deeprm-random")
    assert rnd.schedule(obs) == rnd.schedule(obs)                       # pure: same request, same answer
    picks = set()
    for i in range(50):
        obs.request_id = f"r{i}"
        d = rnd.schedule(obs)
        picks.update(a.ask_id for a in d.assignments)
        assert sum(a.count for a in d.assignments) <= len(fitting)
    assert len(picks) > 1


def test_deeprm_ordering_sjf_packer_random():
    sc = get_scenario("deeprm", load=0.75)
    slow = {p: np.mean([e["slowdown"] for e in run_policy(sc, p, 8, 0, progress=False)])
            for p in ("sjf", "packer", "deeprm-random")}
    assert slow["sjf"] < slow["packer"] < slow["deeprm-random"], slow
    assert slow["sjf"] >= 1.0


def test_the_number_of_slots_travels_with_the_observation():
    sc = get_scenario("deeprm", res_slot=10, num_slots=5, job_rate=0.9, simu_len=20)
    sim = DeepRMSimulation(sc.config, seed=4)
    for _ in range(15):
        sim.advance()
    obs = sim.observe()
    assert len(slot_asks(obs)) == 5 and all(a is not None for a in slot_asks(obs))
    assert sim.image().shape == (20, (10 + 10 * 5) * 2 + 3 + 1)
    with pytest.raises(ValueError, match="res_slot"):
        get_scenario("deeprm", res_slot=4)
