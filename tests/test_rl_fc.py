"""RL-FC: the learner's pieces (Eq. 1-2 values, ε schedule, replay buffer, outcome bookkeeping), the model artifact,
and the served policy (in-process and behind a real `policy-engine serve`)."""

from __future__ import annotations

import numpy as np
import pytest

from algorithms.rl_fc.train import (
    EpisodeLog,
    ExplorationPolicy,
    ReplayBuffer,
    RlFcConfig,
    action_values,
    epsilon1,
)
from policy_engine.artifact import ArtifactError, save_artifact
from policy_engine.features.multicluster import rlfc_states
from algorithms.rl_fc.policy import RlFcPolicy, ValueNetwork
from policy_engine.types import ClusterState, DeadlineMissed, JobCategory, JobFinished, RouteJob, RouteObservation

CAPACITIES = [500, 800, 1200, 1300, 1900]


# ---------------------------------------------------------------- Eq. 1-2


def test_action_values_hand_worked_example():
    cfg = RlFcConfig()  # λ = 1, γ = 0.02, η = 0.1
    misses = [5, 10, 20, 30, 50, 60]  # times of every missed deadline in the federation
    values = action_values(
        time_critical=[True, False, True],
        deploy_time=[10, 0, 55],
        finish_time=[50, 100, 58],
        own_missed=[2, 0, 0],
        delay_ratio=[1.5, 1.2, 1.0],
        miss_times=misses, cfg=cfg)
    # A: time-critical, 2 own misses, misses in (10, 50] = {20, 30, 50}: -1*2 - 0.02*3 - 0.1*1.5 = -2.21
    # B: regular (Eq. 2, no own term), misses in (0, 100] = all 6:       -0.02*6 - 0.1*1.2       = -0.24
    # C: streaming, no miss in (55, 58]:                                 -0.1*1.0                = -0.10
    np.testing.assert_allclose(values, [-2.21, -0.24, -0.10], atol=1e-12)


def test_action_values_follow_the_weights():
    cfg = RlFcConfig(lam=0.0, gamma=1.0, eta=0.0)
    v = action_values([True], [0], [10], [7], [3.0], [1, 2, 11], cfg)
    assert v.tolist() == [-2.0]  # only the 2 misses inside (0, 10] count
    v = action_values([True], [0], [10], [7], [3.0], [], RlFcConfig(lam=1.0, gamma=0.0, eta=0.0))
    assert v.tolist() == [-7.0]


# ---------------------------------------------------------------- ε-greedy (Eq. 3)


def test_epsilon_schedule_matches_the_paper():
    cfg = RlFcConfig()  # 2000 episodes, linear 0.8 -> 1e-5 over episodes 1..1900
    assert cfg.decay_episodes() == 1900
    assert epsilon1(1, cfg) == pytest.approx(0.8)
    assert epsilon1(1900, cfg) == pytest.approx(1e-5)
    assert epsilon1(2000, cfg) == pytest.approx(1e-5)
    assert epsilon1(951, cfg) == pytest.approx(0.8 + (1e-5 - 0.8) * 950 / 1899)
    eps = [epsilon1(e, cfg) for e in range(1, 1901)]
    assert np.all(np.diff(eps) < 0)


def test_epsilon_schedule_compresses_with_fewer_episodes():
    cfg = RlFcConfig(episodes=20)
    assert cfg.decay_episodes() == 19
    assert epsilon1(10, cfg) == pytest.approx(0.8 + (1e-5 - 0.8) * 9 / 18)
    assert epsilon1(19, cfg) == pytest.approx(1e-5) == epsilon1(20, cfg)


def _obs(n_jobs: int = 3, seed: int = 0) -> RouteObservation:
    rng = np.random.default_rng(seed)
    clusters = [ClusterState(cluster_id=i, capacity=c, max_capacity=c, current_capacity=c,
                             available=int(rng.integers(0, c)),
                             occupation_history=rng.random(int(rng.integers(0, 120))).astype(np.float32),
                             missed_deadlines=int(rng.integers(0, 30)))
                for i, c in enumerate(CAPACITIES)]
    cats = [JobCategory.REGULAR, JobCategory.TIME_CRITICAL, JobCategory.STREAMING]
    jobs = [RouteJob(job_id=f"job-{seed}-{j}", category=cats[j % 3],
                     request_distribution=np.sort(rng.integers(10, 400, 10)),
                     executor_runtime=float(rng.uniform(5, 60)), deadline=float(rng.uniform(20, 90)),
                     duration=float(rng.uniform(50, 900)), submit_time=float(j))
            for j in range(n_jobs)]
    return RouteObservation(jobs=jobs, clusters=clusters, time=float(rng.integers(0, 5000)))


