"""DSRAP: simulator accounting, the approaches' decisions on hand-built states, the PettingZoo API test,
and identical runs in-process and over gRPC."""

import json

import numpy as np
import pytest

from emulator.cli import main as emulator_main
from emulator.drivers import make_driver
from algorithms.dsrap.config import DsrapConfig
from algorithms.dsrap.sim import DsrapSim
from emulator.scenario import get_scenario
from algorithms.dsrap.rules import (
    VOID,
    CounterRandom,
    DsrapLearner,
    DsrapTables,
    FalSettings,
    Learning1Step,
    best_first,
    bits_actions,
    decide,
    learning1,
    learning2,
    limit,
    limit_rows,
)
from policy_engine.artifact import ArtifactError, save_artifact
from policy_engine.policy import create
from policy_engine.engine import clip_manager
from policy_engine.types import ManagerView, RouteDecision, RouteObservation


def view(cpu_free, net_free, tasks, neighbors=(2, 3), cluster_id=1, limit_=40, cap=150.0):
    """tasks: (type, cpu, net, utility, wait)"""
    t = np.asarray(tasks, dtype=np.float64).reshape(-1, 5)
    n = len(cpu_free)
    return ManagerView(
        cluster_id=cluster_id, cpu_free=np.asarray(cpu_free, float), net_free=np.asarray(net_free, float),
        cpu_capacity=np.full(n, cap), net_capacity=np.full(n, cap), neighbors=np.asarray(neighbors, np.int64),
        delays=np.ones(len(neighbors), np.int64), task_id=np.arange(len(t), dtype=np.int64),
        task_type=t[:, 0].astype(np.int64), task_cpu=t[:, 1], task_net=t[:, 2], task_utility=t[:, 3],
        task_wait=t[:, 4].astype(np.int64), task_hops=np.zeros(len(t), np.int64), transfer_limit=limit_)


class Recorder:
    """A driver that allocates nothing and forwards nothing, or everything to the first neighbour."""

    capabilities = frozenset()

    def __init__(self, forward=False):
        self.forward = forward
        self.calls = 0

    def route(self, obs):
        self.calls += 1
        v = obs.manager
        nxt = np.full(v.task_id.size, int(v.neighbors[0]) if self.forward and v.neighbors.size else -1)
        return RouteDecision(0, v.cluster_id, np.full(v.task_id.size, -1), nxt)


# ---------------------------------------------------------------- simulator accounting


def test_workload_follows_the_paper_rates_and_light_is_half_of_heavy():
    for load, scale in (("heavy", 1.0), ("light", 0.5)):
        sim = DsrapSim(DsrapConfig(load=load, steps=4000, window=1000))
        sim.reset(3)
        per_type = np.bincount(sim.ttype, minlength=4) / 4000
        assert per_type == pytest.approx(np.array([27, 11, 11, 6]) * scale, rel=0.05)
        demanding = sim.ttype == 3
        assert sim.cpu[demanding].mean() == pytest.approx(47, rel=0.05)
        assert sim.netd[demanding].mean() == pytest.approx(43, rel=0.05)
        assert sim.util[demanding].mean() == pytest.approx(25, rel=0.05)
        assert sim.service[demanding].mean() == pytest.approx(50, rel=0.08)
    net = DsrapSim(DsrapConfig()).net
    assert net.n_nodes == 256 and net.cpu_capacity.min() >= 50 and net.cpu_capacity.max() <= 150
    assert list(net.neighbors[5]) == [2, 6, 10, 16] and len(net.neighbors[1]) == 2


def test_tasks_nobody_allocates_are_abandoned_after_the_maximum_wait():
    cfg = DsrapConfig(steps=40, window=40)
    sim = DsrapSim(cfg)
    sim.reset(0)
    while not sim.done:
        sim.step(Recorder().route)
    r = sim.result()
    created_early = np.bincount(sim.ttype[sim.deadline < 40 - 1], minlength=4)
    assert sum(r.abandoned.values()) == created_early.sum()      # everything that had to expire did, per type
    assert list(r.abandoned.values()) == created_early.tolist()
    assert r.utility_rate == 0 and r.cpu == 0 and sum(r.allocated.values()) == 0


