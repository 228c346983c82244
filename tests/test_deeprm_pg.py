"""DeepRM-PG: the rendered state, the time-dependent baseline, the served policy (in-process == gRPC,
refusing foreign or damaged models), and `emulator train --algo deeprm-pg` end to end (it learns, resume is
bit-identical)."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

from algorithms.deeprm.sim import DeepRMConfig, DeepRMSimulation
from algorithms.deeprm.train import Rollout, advantages, play, returns_to_go, sim_state
from emulator.scenario import get_scenario
from policy_engine.artifact import ArtifactError, load_artifact, save_artifact
from policy_engine.features.deeprm import ImageSpec, image, render, since_newest_ask
from algorithms.deeprm.policy import DeepRMPgPolicy, PolicyNetwork, action_probs


def test_rendered_state_is_the_image_the_policy_sees():
    """The learner renders states from the simulator; the served policy from the observation: same image."""
    spec = ImageSpec()
    rng = np.random.default_rng(0)
    seen = 0
    for seed in range(3):
        sim = DeepRMSimulation(DeepRMConfig(load=0.9, simu_len=60), seed)
        while not sim.done:
            for j, _ in sim.waiting():
                if sim.fits(j) and rng.random() < 0.4:
                    sim.start_job(j)
            obs = sim.observe()
            used, slot_len, slot_dem, backlog, since = sim_state(sim, spec)
            assert since == since_newest_ask(obs, spec) or not obs.asks
            batch = render(used[None], slot_len[None], slot_dem[None], np.array([backlog]), np.array([since]), spec)
            np.testing.assert_array_equal(batch[0], image(obs, spec, since))
            seen += int(batch[0][:, :-1].any())
            sim.advance()
    assert seen > 100


def test_returns_and_time_dependent_baseline():
    np.testing.assert_allclose(returns_to_go(np.array([-1.0, -2.0, -3.0]), 1.0), [-6, -5, -3])
    np.testing.assert_allclose(returns_to_go(np.array([-1.0, -2.0, -3.0]), 0.5), [-1 - 1 - 0.75, -2 - 1.5, -3])

    def rollout(rewards, steps):
        d = len(steps)
        return Rollout(np.zeros((d, 20, 2)), np.zeros((d, 10)), np.zeros((d, 10, 2)), np.zeros(d), np.zeros(d),
                       np.ones((d, 11), bool), np.zeros(d, np.int64), np.array(steps), np.array(rewards, float), 1.0)

    a = rollout([-1.0, -1.0, -1.0], [0, 0, 2])   # returns from step 0, 1, 2: -3, -2, -1
    b = rollout([-2.0, -2.0], [0, 1])            # -4, -2 (and 0 from step 2 on: the rollout is over)
    adv_a, adv_b = advantages([a, b], 1.0, "time")
    # b_t = mean over both rollouts at time step t: -3.5, -2, -0.5
    np.testing.assert_allclose(adv_a, [-3 + 3.5, -3 + 3.5, -1 + 0.5])
    np.testing.assert_allclose(adv_b, [-4 + 3.5, -2 + 2])
    # "step" (DeepRM's code): indexed by decision: a's returns -3, -3, -1; b's -4, -2 -> b_k = -3.5, -2.5, -0.5
    adv_a, adv_b = advantages([a, b], 1.0, "step")
    np.testing.assert_allclose(adv_a, [0.5, -0.5, -0.5])
    np.testing.assert_allclose(adv_b, [-0.5, 0.5])


def test_masked_action_probabilities():
    p = action_probs(np.array([3.0, 1.0, 0.0]), np.array([False, True, True]))
    assert p[0] == 0 and p[1:].sum() == pytest.approx(1) and p[1] > p[2]
    assert action_probs(np.array([0.0, 0.0]), None).tolist() == [0.5, 0.5]


# ---------------------------------------------------------------- the served policy


def _tensors(seed=0, hidden=(8,), spec=ImageSpec()):
    rng = np.random.default_rng(seed)
    sizes = [spec.time_horizon * spec.width, *hidden, spec.num_slots + 1]
    t = {}
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        t[f"fc.{i}.weight"] = rng.normal(0, 1 / np.sqrt(a), (b, a)).astype(np.float32)
        t[f"fc.{i}.bias"] = rng.normal(0, 0.1, b).astype(np.float32)
    t[f"fc.{len(sizes) - 2}.bias"][-1] = -2.0   # prefer starting jobs, so episodes end quickly
    return t


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("deeprm-pg") / "m.safetensors"
    save_artifact(path, _tensors(), {"policy": "deeprm-pg", "image_spec": {}, "mask_invalid": True})
    return path


def test_served_policy_is_the_learners_greedy_policy(model_file):
    """Whole scenario episodes with `deeprm-pg` give exactly the learner's greedy rollouts (what validation plays),
    for a random network and for the shipped one. The trained network reads the image's last column (steps since
    the newest waiting job arrived), which changes when a step starts the newest job: the served policy re-reads it
    after every start as the learner does (it once kept the step's first value, and 4 of these 5 episodes differed)."""
    from pathlib import Path

    from emulator.drivers import InProcessDriver

    sc = get_scenario("deeprm", load=0.8)
    tensors, _ = load_artifact(model_file)
    driver = InProcessDriver(DeepRMPgPolicy(model=model_file))
    for seed in range(4):
        m = sc.run_episode(driver, seed)
        r = play(sc.config, seed, PolicyNetwork(tensors), None, True, 5000)
        assert m["slowdown"] == pytest.approx(r.slowdown, abs=1e-12) and len(r.action) > 10
    shipped = Path(__file__).resolve().parent.parent / "models" / "deeprm-pg.safetensors"
    tensors, meta = load_artifact(shipped)
    driver = InProcessDriver(DeepRMPgPolicy(model=shipped))
    sc = get_scenario("deeprm", load=0.75)
    for seed in range(5):
        r = play(sc.config, seed, PolicyNetwork(tensors), None, True, 5000, keep_busy=meta["keep_busy"])
        assert sc.run_episode(driver, seed)["slowdown"] == pytest.approx(r.slowdown, abs=1e-12), seed


def test_policy_refuses_foreign_and_damaged_models(model_file, tmp_path):
    other = tmp_path / "other.safetensors"
    save_artifact(other, _tensors(), {"policy": "rl-fc"})
    with pytest.raises(ArtifactError, match="for policy 'rl-fc'"):
        DeepRMPgPolicy(model=other)
    wrong = tmp_path / "wrong.safetensors"
    save_artifact(wrong, _tensors(spec=ImageSpec(num_slots=5)), {"policy": "deeprm-pg"})
    with pytest.raises(ArtifactError, match="inputs"):
        DeepRMPgPolicy(model=wrong)
    nan = _tensors()
    nan["fc.0.weight"][0, 0] = np.nan
    bad = tmp_path / "nan.safetensors"
    save_artifact(bad, nan, {"policy": "deeprm-pg"})
    with pytest.raises(ArtifactError, match="NaN"):
        DeepRMPgPolicy(model=bad)
    data = bytearray(model_file.read_bytes())
    data[-5] ^= 0xFF
    tampered = tmp_path / "tampered.safetensors"
    tampered.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="checksum"):
        DeepRMPgPolicy(model=tampered)
    tampered.write_bytes(model_file.read_bytes()[:100])
    with pytest.raises(ArtifactError, match="truncated or corrupt"):
        DeepRMPgPolicy(model=tampered)
    # a scenario with another number of job slots than the model was trained for
    sim = DeepRMSimulation(DeepRMConfig(spec=ImageSpec(num_slots=5), job_rate=1.0, simu_len=10), 0)
    sim.advance()
    with pytest.raises(ValueError, match="trained for 10 job slots"):
        DeepRMPgPolicy(model=model_file).schedule(sim.observe())


