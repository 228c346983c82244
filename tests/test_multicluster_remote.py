"""Identical decisions and metrics in-process and over real gRPC (`policy-engine serve` subprocesses)."""

import json

import pytest

from emulator.cli import main as emulator_main
from emulator.drivers import make_driver
from emulator.evaluate import compare
from emulator.scenario import get_scenario


class Recording:
    """A driver wrapper that records every decision and counts reported events."""

    def __init__(self, driver):
        self.driver = driver
        self.decisions = []
        self.reported = 0

    def route(self, obs):
        d = self.driver.route(obs)
        self.decisions.append((obs.request_id, d.job_index, d.cluster_id))
        return d

    def report(self, events):
        n = self.driver.report(events)
        self.reported += n
        return n


@pytest.mark.parametrize("scenario,policies", [
    ("multicluster-uniform", ["random", "sf-e"]),
    ("hetero-elastic-uniform", ["rr", "maf"]),
])
def test_same_decisions_and_metrics_in_process_and_over_grpc(scenario, policies):
    sc = get_scenario(scenario, jobs=80)
    for policy in policies:
        runs = {}
        for mode in (None, "spawn"):
            with make_driver(policy, remote=mode) as driver:
                rec = Recording(driver)
                metrics = [sc.run_episode(rec, seed) for seed in (0, 1)]
                runs[mode] = (rec.decisions, metrics, rec.reported)
        local, remote = runs[None], runs["spawn"]
        assert len(local[0]) == 160
        assert local[0] == remote[0], f"{policy}: decisions differ between in-process and gRPC"
        assert local[1] == remote[1]
        assert local[2] == remote[2] > 160          # every job's JobFinished (and the misses) reached the engine


def test_compare_remote_equals_in_process_including_scores():
    sc = get_scenario("multicluster-bernoulli", jobs=60)
    a = compare(sc, ["random", "sf-e"], episodes=2, seed=3, against="sf-e", progress=False)
    b = compare(sc, ["random", "sf-e"], episodes=2, seed=3, against="sf-e", remote="spawn", progress=False)
    assert a == b
    assert set(a["policies"]["random"]) == {"tmdl", "ajdr", "eval_app", "score_a", "score_b", "score_c", "score_d",
                                            "tmdl_ratio", "ajdr_ratio", "eval_app_of_means"}
    sfe = a["policies"]["sf-e"]
    assert sfe["eval_app_of_means"] == pytest.approx(1 / (0.02 * sfe["tmdl"]["mean"] + sfe["ajdr"]["mean"]))


def test_cli_compare_json_contract(capsys):
    emulator_main(["compare", "--scenario", "hetero-elastic-uniform", "--param", "jobs=50", "--param", "b=36",
                   "--policies", "ran,maf", "--against", "maf", "--episodes", "2", "--seed", "4", "--json",
                   "--no-progress"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["scenario"] == "hetero-elastic-uniform" and out["episodes"] == 2 and out["seed"] == 4
    assert out["params"]["pattern"]["b"] == 36
    ran, maf = out["policies"]["ran"], out["policies"]["maf"]
    for key in ("tmdl", "ajer", "s_log"):
        assert set(maf[key]) == {"mean", "std"}
    assert sum(ran["fsn"].values()) == 2


def test_cli_table_shows_scores_and_unknown_scenarios_list_the_valid_ones(capsys):
    emulator_main(["compare", "--scenario", "multicluster-beta", "--param", "jobs=40", "--policies", "lf-p,sf-e",
                   "--against", "sf-e", "--episodes", "2", "--no-progress"])
    table = capsys.readouterr().out
    assert "score_a" in table and "lf-p" in table and "±" in table
    with pytest.raises(SystemExit, match="multicluster-uniform"):
        emulator_main(["compare", "--scenario", "multicluster-nope", "--episodes", "1"])
    with pytest.raises(SystemExit, match="unknown parameter 'q'"):
        emulator_main(["run", "--scenario", "multicluster-uniform", "--param", "q=1", "--policy", "sf-e"])