def test_forwarded_tasks_arrive_one_step_later_with_one_more_hop_and_the_limit_holds():
    sim = DsrapSim(DsrapConfig(steps=3, window=3))
    sim.reset(0)
    sim._begin_step()
    held = sim.queue[5].copy()
    assert held.size > 0
    rec = Recorder(forward=True)
    sim.apply(5, rec.route(sim.observation(5)))
    moved = held[: min(held.size, 40)]
    assert sim.hops[moved].tolist() == [1] * moved.size
    sim._end_step()
    sim._begin_step()
    assert set(moved.tolist()) <= set(sim.queue[2].tolist())       # neighbour 2 of cluster 5 holds them now
    # a decision past the transfer limit is cut by the simulator itself
    v = sim.observation(2).manager
    sim.apply(2, RouteDecision(0, 2, np.full(v.task_id.size, -1), np.full(v.task_id.size, 1)))
    assert sim.rejected == max(0, v.task_id.size - 40)


def test_resources_and_utility_are_conserved_over_an_episode():
    sc = get_scenario("dsrap-heavy", steps=300, window=100)
    sim = sc.make_sim(False)
    sim.reset(1)
    with make_driver("greedy") as d:
        while not sim.done:
            sim.step(d.route)
    running = [(n, t) for end, (nodes, tids) in sim.finishing.items() for n, t in zip(nodes, tids)]
    used_cpu = np.zeros(sim.net.n_nodes)
    np.add.at(used_cpu, [n for n, _ in running], sim.cpu[[t for _, t in running]])
    assert np.allclose(sim.cpu_free + used_cpu, sim.net.cpu_capacity)
    assert sim.running_util == pytest.approx(sim.util[[t for _, t in running]].sum())
    assert (sim.cpu_free >= 0).all() and (sim.net_free >= 0).all()
    queued = sum(q.size for q in sim.queue.values())
    transit = sum(x.size for lst in sim.transit.values() for _, x in lst)
    created = int(sum(np.sum(e - s) for s, e in zip(*(r[:300] for r in sim._arrival_ranges))))
    assert sim.allocated_all.sum() + sim.abandoned_all.sum() + queued + transit == created
    assert sim.rejected == 0


# ---------------------------------------------------------------- the approaches on hand-built states


def test_best_first_allocates_highest_utility_first_on_the_best_fitting_node():
    v = view([50, 30], [50, 30], [(0, 20, 20, 1, 5), (3, 30, 30, 25, 5), (2, 25, 10, 5, 5)])
    # demanding (u 25) first: fits both nodes, best fit is node 1 (nothing left over); then compute-intense
    # (u 5) on node 0, then ordinary no longer fits (node 0 has 25 CPU, 40 network left: it does fit)
    assert best_first(v).tolist() == [0, 1, 0]
    v = view([40], [40], [(0, 20, 20, 1, 5), (3, 35, 35, 25, 5)])
    assert best_first(v).tolist() == [-1, 0]


def test_limit_projects_onto_the_simplex_with_a_floor():
    x = limit(np.array([1.4, -0.2, 0.3]), np.array([0.02, 0.02, 0.01]))
    assert x.sum() == pytest.approx(1.0) and (x >= [0.02, 0.02, 0.01]).all()
    assert x == pytest.approx([0.97, 0.02, 0.01])                        # all spare mass to the best
    y = limit(np.array([0.5, 0.45, 0.05]), np.array([0.1, 0.1, 0.1]))
    assert y == pytest.approx([0.475, 0.425, 0.1])
    assert limit(np.array([0.5, 0.5]), np.array([0.1, 0.1])) == pytest.approx([0.5, 0.5])
    rows = np.random.default_rng(0).normal(size=(50, 4)) * 2     # Learning2's batched projection: the same points
    floor = np.full(4, 0.01)
    assert limit_rows(rows, floor) == pytest.approx(np.stack([limit(r, floor) for r in rows]), abs=1e-12)


def test_learning1_starts_greedy_and_follows_a_learned_void_preference():
    tables = DsrapTables(FalSettings(greedy_below=0.0))
    v = view([60, 60], [60, 60], [(0, 10, 10, 1, 5), (3, 40, 40, 25, 5)], cap=60.0)
    picks = [learning1(v, tables, CounterRandom(k))[1][0].action for k in range(200)]
    assert picks.count(3) > 180            # unseen state: the demanding task, all but the exploration floor
    # teach the state that only the ordinary task is on offer: VOID is worth more than allocating it
    v2 = view([60, 60], [60, 60], [(0, 10, 10, 1, 5)], cap=60.0)
    _, trace = learning1(v2, tables, CounterRandom(1))
    key = trace[0].key
    learner = DsrapLearner(tables, "learning1", "random")
    mt = tables.of(1, 2)
    for _ in range(300):
        learner._update1(mt, Learning1Step(key, VOID, 0.0), 5.0, 0.1)
        learner._update1(mt, Learning1Step(key, 0, 1.0), 0.0, 0.1)
    assert mt.pi1[key][VOID] > 0.9 and bits_actions(key[0]) == [0, VOID]
    voids = sum(learning1(v2, tables, CounterRandom(k))[1][0].action == VOID for k in range(100))
    assert voids > 85


