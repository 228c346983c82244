"""The multi-cluster emulator's fast paths against its reference: the event loop (compiled when the extension was
built, else inlined Python) against ReferenceMultiClusterSim's one-method-per-event loop, and the routing baselines'
one-reduce mean occupation against one reduce per cluster. Identical means bit for bit: every observation, decision,
event, execution, occupation step and metric."""

import hashlib
import shutil
import sysconfig
from pathlib import Path

import numpy as np
import pytest

import emulator.multicluster.sim as sim_module
from emulator.drivers import make_driver
from emulator.multicluster.sim_reference import ReferenceMultiClusterSim
from emulator.scenario import get_scenario
from policy_engine.routing import mean_occupation, mean_occupations
from policy_engine.types import ClusterState, RouteObservation

# one case per scenario family and local scheduler, with policies that read the history (SF-E, LF-P, MAF) and ones
# that do not (Random, RR); small demand scales make queues and head-of-line blocking common
CASES = [
    ("multicluster-uniform", "sf-e", {}),
    ("multicluster-bernoulli", "random", {}),
    ("multicluster-beta", "lf-p", {"demand_scale": 2.0}),
    ("hetero-elastic-uniform", "maf", {}),
    ("hetero-elastic-beta", "rr", {}),
]
SEEDS = (0, 7, 31)


def make_sim(scenario, path):
    if path == "reference":
        return ReferenceMultiClusterSim(scenario.federation, scenario.pattern, scenario.profile, scenario.n_jobs,
                                        local_scheduler=scenario.local_scheduler, history=scenario.history,
                                        tag=scenario.name)
    sim = scenario.make_sim()
    sim.compiled = path == "compiled"
    return sim


def record(scenario, policy, seed, path):
    """Everything an episode shows: per decision the observation and the decision, every event batch, and at the
    end the execution log, the occupation log, the result and the running sums the environments read."""
    sim = make_sim(scenario, path)
    sim.execution_log = []
    trace = []
    with make_driver(policy) as driver:
        obs = sim.reset(seed)
        while obs is not None:
            events = sim.take_events()
            if events:
                driver.report(events)
            decision = driver.route(obs)
            trace.append((repr(events), obs.time, obs.request_id, [j.job_id for j in obs.jobs],
                          [(c.cluster_id, c.capacity, c.max_capacity, c.current_capacity, c.available,
                            c.missed_deadlines, c.queued_jobs, c.occupation_history.dtype.str,
                            c.occupation_history.tobytes()) for c in obs.clusters],
                          decision.job_index, decision.cluster_id))
            obs = sim.step(decision)
        trace.append(repr(sim.take_events()))
    r = sim.result()
    return {"trace": trace, "executions": sim.execution_log, "occupation": sim.occupation.tobytes(),
            "result": (r.tmdl, r.ratio_delay, r.ratio_standard, r.missed_per_job.tolist(), r.cluster_of_job.tolist(),
                       r.steps, r.decisions, r.ajdr(), r.ajer()),
            "sums": (sim.finished, sim.finished_delay, sim.finished_standard)}


def paths():
    return ["python"] + (["compiled"] if sim_module.COMPILED is not None else [])


@pytest.mark.parametrize("name,policy,params", CASES, ids=[f"{n}-{p}" for n, p, _ in CASES])
def test_fast_event_loops_play_the_reference_episodes(name, policy, params):
    scenario = get_scenario(name, **params)
    for seed in SEEDS:
        want = record(scenario, policy, seed, "reference")
        assert want["result"][6] == scenario.n_jobs and len(want["executions"]) > scenario.n_jobs
        for path in paths():
            got = record(scenario, policy, seed, path)
            for key in want:
                assert got[key] == want[key], f"{path} loop differs from the reference in {key} (seed {seed})"


def test_the_compiled_loop_is_built_from_this_source_where_a_compiler_is():
    """setup.py builds the loop wherever a C compiler is (`pip install -e .` fetches Cython): this guards the speed
    benchmarks/emulator_speed.py measures. A build older than the .pyx is refused (the Python loop runs)."""
    pyx = Path(sim_module.__file__).with_name("_fastloop.pyx")
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if sim_module.COMPILED is None:
        try:
            from emulator.multicluster import _fastloop
        except ImportError:
            if shutil.which(compiler) is None:
                pytest.skip(f"no C compiler ({compiler}): the emulator runs its Python event loop")
            pytest.fail(f"{compiler} is there but emulator/multicluster/_fastloop was not built: pip install -e .")
        pytest.fail(f"the built loop ({_fastloop.__file__}) is older than {pyx.name}: pip install -e .")
    from emulator.multicluster import _fastloop
    assert _fastloop.SOURCE_SHA256 == hashlib.sha256(pyx.read_bytes()).hexdigest()
    assert make_sim(get_scenario("multicluster-uniform"), "compiled").compiled


def test_a_stale_build_is_refused(monkeypatch, tmp_path):
    """A .pyx edited after the build: the loader warns and returns no compiled loop."""
    fake = type("FakeModule", (), {"SOURCE_SHA256": "0" * 64, "run_until_decision": staticmethod(lambda s, r: None)})
    import emulator.multicluster as package
    monkeypatch.setattr(package, "_fastloop", fake, raising=False)
    monkeypatch.setitem(__import__("sys").modules, "emulator.multicluster._fastloop", fake)
    with pytest.warns(RuntimeWarning, match="changed since its extension was built"):
        assert sim_module._load_compiled() is None


def test_reducing_rows_together_gives_each_row_s_own_sum():
    """numpy sums each row of an axis-1 float32 -> float64 reduce as it sums the row alone (pairwise), also where the
    sums are inexact and for strided windows: what mean_occupations relies on."""
    rng = np.random.default_rng(5)
    for trial in range(400):
        c, n = int(rng.integers(1, 12)), int(rng.integers(1, 300))
        width = n + int(rng.integers(0, 40))
        scale = 10.0 ** rng.integers(-20, 20, (c, width)) if trial % 2 else 1.0
        base = (rng.random((c, width)) * scale).astype(np.float32)
        window = base[:, width - n:]
        together = np.add.reduce(window, axis=1, dtype=np.float64)
        alone = np.array([np.add.reduce(window[i], dtype=np.float64) for i in range(c)])
        assert together.tobytes() == alone.tobytes()


@pytest.mark.parametrize("steps", [0, 1, 37, 100, 105, 400])
def test_mean_occupations_equal_per_cluster_means(steps):
    rng = np.random.default_rng(steps)
    occ = rng.random((4, steps + 3)).astype(np.float32)
    window = occ[:, 3:]
    clusters = [ClusterState(i + 1, 10 * (i + 1), 10 * (i + 1), 10 * (i + 1), i, 0.0, window[i]) for i in range(4)]
    alone = [mean_occupation(c) for c in clusters]
    together = mean_occupations(RouteObservation([], clusters, occupation=window))
    assert together == alone
    assert mean_occupations(RouteObservation([], clusters)) == alone
    # an array that does not match the clusters is not used
    assert mean_occupations(RouteObservation([], clusters[:3], occupation=window)) == alone[:3]