class _Guide:
    def route(self, obs):
        from policy_engine.types import RouteDecision

        return RouteDecision(len(obs.jobs) - 1, obs.clusters[2].cluster_id)


def _explorer(eps1: float, eps2: float, improved: bool = True) -> ExplorationPolicy:
    cfg = RlFcConfig(eps2=eps2, improved_greedy=improved, guide="fifo")
    pol = ExplorationPolicy.__new__(ExplorationPolicy)  # no registry look-up of the guide: a scripted one
    pol.cfg, pol.rng, pol.log, pol.eps1 = cfg, np.random.default_rng(0), EpisodeLog(), eps1
    pol.guide = _Guide() if improved else None
    pol.network = ValueNetwork(_tiny_tensors(seed=3))
    return pol


def test_improved_epsilon_greedy_mixes_random_guide_and_greedy():
    obs = _obs(4)
    greedy = divmod(int(np.argmax(ValueNetwork(_tiny_tensors(seed=3))(rlfc_states(obs)))), 5)
    pol = _explorer(eps1=0.0, eps2=0.5)
    picks = {tuple(_choice(pol, obs)) for _ in range(20)}
    assert picks == {greedy}  # ε1 = 0: always the network's best (job, cluster)
    pol = _explorer(eps1=1.0, eps2=0.0)
    assert {tuple(_choice(pol, obs)) for _ in range(20)} == {(3, 2)}  # ε2 = 0: always the guide
    pol = _explorer(eps1=1.0, eps2=0.5)
    picks = [tuple(_choice(pol, obs)) for _ in range(2000)]
    guide_share = picks.count((3, 2)) / len(picks)
    # half the guide, half uniform over 4 jobs x 5 clusters (1/20 of which is the guide's pair again)
    assert 0.5 + 0.5 / 20 - 0.04 < guide_share < 0.5 + 0.5 / 20 + 0.04
    assert len(set(picks)) == 20
    pol = _explorer(eps1=1.0, eps2=0.5, improved=False)  # ablation: random only
    picks = [tuple(_choice(pol, obs)) for _ in range(2000)]
    assert picks.count((3, 2)) / len(picks) < 0.1


def _choice(pol: ExplorationPolicy, obs: RouteObservation) -> tuple[int, int]:
    d = pol.route(obs)
    return d.job_index, [c.cluster_id for c in obs.clusters].index(d.cluster_id)


# ---------------------------------------------------------------- replay buffer and outcome bookkeeping


def test_replay_buffer_keeps_the_latest_decisions():
    buf = ReplayBuffer(capacity=4, state_dim=2)
    for k in range(3):  # 3 batches of 2 decisions: values 0..5
        v = np.array([2 * k, 2 * k + 1], dtype=np.float32)
        buf.add(np.stack([v, v], axis=1), np.array([k, k]), v)
    assert len(buf) == 4
    assert sorted(buf.values.tolist()) == [2, 3, 4, 5]  # 0 and 1 evicted
    state = buf.state_dict()
    assert state["values"].tolist() == [2, 3, 4, 5]  # oldest first
    copy = ReplayBuffer(capacity=4, state_dim=2)
    copy.load_state_dict(state)
    copy.add(np.full((1, 2), 6, np.float32), np.array([9]), np.array([6], np.float32))
    buf.add(np.full((1, 2), 6, np.float32), np.array([9]), np.array([6], np.float32))
    assert sorted(copy.values.tolist()) == sorted(buf.values.tolist()) == [3, 4, 5, 6]
    s, a, v = buf.sample(3, np.random.default_rng(0))
    assert len(set(v.tolist())) == 3 and set(v.tolist()) <= {3, 4, 5, 6}
    np.testing.assert_array_equal(s[:, 0], v)  # rows stay aligned