def test_learning2_and_eq6_send_tasks_where_they_will_be_allocated():
    tables = DsrapTables(FalSettings())
    learner = DsrapLearner(tables, "best-first", "learning2")
    learner._stream = "s:0"                  # this episode's tables (a new stream would start fresh ones)
    # neighbour 2 has room, neighbour 3 is full
    tables.of(2, 1)
    tables.of(3, 1)
    tables.views[2] = view([100], [100], [], neighbors=(1,), cluster_id=2)
    tables.views[3] = view([5], [5], [], neighbors=(1,), cluster_id=3)
    one = (np.array([1]), np.array([20.0]), np.array([20.0]))
    assert learner.rewards(3, *one, np.array([3])) == [0.0]                 # no room for it, no future yet
    assert learner.rewards(2, *one, np.array([-1])) == [0.0]                # expires on the way
    assert learner.rewards(2, *one, np.array([3])) == pytest.approx([0.5])  # no experience yet: (0+1)/(0+2)
    v = view([5], [5], [(1, 20, 20, 6, 4)] * 30, neighbors=(2, 3))
    for step in range(40):
        obs = RouteObservation([], [], float(step), f"s:0:{step}:1", manager=v)
        learner.on_route(obs, decide(v, "best-first", "learning2", tables, CounterRandom(step)))
        tables.views[2] = view([100], [100], [], neighbors=(1,), cluster_id=2)
        tables.views[3] = view([5], [5], [], neighbors=(1,), cluster_id=3)
    mi = tables.managers[1]
    assert mi.q2[1, 4, 0] > 0.4 and mi.q2[1, 4, 1] < 0.05
    assert mi.pi2[1, 4, 0] > 0.95
    sent = learning2(v, np.arange(30), tables, CounterRandom(7))
    assert (sent == 2).sum() >= 27
    # backward exploration: neighbour 2 learnt what sending such a task back to 1 is worth
    assert tables.managers[2].q2[1, 3, 0] == 0.0                            # 1 is full: p_1 = 0, no future


def test_bdl_eq6_takes_p_j_from_eq7_or_from_the_observed_allocation_rate():
    """Eq. 7 weighs pi1's chance of picking the type next: 0.02 for an IO task offered beside a demanding one,
    although j allocates such tasks 3 times in 4; `p_allocation=observed` uses that rate, as SDL does."""
    for mode, expected in (("eq7", 0.02), ("observed", (3 + 1) / (4 + 2))):
        tables = DsrapTables(FalSettings(p_allocation=mode, eps_type=0.02))
        learner = DsrapLearner(tables, "learning1", "learning2")
        mt = tables.of(2, 1)
        mt.seen[1], mt.taken[1] = 4, 3
        mt.state_counts[1][0b1010] = 5                       # IO was on offer beside a demanding task
        tables.views[2] = view([100], [100], [], neighbors=(1,), cluster_id=2)
        r = learner.rewards(2, np.array([1]), np.array([20.0]), np.array([20.0]), np.array([3]))
        assert r == pytest.approx([expected])


def test_learned_tables_are_a_checked_artifact_that_later_episodes_start_from(tmp_path):
    sc = get_scenario("dsrap-heavy", steps=40, window=20)
    with make_driver("bdl") as d:
        sc.play(d, 0)
        learned = d.engine.policy.tables.to_tensors()
    assert learned["manager_ids"].tolist() == list(range(1, 17)) and learned["m5.pi1"].shape[1] == 5
    path = tmp_path / "bdl.safetensors"
    save_artifact(path, learned, {"policy": "bdl", "settings": FalSettings(eps_void=0.005).as_dict(), "seed": 0})
    warm = create("bdl", model=str(path))
    assert warm.model_checksum and warm.settings.eps_void == 0.005            # the artifact's settings
    assert create("bdl", model=str(path), eps_void=0.02).settings.eps_void == 0.02
    with make_driver("bdl", model=str(path)) as d:                           # an episode changes the tables ...
        sc.play(d, 1)
        tables = d.engine.policy.tables
        assert not np.array_equal(tables.to_tensors()["m5.q2"], learned["m5.q2"])
        tables.reset()                                                       # ... the next starts from the file
        again = tables.to_tensors()
    assert sorted(again) == sorted(learned) and all(np.array_equal(again[k], learned[k]) for k in learned)
    with pytest.raises(ArtifactError, match="for policy 'bdl'"):
        create("sdl", model=str(path))
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    (tmp_path / "bad.safetensors").write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="checksum"):
        create("bdl", model=str(tmp_path / "bad.safetensors"))