def test_remote_episodes_match_in_process(model_file):
    """`deeprm-pg` behind a real `policy-engine serve` (gRPC on loopback) plays the in-process episodes."""
    from emulator.evaluate import compare

    sc = get_scenario("deeprm", load=0.75, simu_len=40)
    models = {"deeprm-pg": str(model_file)}
    local = compare(sc, ["deeprm-pg"], 3, 11, models=models, progress=False)
    remote = compare(sc, ["deeprm-pg"], 3, 11, models=models, remote="spawn", progress=False)
    assert local["policies"] == remote["policies"]
    assert local["policies"]["deeprm-pg"]["jobs"]["mean"] > 20


# ---------------------------------------------------------------- training end to end

TINY = ["--param", "simu_len=30", "--set", "jobsets=2", "--set", "rollouts=6", "--set", "hidden=16",
        "--set", "eval_every=3", "--set", "eval_episodes=6", "--set", "checkpoint_every=3", "--set", "lr=0.01"]


def _train(out, iterations, *extra):
    from emulator.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["train", "--scenario", "deeprm", "--algo", "deeprm-pg", "--episodes", str(iterations),
                     "--seed", "5", "--out", str(out), "--no-progress", *TINY, *extra]) == 0
    return json.loads(buf.getvalue().strip().splitlines()[-1])


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("deeprm-pg-run")
    return out, _train(out, 6)


