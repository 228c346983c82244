"""The papers' metrics on hand-worked examples."""

import math

import pytest

from emulator.multicluster import metrics


def test_ajdr_eq8_hand_worked():
    # job 1: one execution, AR 12 / OR 10 -> 20 %; job 2: two batches at 1.0 and 1.5 -> (0 + 50) / 2 = 25 %;
    # job 3: one execution on time -> 0 %.  AJDR = (20 + 25 + 0) / 3 = 15
    assert metrics.ajdr([[1.2], [1.0, 1.5], [1.0]]) == pytest.approx(15.0)


def test_ajdr_refuses_empty_input():
    with pytest.raises(ValueError):
        metrics.ajdr([])
    with pytest.raises(ValueError, match="job 1"):
        metrics.ajdr([[1.0], []])


def test_eval_app_eq9():
    # TMDL 200, AJDR 6: (0.02 * 200 + 6)^-1 = 1 / 10
    assert metrics.eval_app(200, 6.0) == pytest.approx(0.1)
    assert metrics.eval_app(0, 0.0) == math.inf


def test_ajer_hand_worked():
    # N_w = 2; job 1 ran 9 of SR 10 -> 90; job 2 two batches 1.1 and 0.9 of SR -> 100; AJER = (90 + 100) / 2 = 95
    assert metrics.ajer([[0.9], [1.1, 0.9]]) == pytest.approx(95.0)


def test_s_log_hand_worked():
    # S = -TMDL + 50 (100 - AJER)
    assert metrics.s_log(61.7, 90.3) == pytest.approx(math.log10(-61.7 + 50 * 9.7))       # 423.3 -> 2.6266
    assert metrics.s_log(343.84, 93.22) == pytest.approx(-math.log10(343.84 - 50 * 6.78))  # S = -4.84 -> -0.68
    assert metrics.s_log(0.5, 100.0) == 0.0                                                 # |S| < 1 -> log10(1)
    assert metrics.s_log(0.0, 100.0) == 0.0


def test_scores_a_to_d_hand_worked():
    base = [{"tmdl": 100, "ajdr": 10.0}] * 4
    rl = [
        {"tmdl": 50, "ajdr": 5.0},    # better in both: A 1, B 1, C 1, D 1
        {"tmdl": 50, "ajdr": 12.0},   # TMDL only: B .5; Eval 1/(1 + 12) < 1/(2 + 10) -> C 0; D -50 % + 20 % -> 1
        {"tmdl": 120, "ajdr": 9.0},   # AJDR only: B .5; Eval 1/(2.4+9)=.0877 > .0833 -> C 1; D: +20 % - 10 % -> 0
        {"tmdl": 100, "ajdr": 10.0},  # tie: nothing
    ]
    s = metrics.scores_000(rl, base)
    assert s == {"score_a": 25.0, "score_b": 50.0, "score_c": 50.0, "score_d": 50.0}


def test_scores_are_on_a_100_basis_for_50_episodes():
    base = [{"tmdl": 10, "ajdr": 5.0}] * 50
    rl = [{"tmdl": 5, "ajdr": 4.0}] * 49 + [{"tmdl": 20, "ajdr": 6.0}]
    assert metrics.scores_000(rl, base)["score_a"] == pytest.approx(98.0)  # the paper's "times 2"


def test_score_d_with_a_zero_baseline():
    assert metrics.scores_000([{"tmdl": 0, "ajdr": 1.0}], [{"tmdl": 0, "ajdr": 2.0}])["score_d"] == 100.0
    assert metrics.scores_000([{"tmdl": 1, "ajdr": 0.1}], [{"tmdl": 0, "ajdr": 2.0}])["score_d"] == 0.0


def test_fsn_hand_worked():
    base = [{"tmdl": 300, "ajer": 93.0}] * 4
    rl = [{"tmdl": 60, "ajer": 90.0}, {"tmdl": 60, "ajer": 95.0}, {"tmdl": 400, "ajer": 92.0},
          {"tmdl": 300, "ajer": 93.0}]
    assert metrics.fsn_002(rl, base) == {"f": 1, "s": 2, "n": 1}


def test_pairwise_scores_need_paired_episodes():
    with pytest.raises(ValueError):
        metrics.fsn_002([{"tmdl": 1, "ajer": 1}], [])
    with pytest.raises(ValueError):
        metrics.scores_000([], [])


def test_ratio_is_baseline_over_policy():
    assert metrics.ratio(349.9, 46.34) == pytest.approx(7.55, abs=0.01)   # the paper's Table II, Uniform
    assert metrics.ratio(5.0, 0.0) == math.inf