def test_engine_clips_what_a_manager_decision_cannot_do():
    v = view([30], [30], [(0, 20, 20, 1, 5), (0, 20, 20, 1, 5), (0, 5, 5, 1, 5), (0, 5, 5, 1, 5)], limit_=1)
    d = RouteDecision(0, 1, np.array([0, 0, -1, 5]), np.array([-1, 2, 9, 3]))
    checked, cut = clip_manager(RouteObservation([], [], 0.0, "x", manager=v), d)
    # task 1 does not fit after task 0, task 3 names no node (2 cut); task 2 names no neighbour (1); of the two
    # valid forwards (tasks 1 and 3) the transfer limit keeps the first (1)
    assert checked.task_node.tolist() == [0, -1, -1, -1]
    assert checked.task_next.tolist() == [-1, 2, -1, -1]
    assert cut == 4


# ---------------------------------------------------------------- PettingZoo


def test_pettingzoo_parallel_api_and_an_independent_learner():
    from pettingzoo.test import parallel_api_test

    from algorithms.dsrap.env import parallel_env
    from algorithms.dsrap.iql import IndependentQLearning, IQLConfig

    parallel_api_test(parallel_env(steps=40), num_cycles=60)
    env = parallel_env(steps=60)
    assert env.metadata["name"] == "yarnrl/dsrap_v0" and len(env.possible_agents) == 16
    iql = IndependentQLearning(env, IQLConfig(episodes=2, seed=3))
    curve = iql.train()
    assert len(curve) == 2 and all(c > 0 for c in curve)
    assert sum(int((q != 0).sum()) for q in iql.q.values()) > 16       # every agent's table learnt something
    again = IndependentQLearning(parallel_env(steps=60), IQLConfig(episodes=2, seed=3)).train()
    assert again == curve                                             # seeded: reproducible


def test_env_reward_sums_to_the_system_utility_rate():
    from algorithms.dsrap.env import parallel_env

    env = parallel_env(steps=30)
    env.reset(options={"episode": 2})
    for _ in range(10):
        _, rewards, _, _, infos = env.step({a: 0 for a in env.agents})
    system = next(iter(infos.values()))["utility_rate"]
    assert system > 0 and sum(rewards.values()) == pytest.approx(system)


# ---------------------------------------------------------------- protocol


@pytest.mark.parametrize("policy", ["bdl", "centralized"])
def test_same_metrics_in_process_and_over_grpc(policy):
    sc = get_scenario("dsrap-heavy", steps=60, window=30)
    runs = {}
    for mode in (None, "spawn"):
        with make_driver(policy, remote=mode) as d:
            assert ("dsrap-centralized" in d.capabilities) == (policy == "centralized")
            runs[mode] = [sc.play(d, seed) for seed in (0, 1)]
            if mode is None and policy == "bdl":
                assert d.engine.learner.errors == 0 and len(d.engine.learner.tables.managers) == 16
    for a, b in zip(runs[None], runs["spawn"]):
        assert a.metrics() == b.metrics() and a.curve == b.curve
    assert runs[None][0].utility_rate > 0 and runs[None][0].rejected == 0