def test_short_training_run_learns_and_beats_random(tiny_run):
    from emulator.evaluate import run_policy

    out, summary = tiny_run
    assert summary["iterations"] == 6
    for name in ("model.safetensors", "best-model.safetensors", "checkpoint.pt", "learning-curve.json",
                 "learning-curve.png"):
        assert (out / name).stat().st_size > 0, name
    curve = json.loads((out / "learning-curve.json").read_text())
    ev = curve["evaluations"]
    assert [r["iteration"] for r in ev] == [0, 3, 6]
    assert [r["iteration"] for r in curve["iterations"]] == list(range(1, 7))
    assert all(r["reward"] < 0 and r["decisions"] > 0 for r in curve["iterations"])
    # REINFORCE improved the policy: the trained greedy policy beats the untrained one and DeepRM's random agent
    sc = get_scenario("deeprm", simu_len=30)
    seeds = 900_000
    rnd = np.mean([e["slowdown"] for e in run_policy(sc, "deeprm-random", 6, seeds, progress=False)])
    assert ev[-1]["slowdown"] < ev[0]["slowdown"]
    assert ev[-1]["slowdown"] < rnd, (ev, rnd)
    # ... and so does the stochastic policy it samples from (the untrained one: near uniform over the actions)
    import torch

    from algorithms.deeprm.train import make_network, network_tensors

    torch.manual_seed(5)   # the run's seed: its initial network
    before = PolicyNetwork(network_tensors(make_network(20 * 244, 11, (16,))))
    after = PolicyNetwork(load_artifact(out / "model.safetensors")[0])
    sampled = {name: np.mean([play(sc.config, seeds + k, net, np.random.default_rng([k, r]), True, 1000).slowdown
                              for k in range(6) for r in range(5)]) for name, net in (("before", before),
                                                                                     ("after", after))}
    assert sampled["after"] < 0.85 * sampled["before"], sampled
    tensors, meta = load_artifact(out / "model.safetensors", policy="deeprm-pg")
    assert tensors["fc.0.weight"].shape == (16, 20 * 244) and tensors["fc.1.weight"].shape == (11, 16)
    assert meta["seed"] == 5 and meta["iterations_trained"] == 6 and meta["hyperparameters"]["rollouts"] == 6
    assert meta["image_spec"]["num_slots"] == 10 and meta["mask_invalid"] is True
    assert meta["code_version"] and meta["checksum"] == summary["checksum"]
    assert set(meta["baselines_validation"]) == {"sjf", "packer"}
    # the served policy on the validation job sets reproduces the validation number
    served = run_policy(sc, "deeprm-pg", 6, seeds, model=str(out / "model.safetensors"), progress=False)
    assert np.mean([e["slowdown"] for e in served]) == pytest.approx(ev[-1]["slowdown"], rel=1e-12)
    with pytest.raises(SystemExit, match="--resume"):
        _train(out, 6)