def test_replay_buffer_add_larger_than_capacity():
    buf = ReplayBuffer(capacity=3, state_dim=1)
    v = np.arange(5, dtype=np.float32)
    buf.add(v[:, None], np.zeros(5, np.int64), v)
    assert buf.state_dict()["values"].tolist() == [2, 3, 4]


def test_episode_log_turns_reports_into_values():
    log = EpisodeLog()
    obs = _obs(3)
    states = rlfc_states(obs)
    obs.time = 10.0
    log.decided(obs, states, 1, 4)   # job-0-1: time-critical, deployed at t = 10 on cluster index 4
    obs.time = 12.0
    log.decided(obs, states, 0, 0)   # job-0-0: regular, deployed at t = 12

    log.on_event(DeadlineMissed(job_id="job-0-1", cluster_id=4, timestamp_ms=11))
    log.on_event(DeadlineMissed(job_id="other", cluster_id=0, timestamp_ms=15))
    log.on_event(JobFinished(job_id="job-0-1", cluster_id=4, delay_ratio=1.3, missed_deadlines=1, timestamp_ms=20))
    log.on_event(DeadlineMissed(job_id="other", cluster_id=0, timestamp_ms=30))
    # job-0-0 never finishes in this episode: it gets no value
    s, a, v = log.knowledge(RlFcConfig())
    assert a.tolist() == [4]
    np.testing.assert_array_equal(s[0], states[1])
    # own MDL 1, misses in (10, 20] = {11, 15}, delay 1.3
    np.testing.assert_allclose(v, [-1 - 0.02 * 2 - 0.1 * 1.3], rtol=1e-6)


# ---------------------------------------------------------------- artifact and policy


def _tiny_tensors(seed: int = 0, hidden=(16, 8), dim: int = 529, out: int = 5) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = [dim, *hidden, out]
    names = ("hidden1", "hidden2", "output")
    t = {}
    for name, (a, b) in zip(names, zip(sizes, sizes[1:])):
        t[f"{name}.weight"] = rng.normal(0, 1 / np.sqrt(a), (b, a)).astype(np.float32)
        t[f"{name}.bias"] = rng.normal(0, 0.1, b).astype(np.float32)
    return t


def _reference_values(t, states):
    h = np.maximum(states @ t["hidden1.weight"].T + t["hidden1.bias"], 0)
    h = np.maximum(h @ t["hidden2.weight"].T + t["hidden2.bias"], 0)
    return h @ t["output.weight"].T + t["output.bias"]


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "rl-fc.safetensors"
    save_artifact(path, _tiny_tensors(), {"policy": "rl-fc", "scenario": "multicluster-uniform", "seed": 0})
    return path


def test_policy_scores_every_buffered_job_and_picks_the_best(model_file):
    pol = RlFcPolicy(model=model_file)
    assert pol.model_checksum and len(pol.model_checksum) == 64
    for seed in range(5):
        obs = _obs(4, seed)
        q = _reference_values(_tiny_tensors(), rlfc_states(obs))
        np.testing.assert_allclose(pol.values(obs), q, rtol=1e-5, atol=1e-6)
        job, cluster = np.unravel_index(np.argmax(q), q.shape)
        d = pol.route(obs)
        assert (d.job_index, d.cluster_id) == (job, obs.clusters[cluster].cluster_id)


def test_oldest_job_order_routes_the_oldest_job_to_its_best_cluster(model_file, tmp_path):
    from policy_engine.policy import create

    pol = create("rl-fc", model=str(model_file), job_order="oldest")
    assert RlFcPolicy(model=model_file).job_order == "best"          # the paper's, for a model that names none
    picked_other = False
    for seed in range(8):
        obs = _obs(4, seed)
        q = _reference_values(_tiny_tensors(), rlfc_states(obs))
        d = pol.route(obs)
        assert (d.job_index, d.cluster_id) == (0, obs.clusters[int(np.argmax(q[0]))].cluster_id)
        picked_other |= int(np.argmax(q)) // q.shape[1] != 0       # where "best" would have taken another job
    assert picked_other
    # a model trained with job_order=oldest serves that way unless told otherwise
    path = tmp_path / "oldest.safetensors"
    save_artifact(path, _tiny_tensors(), {"policy": "rl-fc", "hyperparameters": {"job_order": "oldest"}})
    assert RlFcPolicy(model=path).job_order == "oldest" and RlFcPolicy(model=path, job_order="best").job_order == "best"
    with pytest.raises(ValueError, match="job_order must be one of best, oldest"):
        create("rl-fc", model=str(model_file), job_order="newest")
    with pytest.raises(ValueError, match="job_order must be one of best, oldest"):
        RlFcConfig.from_options({"job_order": "random"})