def test_cli_compare_json_records_the_chosen_values(capsys):
    emulator_main(["compare", "--scenario", "dsrap-light", "--param", "steps=80", "--param", "window=40",
                   "--policies", "greedy,sdl", "--episodes", "1", "--json", "--no-progress"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["params"]["load"] == "light" and out["params"]["max_wait"] == 10
    assert out["params"]["transfer_limit"] == 40 and out["params"]["nodes"]["4"] == 21
    assert out["params"]["task_types"]["demanding"] == {"cpu": 47, "network": 43, "utility_rate": 25,
                                                        "service_time": 50}
    assert set(out["policies"]["sdl"]) >= {"utility_rate", "cpu", "network", "hops", "abandoned_demanding"}


def test_benchmark_single_seed_runs_joined_are_the_compare_commands_episodes(capsys, tmp_path):
    """benchmarks/dsrap_tables.py run one seed per process and joined with --combine gives the episodes of
    `emulator compare --episodes 2` (seeds 0 and 1), number for number."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "dsrap_tables.py"
    spec = importlib.util.spec_from_file_location("dsrap_tables", path)
    tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tables)
    common = ["--loads", "heavy", "--approaches", "bdl", "--steps", "30", "--window", "20", "--models", ""]
    for k in (0, 1):
        tables.main([*common, "--seed", str(k), "--out", str(tmp_path / f"s{k}")])
    tables.main([*common, "--episodes", "2", "--out", str(tmp_path / "all"),
                 "--combine", f"{tmp_path / 's1'},{tmp_path / 's0'}", "--saved-only"])
    capsys.readouterr()
    joined = json.loads((tmp_path / "all" / "summary.json").read_text())["summary"]["heavy"]["bdl"]
    emulator_main(["compare", "--scenario", "dsrap-heavy", "--param", "steps=30", "--param", "window=20",
                   "--policies", "bdl", "--episodes", "2", "--json", "--no-progress"])
    compare = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["policies"]["bdl"]
    assert joined["episodes"] == 2
    for key in ("utility_rate", "cpu", "hops", "abandoned_total"):
        assert joined[key]["mean"] == pytest.approx(compare[key]["mean"]) and \
            joined[key]["std"] == pytest.approx(compare[key]["std"]), key


# ---------------------------------------------------------------- Learning1 holding resources back (issue 28)


def holdback_scenario(steps):
    """One manager, two nodes of 60 CPU / 60 network; ordinary tasks (9 / 8, u 1, 20 steps) arrive at rate 1 per
    step and demanding ones (47 / 43, u 25, 50 steps) at 0.3. Best-first keeps both nodes busy with ordinary tasks
    and a demanding task rarely fits; holding ordinary tasks back lets each node run a demanding one (about 52 a
    step against best-first's 18)."""
    from algorithms.dsrap.scenario import DsrapScenario

    return DsrapScenario("dsrap-holdback", DsrapConfig(
        load="heavy", steps=steps, window=steps // 2, nodes={1: 2}, links=(), capacity_range=(60, 60),
        heavy_arrivals={1: (1.0, 0.0, 0.0, 0.3)}))


def play_holdback(policy, steps=2000, **options):
    sc = holdback_scenario(steps)
    with make_driver(policy, options=options) as d:
        result = sc.play(d, 1)
        return result, d.engine.policy


def test_learning1_learns_to_hold_resources_back_for_higher_utility_tasks():
    greedy, _ = play_holdback("greedy")
    fdl, policy = play_holdback("fdl")
    assert greedy.utility_rate < 25 and fdl.utility_rate > 2 * greedy.utility_rate
    # it gets there by abandoning ordinary tasks and allocating demanding ones
    assert fdl.abandoned["ordinary"] > 1.5 * greedy.abandoned["ordinary"]
    assert fdl.allocated["demanding"] > 2 * greedy.allocated["demanding"]
    # in the states where only ordinary tasks can be allocated, the learned policy mostly picks VOID_TASK
    m = policy.tables.managers[1]
    only_ordinary = [k for k in m.pi1 if k[0] == 1]
    assert only_ordinary and np.mean([m.pi1[k][VOID] for k in only_ordinary]) > 0.5
    # the diagnosis: with Q(VOID) starting at 0 (as before), FAL never tries holding back and stays best-first
    stuck, _ = play_holdback("fdl", void_init=0.0)
    assert stuck.utility_rate < 1.2 * greedy.utility_rate


def test_learning1_abandons_the_low_utility_task_when_a_high_utility_one_needs_the_node():
    """After learning on the hold-back workload: node 0 runs a demanding and an ordinary task (4 / 9 free), node 1
    two ordinary ones (42 / 44 free); an ordinary task on offer fits only node 1. The manager leaves it, so node 1
    can take a demanding task when one of its ordinary tasks ends; a demanding task that fits is allocated."""
    _, policy = play_holdback("fdl")
    tables = policy.tables
    v = view([4, 42], [9, 44], [(0, 9, 8, 1, 10)], neighbors=(), cap=60.0)
    picks = [learning1(v, tables, CounterRandom(k))[1][0].action for k in range(200)]
    assert picks.count(VOID) > 150
    fits = view([4, 49], [9, 51], [(0, 9, 8, 1, 10), (3, 47, 43, 25, 10)], neighbors=(), cap=60.0)
    picks = [learning1(fits, tables, CounterRandom(k))[0][1] for k in range(200)]
    assert sum(p == 1 for p in picks) > 150                # the demanding task goes on node 1


def test_dsrap_training_is_seeded_saves_a_model_and_resumes_bit_identically(tmp_path):
    from algorithms.dsrap.train import train_dsrap
    from policy_engine.artifact import load_artifact

    sc = holdback_scenario(300)
    a = train_dsrap(sc, 2, 3, tmp_path / "a", progress=False, options={"approach": "fdl"})
    b = train_dsrap(sc, 1, 3, tmp_path / "b", progress=False, options={"approach": "fdl"})
    b = train_dsrap(sc, 2, 3, tmp_path / "b", resume=True, progress=False, options={"approach": "fdl"})
    ta, ma = load_artifact(tmp_path / "a" / "model.safetensors", policy="fdl")
    tb, mb = load_artifact(tmp_path / "b" / "model.safetensors", policy="fdl")
    assert ma["checksum"] == mb["checksum"] and a["utility_rate"] == b["utility_rate"]
    assert [e["workload_seed"] for e in ma["episodes"]] == [10_300, 10_301]      # never an evaluation seed
    assert ma["settings"]["void_init"] > 0 and ma["seed"] == 3 and ma["code_version"]
    assert (tmp_path / "a" / "learning-curve.png").stat().st_size > 0
    c = train_dsrap(sc, 2, 4, tmp_path / "c", progress=False, options={"approach": "fdl"})
    assert load_artifact(tmp_path / "c" / "model.safetensors")[1]["checksum"] != ma["checksum"]
    assert create("fdl", model=str(tmp_path / "a" / "model.safetensors")).tables.initial is not None
    with pytest.raises(ValueError, match="other settings"):
        train_dsrap(sc, 3, 3, tmp_path / "a", resume=True, progress=False, options={"approach": "fdl", "eps_void": 0.1})


def test_emulator_train_dsrap_prints_one_json_line(capsys, tmp_path):
    assert emulator_main(["train", "--scenario", "dsrap-heavy", "--algo", "dsrap", "--param", "steps=20",
                          "--param", "window=10", "--episodes", "1", "--seed", "0", "--set", "approach=bdl",
                          "--out", str(tmp_path), "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["approach"] == "bdl" and out["steps_total"] == 20
    assert create("bdl", model=out["model"]).settings.void_init > 0


def test_learning1_options_reward_discount_step_size_and_untried_actions():
    v = view([60, 60], [60, 60], [(0, 9, 8, 2, 5), (3, 40, 40, 25, 5)], cap=60.0)
    s = FalSettings(greedy_below=0.0, reward1="utility")
    _, trace = learning1(v, DsrapTables(s), CounterRandom(0))
    assert [(st.action, st.reward) for st in trace][:2] == [(3, 25 * 50.0), (0, 2 * 20.0)]   # u x mean service time
    for discount, expect in (("decision", 0.5 * 10.0), ("step", 10.0)):
        tables = DsrapTables(FalSettings(alpha1=1.0, gamma1=0.5, discount1=discount, void_init=0.0))
        learner, mt = DsrapLearner(tables, "learning1", "random"), tables.of(1, 2)
        nxt = Learning1Step((1, (0,) * 9), 0, 1.0, t=4.0)
        mt.q1[nxt.key], mt.pi1[nxt.key] = np.array([10.0, 0, 0, 0, 0]), np.array([1.0, 0, 0, 0, 0])
        cur = Learning1Step((9, (0,) * 9), 3, 0.0, t=4.0)       # two picks in the same time step
        learner._learn1(mt, [cur, nxt], 0.0)
        assert mt.q1[cur.key][3] == pytest.approx(expect)
    # max(alpha1, 1/n): an action's first update takes the whole sample; untried actions get no PGA push
    tables = DsrapTables(FalSettings(alpha1_schedule="visits", pga_untried="neutral", void_init=0.0))
    learner, mt = DsrapLearner(tables, "learning1", "random"), tables.of(1, 2)
    key = (1, (0,) * 9)
    learner._update1(mt, Learning1Step(key, VOID, 0.0), 7.0, 0.1)
    assert mt.q1[key][VOID] == pytest.approx(7.0) and mt.pi1[key][0] == pytest.approx(1 - 0.002)