def test_reinforce_from_scratch_improves_on_its_start(tmp_path):
    """REINFORCE by itself (no warm start) with the shipped recipe's options (advantage normalisation, a decaying
    entropy bonus) on a small fixed setting: 12 iterations of 8 job sets x 10 rollouts lower the greedy validation
    slowdown far below the untrained network's (measured: 2.67 -> 1.71) and below Packer's on the same job sets."""
    summary = _train(tmp_path, 12, "--param", "load=0.75", "--param", "simu_len=30", "--set", "jobsets=8",
                     "--set", "rollouts=10", "--set", "eval_every=12", "--set", "eval_episodes=20",
                     "--set", "checkpoint_every=12", "--set", "normalize_advantages=true",
                     "--set", "entropy_coef=0.01", "--set", "entropy_decay=12", "--set", "hidden=20",
                     "--set", "lr=0.001", "--seed", "3")
    curve = json.loads((tmp_path / "learning-curve.json").read_text())
    start, end = curve["evaluations"][0], curve["evaluations"][-1]
    assert (start["iteration"], end["iteration"]) == (0, 12)
    assert end["slowdown"] < 0.8 * start["slowdown"], curve["evaluations"]
    assert end["slowdown"] < summary["baselines"]["packer"]["slowdown"], (end, summary["baselines"])
    rows = curve["iterations"]
    # the bonus decays linearly to 0 at iteration 12; entropies are those of masked distributions over <= 11 actions
    assert [r["entropy_coef"] for r in rows][:2] == pytest.approx([0.01, 0.01 * 11 / 12])
    assert all(0 < r["entropy"] < np.log(11) for r in rows)


def test_entropy_and_optimiser_options():
    """The entropy of a masked distribution counts only the valid actions (and its gradient stays finite); rmsprop
    is the DeepRM paper's optimiser; bad values are refused."""
    import torch

    from algorithms.deeprm.train import DeepRMPgConfig, DeepRMPgTrainer

    sc = get_scenario("deeprm", load=0.75, simu_len=20)
    cfg = DeepRMPgConfig(hidden=(8,), jobsets=2, rollouts=3, optimizer="rmsprop", entropy_coef=0.5,
                         normalize_advantages=True)
    trainer = DeepRMPgTrainer(sc, cfg, 0, None)
    assert isinstance(trainer.optim, torch.optim.RMSprop)
    with torch.no_grad():
        for p in trainer.net.parameters():
            p.zero_()   # uniform over the valid actions: entropy log(number valid)
    jobsets = trainer.play_iteration()
    cat = trainer.stack([r for js in jobsets for r in js])
    logp = trainer.log_prob_table(cat, slice(None))
    _, entropy = trainer.gradient_step(jobsets)
    assert entropy == pytest.approx(float(np.log(cat["valid"].sum(axis=1)).mean()), rel=1e-5)
    assert torch.isinf(logp[~torch.from_numpy(cat["valid"])]).all()
    assert all(torch.isfinite(p).all() for p in trainer.net.parameters())
    for bad, match in (({"optimizer": "sgd"}, "adam or rmsprop"), ({"entropy_coef": -1}, ">= 0")):
        with pytest.raises(Exception, match=match):
            DeepRMPgConfig.from_options(bad)


