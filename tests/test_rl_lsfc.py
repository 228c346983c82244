"""RL-LSFC: the value components (Sec. 4.2-4.3), numpy inference against torch, the model artifact and its refusals,
the served policy in-process and behind a real `policy-engine serve`, and short training runs (improves on its
start, bit-identical resume)."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest
import torch

from algorithms.rl_lsfc.train import LsfcNet, RlLsfcConfig, network_tensors, value_components
from policy_engine.artifact import ArtifactError, save_artifact
from policy_engine.features.multicluster import lsfc_split, lsfc_states
from algorithms.rl_lsfc.policy import LsfcNetwork, RlLsfcPolicy

SCENARIO = "hetero-elastic-uniform"
TINY_NET = RlLsfcConfig(lstm_hidden=6, fc1=24, fc2=12)


# ---------------------------------------------------------------- value components


def test_value_components_hand_worked_example():
    cfg = RlLsfcConfig(beta=0.5, p_m_ih=2.0, p_m_ic=3.0, p_psi_ih=2.0, p_psi_ic=4.0)
    hetero = np.array([60.0, 100.0])
    expected = np.array([80.0, 50.0, 90.0])
    standard = np.array([10.0, 20.0, 10.0])
    # job 0 -> cluster 0 (slow for it: 60 < 80) at t=0; job 1 -> cluster 1 at t=2; job 2 -> cluster 0 at t=5
    decisions = [(0, 0, 0), (1, 1, 2), (2, 0, 5)]
    # (finish, cluster, job, execution, request, start, missed)
    executions = [
        (14, 0, 0, 0, 0, 0, True),     # job 0 run 1: started at its deploy step (no wait), missed -> M_0
        (30, 0, 0, 1, 15, 17, True),   # job 0 run 2: queued at 15, started 17 (waited), missed at 30 -> W_0
        (12, 1, 1, 0, 1, 2, False),    # job 1: no wait, no miss, AR = 11 of standard 20
        (28, 0, 2, 0, 4, 8, True),     # job 2: deployed at 5, started 8 (waited: IC), missed at 28 -> W_cl
    ]
    v = value_components(decisions, executions, hetero, expected, standard, cfg)
    # job 0: IH (missed, 60 < 80), no IC (first run started at once); R_0 = mean(14/10, 15/10) - 1 = 0.45.
    # D_30 = 1 (job 2 deployed to cluster 0 at 5 <= 30) -> W_0 term 0.5; W_cl over [0, 30]: misses after waits
    # at 28 (job 2) and 30 (job 0), both with D = 1 -> 0.5 + 0.5. Factor 60 * 2 / 80 = 1.5.
    np.testing.assert_allclose(v[0], [-1.5 * (1 + 0.5), -1.5 * 1.0, -2.0 * 0.45])
    # job 1: no event, nothing missed; R_1 = 11 / 20 - 1 = -0.45 -> v3 = +0.45
    np.testing.assert_allclose(v[1], [0.0, 0.0, 0.45])
    # job 2: IC (deployed 5, started 8) and IH (60 < 90); D_28 = 0. Factor 60 * 2 * 3 / 90 = 4.
    # R_2 = 24 / 10 - 1 = 1.4 > 0 -> psi = 2 * 4. W_cl over [5, 28]: the miss at 28 only.
    np.testing.assert_allclose(v[2], [-4.0 * 1.0, -4.0 * 1.0, -8.0 * 1.4])


def test_unfinished_decisions_get_no_value():
    cfg = RlLsfcConfig()
    v = value_components([(0, 0, 0), (1, 1, 0)], [(5, 0, 0, 0, 0, 0, False)], np.array([70.0, 90.0]),
                         np.array([70.0, 70.0]), np.array([5.0, 5.0]), cfg)
    assert not np.isnan(v[0]).any() and np.isnan(v[1]).all()


def test_config_parses_weights_and_refuses_nonsense():
    cfg = RlLsfcConfig.from_options({"weights": "1,0.2,2.5"})
    assert cfg.weights == (1.0, 0.2, 2.5)
    assert cfg.lr_at(1000) == 1e-4 and cfg.lr_at(1001) == 1e-5   # Sec. 4.4: Adam(1e-4) for 1000 of 1500
    with pytest.raises(ValueError, match="weights"):
        RlLsfcConfig.from_options({"weights": "1,2"})
    with pytest.raises(ValueError, match="unknown rl-lsfc"):
        RlLsfcConfig.from_options({"lstm": 3})
    with pytest.raises(ValueError, match=">= 1"):
        RlLsfcConfig.from_options({"p_m_ih": 0.5})
    # the learner's torch device: one line naming what is wrong, never a crash at the first training pass
    assert RlLsfcConfig.from_options({"device": "cpu"}).device == "cpu"
    with pytest.raises(ValueError, match="not a torch device"):
        RlLsfcConfig.from_options({"device": "gpu0"})
    with pytest.raises(ValueError, match="no such CUDA device"):
        RlLsfcConfig.from_options({"device": "cuda:99"})
    with pytest.raises(ValueError, match="only cpu and cuda"):
        RlLsfcConfig.from_options({"device": "meta"})


# ---------------------------------------------------------------- network: numpy == torch


def _observations(n: int, jobs: int = 300, seed: int = 4):
    """Real observations of the hetero-elastic emulator (MAF routing), every `step`-th decision."""
    from emulator.scenario import get_scenario
    from policy_engine.policy import create

    sim = get_scenario(SCENARIO, jobs=jobs).make_sim()
    maf = create("maf")
    obs, out, k = sim.reset(seed), [], 0
    while obs is not None:
        if k % 7 == 3 and len(out) < n:
            out.append(obs)
        k += 1
        obs = sim.step(maf.route(obs))
    return out


def _tiny_tensors(seed: int = 0, cfg: RlLsfcConfig = TINY_NET) -> dict[str, np.ndarray]:
    torch.manual_seed(seed)
    return network_tensors(LsfcNet(5, cfg), cfg)


def test_numpy_inference_equals_torch():
    torch.manual_seed(1)
    net = LsfcNet(5, TINY_NET)
    numpy_net = LsfcNetwork(network_tensors(net, TINY_NET))
    states = np.concatenate([lsfc_states(o) for o in _observations(6)])
    temporal, rest = lsfc_split(states)
    with torch.no_grad():
        expected = net(torch.from_numpy(np.ascontiguousarray(temporal)), torch.from_numpy(rest)).numpy()
    np.testing.assert_allclose(numpy_net.components(temporal, rest), expected, rtol=1e-4, atol=1e-5)
    # per observation the LSTM runs once on the shared occupation block: same numbers
    for o in _observations(4):
        s = lsfc_states(o)
        np.testing.assert_allclose(numpy_net.state_components(s), numpy_net.components(*lsfc_split(s)),
                                   rtol=1e-5, atol=1e-6)
        scalar = numpy_net(s)
        np.testing.assert_allclose(scalar, np.einsum("k,bkc->bc", np.array(TINY_NET.weights),
                                                     numpy_net.components(*lsfc_split(s))), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- artifact and policy


def _meta(**over):
    from emulator.scenario import get_scenario

    meta = {"policy": "rl-lsfc", "algorithm": "rl-lsfc", "scenario": SCENARIO,
            "scenario_params": get_scenario(SCENARIO).describe(), "seed": 0}
    meta.update(over)
    return meta


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("lsfc-model") / "rl-lsfc.safetensors"
    save_artifact(path, _tiny_tensors(), _meta())
    return path


def test_policy_scores_every_buffered_job_and_picks_the_best(model_file):
    pol = RlLsfcPolicy(model=model_file)
    reference = LsfcNetwork(_tiny_tensors())
    assert pol.model_checksum and len(pol.model_checksum) == 64
    picked = set()
    for obs in _observations(10):
        q = reference.components(*lsfc_split(lsfc_states(obs)))
        q = np.einsum("k,bkc->bc", np.array(TINY_NET.weights), q)
        np.testing.assert_allclose(pol.values(obs), q, rtol=1e-4, atol=1e-5)
        job, cluster = np.unravel_index(np.argmax(q), q.shape)
        d = pol.route(obs)
        assert (d.job_index, d.cluster_id) == (job, obs.clusters[cluster].cluster_id)
        picked.add(int(cluster))


def test_foreign_models_are_refused(tmp_path):
    # a model of another policy (RL-FC's value network)
    other = tmp_path / "rl-fc.safetensors"
    save_artifact(other, {"hidden1.weight": np.ones((4, 529), np.float32)},
                  {"policy": "rl-fc", "algorithm": "rl-fc", "scenario": "multicluster-uniform"})
    with pytest.raises(ArtifactError, match="for policy 'rl-fc'"):
        RlLsfcPolicy(model=other)
    # labelled rl-lsfc but produced by another algorithm
    algo = tmp_path / "algo.safetensors"
    save_artifact(algo, _tiny_tensors(), _meta(algorithm="deeprm-pg"))
    with pytest.raises(ArtifactError, match="trained by 'deeprm-pg'"):
        RlLsfcPolicy(model=algo)
    # trained on a scenario without heterogeneous clusters
    from emulator.scenario import get_scenario

    homo = tmp_path / "homo.safetensors"
    save_artifact(homo, _tiny_tensors(), _meta(scenario="multicluster-uniform",
                                               scenario_params=get_scenario("multicluster-uniform").describe()))
    with pytest.raises(ArtifactError, match="multicluster-uniform"):
        RlLsfcPolicy(model=homo)
    # a federation other than the model's: refused at decision time, with both named
    meta = _meta()
    meta["scenario_params"]["clusters"] = [800, 1200, 1500, 1800, 2400]
    moved = tmp_path / "moved.safetensors"
    save_artifact(moved, _tiny_tensors(), meta)
    with pytest.raises(ValueError, match="trained on clusters"):
        RlLsfcPolicy(model=moved).route(_observations(1)[0])


def test_bad_model_files_are_refused(model_file, tmp_path):
    data = model_file.read_bytes()
    tampered = tmp_path / "tampered.safetensors"
    raw = bytearray(data)
    raw[-10] ^= 0xFF
    tampered.write_bytes(bytes(raw))
    with pytest.raises(ArtifactError, match="checksum mismatch"):
        RlLsfcPolicy(model=tampered)
    truncated = tmp_path / "truncated.safetensors"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ArtifactError, match="truncated or corrupt"):
        RlLsfcPolicy(model=truncated)
    t = _tiny_tensors()
    del t["v2_out.bias"]
    partial = tmp_path / "partial.safetensors"
    save_artifact(partial, t, _meta())
    with pytest.raises(ArtifactError, match="v2_out.bias"):
        RlLsfcPolicy(model=partial)
    t = _tiny_tensors()
    t["scalarization"] = np.array([1.0, np.nan, 1.0], dtype=np.float32)
    nan = tmp_path / "nan.safetensors"
    save_artifact(nan, t, _meta())
    with pytest.raises(ArtifactError, match="scalarization"):
        RlLsfcPolicy(model=nan)
    with pytest.raises(ArtifactError, match="cannot read"):
        RlLsfcPolicy(model=tmp_path / "missing.safetensors")


def test_served_policy_gives_the_in_process_decisions(model_file):
    """`policy-engine serve --policy rl-lsfc --model ...` over real gRPC answers exactly as the in-process policy,
    for single decisions and for whole emulator episodes."""
    from emulator.drivers import InProcessDriver, RemoteDriver
    from emulator.evaluate import compare
    from emulator.scenario import get_scenario
    from policy_engine.cli import start_engine_subprocess

    local = InProcessDriver(RlLsfcPolicy(model=model_file))
    proc, target = start_engine_subprocess("rl-lsfc", ["--model", str(model_file)])
    with RemoteDriver(target, expect_policy="rl-lsfc", process=proc) as remote:
        assert remote.client.info().model_checksum == RlLsfcPolicy(model=model_file).model_checksum
        for obs in _observations(25, seed=9):
            a, b = local.route(obs), remote.route(obs)
            assert (a.job_index, a.cluster_id) == (b.job_index, b.cluster_id)
    scenario = get_scenario("hetero-elastic-beta", jobs=80)
    models = {"rl-lsfc": str(model_file)}
    here = compare(scenario, ["rl-lsfc"], 2, 5, models=models, progress=False)
    there = compare(scenario, ["rl-lsfc"], 2, 5, models=models, remote="spawn", progress=False)
    assert here["policies"] == there["policies"]


# ---------------------------------------------------------------- training end to end on the real emulator

# The paper's network (Table 2) on 300-job episodes; B = 600 decisions in minibatches of 60 (10 Adam steps a pass).
SHORT = ["--set", "rollout_batch=3", "--set", "batch=600", "--set", "minibatch=60", "--set", "buffer_size=3000", "--set", "eval_every=3",
         "--set", "eval_episodes=2", "--set", "checkpoint_every=3"]


def _train_cli(out, episodes, *extra):
    """`emulator train --algo rl-lsfc` on 300-job episodes; returns its JSON summary."""
    from emulator.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["train", "--scenario", SCENARIO, "--param", "jobs=300", "--algo", "rl-lsfc", "--episodes",
                     str(episodes), "--seed", "2", "--out", str(out), "--no-progress", *SHORT, *extra]) == 0
    return json.loads(buf.getvalue().strip().splitlines()[-1])


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("lsfc-run")
    return out, _train_cli(out, 6)


def test_short_training_run_improves_on_its_start(tiny_run):
    from policy_engine.artifact import load_artifact

    out, summary = tiny_run
    assert summary["episodes"] == 6 and summary["scenario"] == SCENARIO
    for name in ("model.safetensors", "best-model.safetensors", "checkpoint.pt", "learning-curve.json",
                 "learning-curve.png"):
        assert (out / name).stat().st_size > 0, name
    curve = json.loads((out / "learning-curve.json").read_text())
    evals = curve["evaluations"]
    assert [r["episode"] for r in evals] == [0, 3, 6]
    # the untrained network vs the trained one on the same validation workloads (S_log is log10 of |S|: 2 = 100x)
    assert evals[-1]["s_log"] > evals[0]["s_log"] + 2.0, evals
    assert evals[-1]["tmdl"] < evals[0]["tmdl"] / 2 and evals[-1]["ajer"] < evals[0]["ajer"] / 2, evals
    rows = curve["episodes"]
    assert all(r["decisions"] == 300 and r["valued"] == 300 for r in rows)
    assert rows[0]["loss"] is None and rows[-1]["loss"] is not None   # trains once B = 600 decisions are in
    tensors, meta = load_artifact(out / "model.safetensors", policy="rl-lsfc")
    # Table 2: LSTM input 15, fc1 800, fc2 200 per head, 5 outputs per head; LSTM size 64 (our choice)
    assert tensors["lstm.weight_ih_l0"].shape == (256, 15) and tensors["fc1.weight"].shape == (800, 5 * 64 + 89)
    assert all(tensors[f"{h}_fc2.weight"].shape == (200, 800) and tensors[f"{h}_out.weight"].shape == (5, 200)
               for h in ("v1", "v2", "v3"))
    assert tensors["scalarization"].tolist() == [1.0, 0.10000000149011612, 5.0]
    assert meta["algorithm"] == "rl-lsfc" and meta["scenario"] == SCENARIO and meta["seed"] == 2
    assert meta["hyperparameters"]["lstm_hidden"] == 64 and "ih_event" in meta["choices"]
    assert meta["validation"]["s_log"] == summary["final"]["s_log"] and meta["code_version"]
    assert set(meta["baselines_validation"]) == {"maf"}
    with pytest.raises(SystemExit, match="--resume"):
        _train_cli(out, 6)


def test_resume_is_bit_identical(tiny_run, tmp_path, monkeypatch):
    from algorithms.rl_lsfc import train as rl_lsfc
    from policy_engine.artifact import load_artifact

    straight_dir, straight = tiny_run
    learn = rl_lsfc.RlLsfcTrainer.learn

    def killed_after_three(self, played):
        if self.episode == 3:
            raise KeyboardInterrupt  # the process dies after the checkpoint of episode 3
        return learn(self, played)

    monkeypatch.setattr(rl_lsfc.RlLsfcTrainer, "learn", killed_after_three)
    with pytest.raises(KeyboardInterrupt):
        _train_cli(tmp_path, 6)
    monkeypatch.setattr(rl_lsfc.RlLsfcTrainer, "learn", learn)
    with pytest.raises(SystemExit, match="other hyper-parameters"):
        _train_cli(tmp_path, 6, "--resume", "--set", "beta=0.5")
    resumed = _train_cli(tmp_path, 6, "--resume")
    assert resumed["episodes"] == 6
    a, _ = load_artifact(straight_dir / "model.safetensors")
    b, _ = load_artifact(tmp_path / "model.safetensors")
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    assert resumed["final"] == straight["final"]


def test_two_worker_processes_train_the_same_model(tiny_run, tmp_path):
    from policy_engine.artifact import load_artifact

    straight_dir, straight = tiny_run
    two = _train_cli(tmp_path, 6, "--workers", "2")
    a, _ = load_artifact(straight_dir / "model.safetensors")
    b, _ = load_artifact(tmp_path / "model.safetensors")
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert two["final"] == straight["final"] and two["rollouts"]["workers"] == 2
