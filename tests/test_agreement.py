"""Agreement statistics against scikit-learn, statsmodels and SciPy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa

from evalframe.core._agreement import (
    cohen_kappa,
    confusion,
    percent_agreement,
    spearman,
    weighted_kappa,
)


@pytest.mark.parametrize("seed", range(12))
def test_cohen_kappa_and_interval_match_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = 2 if seed % 2 else 4
    human = rng.integers(0, k, 60)
    judge = np.where(rng.random(60) < 0.7, human, rng.integers(0, k, 60))
    ours = cohen_kappa(human, judge, k)
    assert ours.kappa == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)
    table = np.zeros((k, k))
    np.add.at(table, (human, judge), 1)
    ref = cohens_kappa(table)
    assert ours.low == pytest.approx(max(-1.0, ref.kappa_low), abs=1e-9)
    assert ours.high == pytest.approx(min(1.0, ref.kappa_upp), abs=1e-9)


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
@pytest.mark.parametrize("seed", range(6))
def test_weighted_kappa_matches_scikit_learn(weights: str, seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    human = rng.integers(0, 5, 80)
    judge = np.clip(human + rng.integers(-1, 2, 80), 0, 4)
    ours = weighted_kappa(human, judge, 5, weights)  # type: ignore[arg-type]
    assert ours == pytest.approx(cohen_kappa_score(human, judge, weights=weights), abs=1e-12)


def test_kappa_is_undefined_without_variation_or_cases() -> None:
    same = np.zeros(5, dtype=np.int64)
    assert cohen_kappa(same, same, 2).kappa is None
    empty = np.zeros(0, dtype=np.int64)
    assert cohen_kappa(empty, empty, 2).as_dict() == {
        "kappa": None, "low": None, "high": None, "reason": "undefined: no case was scored",
    }  # fmt: skip
    assert weighted_kappa(empty, empty, 5) is None


def test_a_constant_rater_has_no_kappa_not_zero_with_an_interval_of_zero_width() -> None:
    # scikit-learn gives 0.0 here; the interval collapses to [0, 0], claiming a certainty
    # the ratings cannot give: the statistic is undefined and says why.
    human = np.array([1, 0, 1, 1, 0, 1], dtype=np.int64)
    judge = np.ones(6, dtype=np.int64)
    assert cohen_kappa_score(human, judge) == 0.0
    got = cohen_kappa(human, judge, 2)
    assert got.as_dict() == {
        "kappa": None, "low": None, "high": None,
        "reason": "undefined: the judge gave one verdict on every case",
    }  # fmt: skip
    assert cohen_kappa(judge, human, 2).reason == (
        "undefined: the human labels have one verdict on every case"
    )
    assert weighted_kappa(human * 4, judge * 4, 5) is None


@pytest.mark.parametrize("seed", range(10))
def test_spearman_matches_scipy_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, 40).astype(float)  # many ties
    y = x + rng.normal(0, 2, 40)
    y[::5] = y[1]  # ties on the other side too
    got = spearman(x, y)
    assert got.rho == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    assert got.reason is None


def test_spearman_is_undefined_with_a_reason_never_zero() -> None:
    one = spearman(np.array([1.0]), np.array([0.3]))
    assert (one.rho, one.reason) == (None, "undefined: fewer than two cases")
    flat = spearman(np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.5, 0.5]), ("length", "score"))
    assert (flat.rho, flat.reason) == (None, "undefined: every score is the same")
    with pytest.warns(stats.ConstantInputWarning):  # SciPy agrees: not defined
        assert np.isnan(spearmanr([1.0, 2.0, 3.0], [0.5, 0.5, 0.5]).statistic)


def test_percent_agreement_and_confusion() -> None:
    human = np.array([True, True, False, False, True])
    judge = np.array([True, False, True, False, True])
    assert percent_agreement(human, judge) == pytest.approx(0.6)
    assert confusion(human, judge).as_dict() == {
        "true_pass": 2,
        "true_fail": 1,
        "false_pass": 1,
        "false_fail": 1,
    }
    none = np.zeros(0, dtype=bool)
    assert percent_agreement(none, none) is None  # no case: no share