def test_resume_is_bit_identical(tiny_run, tmp_path, monkeypatch):
    from algorithms.deeprm import train as deeprm_pg

    straight_dir, straight = tiny_run
    run = deeprm_pg.DeepRMPgTrainer.run_iteration

    def killed_after_three(self):
        if self.iteration == 3:
            raise KeyboardInterrupt   # the process dies after the checkpoint of iteration 3
        return run(self)

    monkeypatch.setattr(deeprm_pg.DeepRMPgTrainer, "run_iteration", killed_after_three)
    with pytest.raises(KeyboardInterrupt):
        _train(tmp_path, 6)
    monkeypatch.setattr(deeprm_pg.DeepRMPgTrainer, "run_iteration", run)
    with pytest.raises(SystemExit, match="other hyper-parameters"):
        _train(tmp_path, 6, "--resume", "--set", "rollouts=8")
    resumed = _train(tmp_path, 6, "--resume")
    a, _ = load_artifact(straight_dir / "model.safetensors")
    b, _ = load_artifact(tmp_path / "model.safetensors")
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    assert resumed["checksum"] == straight["checksum"] and resumed["final"] == straight["final"]
    ca = json.loads((straight_dir / "learning-curve.json").read_text())
    cb = json.loads((tmp_path / "learning-curve.json").read_text())
    strip = lambda rows: [{k: v for k, v in r.items() if "seconds" not in k} for r in rows]
    assert strip(ca["iterations"]) == strip(cb["iterations"])
    assert strip(ca["evaluations"]) == strip(cb["evaluations"])


def test_bad_options_and_scenarios_are_refused(tmp_path):
    with pytest.raises(SystemExit, match="unknown deeprm-pg hyper-parameter"):
        _train(tmp_path / "a", 1, "--set", "gamma=0.9")
    with pytest.raises(SystemExit, match="rollouts must be >= 2"):
        _train(tmp_path / "b", 1, "--set", "rollouts=1")
    from emulator.training import train

    with pytest.raises(ValueError, match="deeprm scenario"):
        train("deeprm-pg", get_scenario("multicluster-uniform"), 1, 0, tmp_path / "c", progress=False)


def test_sampling_policy_is_a_pure_function_of_the_request(model_file):
    sim = DeepRMSimulation(DeepRMConfig(job_rate=1.0, simu_len=20), 3)
    for _ in range(12):
        sim.advance()
    obs = sim.observe()
    greedy = DeepRMPgPolicy(model=model_file).schedule(obs)
    sampler = DeepRMPgPolicy(model=model_file, sample="true")
    answers = []
    for i in range(30):
        obs.request_id = f"r{i}"
        d = sampler.schedule(obs)
        assert d == sampler.schedule(obs)           # the same request: the same draws
        answers.append(tuple(a.ask_id for a in d.assignments))
    assert len(set(answers)) > 1 and all(answers)   # it draws; a fitting job is always started first here
    assert greedy == DeepRMPgPolicy(model=model_file).schedule(obs)


# ---------------------------------------------------------------- the hold-back teacher and the shipped model


def test_holdback_policy_is_the_learners_teacher_and_holds_long_jobs_back():
    """`sjf-holdback` behind Schedule plays the learner's teacher exactly; it keeps a long job waiting that SJF
    starts, and on these job sets that lowers the slowdown (the room DeepRM keeps for small jobs)."""
    from emulator.drivers import InProcessDriver
    from algorithms.deeprm.train import holdback_action
    from policy_engine.policy import create

    sc = get_scenario("deeprm", load=0.75)
    hold, sjf = InProcessDriver(create("sjf-holdback")), InProcessDriver(create("sjf"))
    ours, theirs = [], []
    for seed in range(10):
        m = sc.run_episode(hold, seed)
        r = play(sc.config, seed, None, None, True, 5000, teacher=holdback_action)
        assert m["slowdown"] == pytest.approx(r.slowdown, abs=1e-12)
        ours.append(m["slowdown"])
        theirs.append(sc.run_episode(sjf, seed)["slowdown"])
    assert np.mean(ours) < 0.9 * np.mean(theirs), (ours, theirs)
    # one state: 12 units free of each resource, a 12-step job of 6 units and nothing else: SJF starts it
    sim = DeepRMSimulation(DeepRMConfig(job_rate=1.0, simu_len=1), 0)
    sim.length[0], sim.demand[0] = 12, (6, 1)
    sim.free[:] = (12, 12)
    obs = sim.observe()
    assert [a.ask_id for a in create("sjf").schedule(obs).assignments] == ["job-1"]
    assert create("sjf-holdback").schedule(obs).assignments == []
    sim.length[0] = 3   # a short job is never held back
    assert [a.ask_id for a in create("sjf-holdback").schedule(sim.observe()).assignments] == ["job-1"]