def test_oldest_job_order_explores_only_the_oldest_jobs_clusters():
    obs = _obs(4)
    pol = _explorer(eps1=0.0, eps2=0.5)
    pol.cfg = RlFcConfig(eps2=0.5, guide="fifo", job_order="oldest")
    best_c = int(np.argmax(ValueNetwork(_tiny_tensors(seed=3))(rlfc_states(obs))[0]))
    assert {_choice(pol, obs) for _ in range(10)} == {(0, best_c)}
    pol.eps1 = 1.0
    picks = [_choice(pol, obs) for _ in range(500)]
    assert {j for j, _ in picks} == {0} and {c for _, c in picks} == set(range(5))   # random clusters, job 0
    np.testing.assert_array_equal(pol.log.states[-1], rlfc_states(obs)[0])       # learns from job 0's state


def test_policy_refuses_a_model_for_another_cluster_count(tmp_path):
    path = tmp_path / "m.safetensors"
    save_artifact(path, _tiny_tensors(out=4), {"policy": "rl-fc"})
    with pytest.raises(ValueError, match="trained for 4 clusters"):
        RlFcPolicy(model=path).route(_obs())


def test_tampered_artifact_is_refused(model_file):
    data = bytearray(model_file.read_bytes())
    data[-10] ^= 0xFF  # a byte inside the last tensor's data
    model_file.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="checksum mismatch"):
        RlFcPolicy(model=model_file)