def test_dagger_warm_start_records_its_rounds(tmp_path):
    summary = _train(tmp_path, 1, "--set", "imitate=sjf-holdback", "--set", "imitate_jobsets=4", "--set",
                     "imitate_epochs=3", "--set", "imitate_rounds=2", "--set", "rl_lr=0.0002")
    _, meta = load_artifact(tmp_path / "model.safetensors")
    im = meta["imitation"]
    assert im["teacher"] == "sjf-holdback" and [r["round"] for r in im["rounds"]] == [1, 2]
    assert im["rounds"][0]["student_slowdown"] is None and im["rounds"][1]["student_slowdown"] > 1
    assert im["rounds"][1]["decisions"] > im["rounds"][0]["decisions"]   # round 2 adds the network's own states
    assert im["mean_prob_of_teacher_action"] > 0.5   # fitted: far above the ~1/3 of a near-uniform network
    assert summary["iterations"] == 1
    state = __import__("torch").load(tmp_path / "checkpoint.pt", weights_only=True)
    assert [g["lr"] for g in state["optim"]["param_groups"]] == [0.0002]   # REINFORCE runs at rl_lr


def test_init_starts_from_a_saved_model(tiny_run, tmp_path):
    """`init=MODEL` continues from a saved network: iteration 0 of the new run is that model's validation."""
    out, summary = tiny_run
    init = out / "model.safetensors"
    _train(tmp_path / "a", 1, "--set", f"init={init}")
    curve = json.loads((tmp_path / "a" / "learning-curve.json").read_text())
    assert curve["evaluations"][0]["slowdown"] == pytest.approx(summary["final"]["slowdown"], rel=1e-12)
    _, meta = load_artifact(tmp_path / "a" / "model.safetensors")
    assert meta["imitation"]["init_checksum"] == summary["checksum"]
    with pytest.raises(SystemExit, match="hidden"):
        _train(tmp_path / "b", 1, "--set", f"init={init}", "--set", "hidden=8")


def test_keep_busy_never_idles_the_cluster(tmp_path):
    """A network that always prefers the void action: with keep_busy it still starts a job whenever nothing runs,
    so episodes finish, and the served policy plays the learner's greedy keep_busy rollouts."""
    from emulator.drivers import InProcessDriver

    t = _tensors(seed=1)
    t["fc.1.bias"][-1] = 50.0   # void dominates every other action
    path = tmp_path / "void.safetensors"
    save_artifact(path, t, {"policy": "deeprm-pg", "image_spec": {}, "mask_invalid": True, "keep_busy": True})
    sc = get_scenario("deeprm", load=0.75, simu_len=30)
    driver = InProcessDriver(DeepRMPgPolicy(model=path))
    for seed in range(3):
        m = sc.run_episode(driver, seed)
        r = play(sc.config, seed, PolicyNetwork(t), None, True, 5000, keep_busy=True)
        assert m["slowdown"] == pytest.approx(r.slowdown, abs=1e-12)
        assert m["jobs"] > 10 and np.isfinite(m["slowdown"])
        assert (r.action < 10).sum() == m["jobs"] - m["dropped"]   # each start is forced: one per job
    # without keep_busy the same network never starts anything
    obs_sim = DeepRMSimulation(sc.config, 0)
    while not obs_sim.any_fits():
        obs_sim.advance()
    assert len(DeepRMPgPolicy(model=path).schedule(obs_sim.observe()).assignments) == 1
    save_artifact(path, t, {"policy": "deeprm-pg", "image_spec": {}, "mask_invalid": True})
    assert DeepRMPgPolicy(model=path).schedule(obs_sim.observe()).assignments == []