def test_truncated_artifact_is_refused(model_file):
    data = model_file.read_bytes()
    model_file.write_bytes(data[: len(data) // 2])
    with pytest.raises(ArtifactError, match="truncated or corrupt"):
        RlFcPolicy(model=model_file)


def test_artifact_for_another_policy_or_missing_tensor_is_refused(tmp_path):
    other = tmp_path / "other.safetensors"
    save_artifact(other, _tiny_tensors(), {"policy": "rl-lsfc"})
    with pytest.raises(ArtifactError, match="for policy 'rl-lsfc'"):
        RlFcPolicy(model=other)
    partial = tmp_path / "partial.safetensors"
    t = _tiny_tensors()
    del t["output.bias"]
    save_artifact(partial, t, {"policy": "rl-fc"})
    with pytest.raises(ArtifactError, match="output.bias"):
        RlFcPolicy(model=partial)


def test_served_policy_gives_the_in_process_decisions(model_file):
    """`policy-engine serve --policy rl-fc --model ...` over real gRPC answers exactly as the in-process policy."""
    from emulator.drivers import InProcessDriver, RemoteDriver
    from policy_engine.cli import start_engine_subprocess

    local = InProcessDriver(RlFcPolicy(model=model_file))
    proc, target = start_engine_subprocess("rl-fc", ["--model", str(model_file)])
    with RemoteDriver(target, expect_policy="rl-fc", process=proc) as remote:
        info = remote.client.info()
        assert info.model_checksum == RlFcPolicy(model=model_file).model_checksum
        for seed in range(30):
            obs = _obs(1 + seed % 6, seed)
            a, b = local.route(obs), remote.route(obs)
            assert (a.job_index, a.cluster_id) == (b.job_index, b.cluster_id)


# ---------------------------------------------------------------- training end to end on the real emulator

TINY = ["--set", "rollout_batch=2", "--set", "hidden=[16,8]", "--set", "train_samples=20", "--set", "minibatch=10", "--set", "buffer_size=300",
        "--set", "eval_every=2", "--set", "eval_episodes=2", "--set", "checkpoint_every=2",
        "--set", "baselines=sf-e,random"]


def _train_cli(out, episodes, *extra):
    """`emulator train` on 40-job Uniform episodes with a tiny network; returns its JSON summary."""
    import contextlib
    import io
    import json

    from emulator.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["train", "--scenario", "multicluster-uniform", "--param", "jobs=40", "--algo", "rl-fc",
                     "--episodes", str(episodes), "--seed", "3", "--out", str(out), "--no-progress", *TINY,
                     *extra]) == 0
    return json.loads(buf.getvalue().strip().splitlines()[-1])


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("rlfc-run")
    return out, _train_cli(out, 4)


def test_tiny_training_run_end_to_end(tiny_run):
    import json

    from emulator.drivers import make_driver
    from emulator.scenario import get_scenario
    from policy_engine.artifact import load_artifact

    out, summary = tiny_run
    assert summary["episodes"] == 4 and summary["scenario"] == "multicluster-uniform"
    for name in ("model.safetensors", "best-model.safetensors", "checkpoint.pt", "learning-curve.json",
                 "learning-curve.png"):
        assert (out / name).stat().st_size > 0, name
    tensors, meta = load_artifact(out / "model.safetensors", policy="rl-fc")
    assert tensors["hidden1.weight"].shape == (16, 529) and tensors["output.weight"].shape == (5, 8)
    assert meta["scenario"] == "multicluster-uniform" and meta["seed"] == 3 and meta["episodes_trained"] == 4
    assert meta["hyperparameters"]["hidden"] == [16, 8] and meta["hyperparameters"]["gamma"] == 0.02
    assert meta["code_version"] and meta["checksum"] == summary["checksum"]
    assert set(meta["baselines_validation"]) == {"sf-e", "random"}
    assert meta["validation"]["tmdl"] == summary["final"]["tmdl"]
    curve = json.loads((out / "learning-curve.json").read_text())
    assert [r["episode"] for r in curve["evaluations"]] == [2, 4]
    rows = curve["episodes"]
    assert [r["episode"] for r in rows] == [1, 2, 3, 4]
    assert rows[0]["eps1"] == pytest.approx(0.8) and rows[-1]["eps1"] == pytest.approx(1e-5)
    # 40 jobs: every decision is valued once its job finished; a training pass once 20 are buffered
    assert all(r["decisions"] == 40 and r["valued"] == 40 for r in rows)
    assert rows[0]["mean_value"] < 0 and all(r["loss"] is not None for r in rows)
    # the trained model is a working `rl-fc` policy
    with make_driver("rl-fc", model=str(out / "model.safetensors")) as d:
        m = get_scenario("multicluster-uniform", jobs=40).run_episode(d, 0)
    assert m["tmdl"] >= 0 and m["ajdr"] >= 0
    # without --resume an existing run is not overwritten
    with pytest.raises(SystemExit, match="--resume"):
        _train_cli(out, 4)


def test_resume_continues_exactly_where_the_run_stopped(tiny_run, tmp_path, monkeypatch):
    from algorithms.rl_fc import train as rl_fc
    from policy_engine.artifact import load_artifact

    straight_dir, straight = tiny_run
    learn = rl_fc.RlFcTrainer.learn

    def killed_after_two(self, played):
        if self.episode == 2:
            raise KeyboardInterrupt  # the process dies after the checkpoint of episode 2
        return learn(self, played)

    monkeypatch.setattr(rl_fc.RlFcTrainer, "learn", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        _train_cli(tmp_path, 4)
    monkeypatch.setattr(rl_fc.RlFcTrainer, "learn", learn)
    with pytest.raises(SystemExit, match="other hyper-parameters"):
        _train_cli(tmp_path, 4, "--resume", "--set", "lr=0.5")
    resumed = _train_cli(tmp_path, 4, "--resume")
    assert resumed["episodes"] == 4
    a, _ = load_artifact(straight_dir / "model.safetensors")
    b, _ = load_artifact(tmp_path / "model.safetensors")
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    assert resumed["final"] == straight["final"]


def test_remote_episodes_match_in_process(tiny_run):
    """Whole emulator episodes with `rl-fc` behind `policy-engine serve` give the in-process metrics."""
    from emulator.evaluate import compare
    from emulator.scenario import get_scenario

    out, _ = tiny_run
    scenario = get_scenario("multicluster-beta", jobs=60)
    models = {"rl-fc": str(out / "model.safetensors")}
    local = compare(scenario, ["rl-fc"], 2, 5, models=models, progress=False)
    remote = compare(scenario, ["rl-fc"], 2, 5, models=models, remote="spawn", progress=False)
    assert local["policies"] == remote["policies"]


def test_two_worker_processes_and_a_resume_train_the_same_model(tiny_run, tmp_path, monkeypatch):
    """--workers 2 plays the episodes in two processes: the same seed gives the same model as in one process,
    also when the run is killed and resumed with another worker count."""
    import json

    from algorithms.rl_fc import train as rl_fc
    from policy_engine.artifact import load_artifact

    straight_dir, straight = tiny_run
    a, _ = load_artifact(straight_dir / "model.safetensors")
    two = _train_cli(tmp_path / "two", 4, "--workers", "2")
    assert two["rollouts"] == {"workers": 2, "ray": None} and straight["rollouts"] == {"workers": 1, "ray": None}
    learn = rl_fc.RlFcTrainer.learn

    def killed_after_two(self, played):
        if self.episode == 2:
            raise KeyboardInterrupt
        return learn(self, played)

    monkeypatch.setattr(rl_fc.RlFcTrainer, "learn", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        _train_cli(tmp_path / "resumed", 4, "--workers", "2")
    monkeypatch.setattr(rl_fc.RlFcTrainer, "learn", learn)
    resumed = _train_cli(tmp_path / "resumed", 4, "--resume", "--workers", "3")
    for run, summary in (("two", two), ("resumed", resumed)):
        b, _ = load_artifact(tmp_path / run / "model.safetensors")
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=f"{run}: {k}")
        assert summary["final"] == straight["final"], run

    def rows(d):
        return [(r["episode"], r["tmdl"], r["loss"]) for r in json.loads((d / "learning-curve.json").read_text())
                ["episodes"]]

    assert rows(tmp_path / "two") == rows(straight_dir) == rows(tmp_path / "resumed")


def test_domain_randomisation_draws_seeded_workloads_within_the_ranges(tmp_path):
    """demand_scales / rate_scales: every training episode plays a workload drawn from the ranges, the same one for
    the same (seed, episode); validation stays on the scenario's own workload."""
    import json

    from emulator.scenario import get_scenario
    from emulator.scenarios.multicluster import rate_scaled, varied
    from policy_engine.policy import OptionError

    cfg = RlFcConfig.from_options({"demand_scales": "0.7,1.3", "rate_scales": "[0.8,1.25]"})
    assert cfg.demand_scales == (0.7, 1.3) and cfg.rate_scales == (0.8, 1.25) and cfg.randomised()
    draws = [cfg.draw_workload(3, ep) for ep in range(1, 41)]
    assert draws == [cfg.draw_workload(3, ep) for ep in range(1, 41)] != [cfg.draw_workload(4, ep)
                                                                          for ep in range(1, 41)]
    d, r = np.array(draws).T
    assert 0.7 <= d.min() < 0.8 and 1.2 < d.max() <= 1.3 and 0.8 <= r.min() < 0.9 and 1.15 < r.max() <= 1.25
    assert RlFcConfig().draw_workload(3, 1) == (1.0, 1.0) and not RlFcConfig().randomised()
    for bad in ("1.3,0.7", "0,1", "1", "0.5,1,2"):
        with pytest.raises(OptionError, match="demand_scales takes a range"):
            RlFcConfig.from_options({"demand_scales": bad})
    # the varied workloads: more frequent arrivals, larger requests; 1.0 leaves the scenario as it is
    base = get_scenario("multicluster-uniform")
    assert varied(base, 1.0, 1.0).describe() == base.describe()
    assert rate_scaled(base.pattern, 1.25).b == 31 and rate_scaled(base.pattern, 0.8).b == 49
    assert varied(base, 1.25, 1.0).profile.executors == (62, 438)
    bern = get_scenario("multicluster-bernoulli").pattern
    assert rate_scaled(bern, 1.25).rho == pytest.approx(0.1)
    out = tmp_path / "dr"
    _train_cli(out, 2, "--set", "demand_scales=0.7,1.3", "--set", "rate_scales=0.8,1.25")
    rows = json.loads((out / "learning-curve.json").read_text())["episodes"]
    assert [(r["demand_scale"], r["rate_scale"]) for r in rows] == [tuple(round(x, 4) for x in cfg.draw_workload(3, e))
                                                                    for e in (1, 2)]
    with pytest.raises(SystemExit, match="vary RL-FC's own workloads"):
        from emulator.cli import main

        main(["train", "--scenario", "hetero-elastic-uniform", "--algo", "rl-fc", "--out", str(tmp_path / "x"),
              "--set", "rate_scales=0.8,1.2"])