def test_shipped_model_beats_sjf_and_packer_at_load_075():
    """The issue's target on a fixed seeded set: models/deeprm-pg.safetensors has a lower mean slowdown than SJF
    and Packer on the same 20 held-out job sets at load 0.75 (the `emulator compare` of the issue, 20 episodes),
    and it was learned by REINFORCE alone: no warm start from a teacher's choices or another model."""
    from pathlib import Path

    from emulator.evaluate import run_policy

    model = Path(__file__).resolve().parent.parent / "models" / "deeprm-pg.safetensors"
    _, meta = load_artifact(model, policy="deeprm-pg")
    assert meta["keep_busy"] is True and meta["scenario_params"]["load"] == 0.75
    hp = meta["hyperparameters"]
    assert meta["imitation"] is None and hp["imitate"] == "" and hp["init"] == "" and meta["iterations_trained"] >= 100
    sc = get_scenario("deeprm", load=0.75)
    slow = {p: np.array([e["slowdown"] for e in run_policy(sc, p, 20, 0, model=str(model) if p == "deeprm-pg"
                                                           else None, progress=False)])
            for p in ("deeprm-pg", "sjf", "packer")}
    assert slow["deeprm-pg"].mean() < 0.95 * slow["sjf"].mean() < 0.95 * slow["packer"].mean(), \
        {p: s.mean() for p, s in slow.items()}
    assert (slow["deeprm-pg"] < slow["sjf"]).sum() >= 12   # lower on most job sets, not on average only


def test_learning_curves_benchmark_summarises_runs(tmp_path):
    """benchmarks/deeprm_learning_curves.py: start, best and first iteration below SJF per run; PNG; JSON last line."""
    import subprocess
    import sys
    from pathlib import Path

    def curve(path, values):
        evals = [{"iteration": 10 * i, "slowdown": v, "wall_seconds": 5.0 * i} for i, v in enumerate(values)]
        path.write_text(json.dumps({"seed": 1, "evaluations": evals, "baselines": {
            "sjf": {"slowdown": 1.65}, "packer": {"slowdown": 2.3}}}))
        return str(path)

    script = Path(__file__).resolve().parent.parent / "benchmarks" / "deeprm_learning_curves.py"
    a, b = curve(tmp_path / "a.json", [2.4, 1.7, 1.6, 1.62]), curve(tmp_path / "b.json", [2.5, 1.9, 1.8])
    out = subprocess.run([sys.executable, str(script), a, b, "--label", "A", "--label", "B", "--reference",
                          "imitation=1.37", "--out", str(tmp_path / "lc")], capture_output=True, text=True, check=True)
    runs = json.loads(out.stdout.strip().splitlines()[-1])["runs"]
    assert runs["A"]["best"] == 1.6 and runs["A"]["best_iteration"] == 20
    assert runs["A"]["first_below_sjf_iteration"] == 20
    assert runs["B"]["first_below_sjf_iteration"] is None and runs["B"]["start"] == 2.5
    assert (tmp_path / "lc.png").stat().st_size > 0
    assert json.loads((tmp_path / "lc.json").read_text())["references"] == {"imitation": 1.37}
    bad = subprocess.run([sys.executable, str(script), str(tmp_path / "missing.json"), "--out", str(tmp_path / "x")],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "not a deeprm-pg learning curve" in bad.stderr


def test_two_worker_processes_train_the_same_model(tiny_run, tmp_path):
    """`emulator train --workers 2` (emulator.learners.rollouts): the rollouts of an iteration are played in two
    processes; every rollout is seeded by (seed, iteration, jobset, rollout), so the model is the one-process one."""
    out, summary = tiny_run
    two = _train(tmp_path, 6, "--workers", "2")
    a, _ = load_artifact(out / "model.safetensors")
    b, meta = load_artifact(tmp_path / "model.safetensors")
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert two["final"] == summary["final"] and meta["hyperparameters"]["workers"] == 2
