"""GLUE metrics against values worked out by hand (the arithmetic is in each test)."""

import math

import numpy as np
import pytest

from bert_tf.metrics.classification import (accuracy, compute_metrics, f1_score,
                                            matthews_corrcoef, pearson_corr, primary_metric,
                                            spearman_corr)

# TP at 0 and 3, TN at 1, FP at 2, FN at 4.
PRED = [1, 0, 1, 1, 0]
GOLD = [1, 0, 0, 1, 1]


def test_accuracy():
    assert accuracy(PRED, GOLD) == pytest.approx(3 / 5)


def test_f1_of_class_one():
    # 2TP / (2TP + FP + FN) = 4 / (4 + 1 + 1)
    assert f1_score(PRED, GOLD) == pytest.approx(2 / 3)
    # class 0: TP=1 (row 1), FP=1 (row 4), FN=1 (row 2) -> 2 / 4
    assert f1_score(PRED, GOLD, positive=0) == pytest.approx(0.5)


def test_f1_without_any_positive_is_zero():
    assert f1_score([0, 0], [0, 0]) == 0.0


def test_matthews_binary():
    # (TP*TN - FP*FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) = (2 - 1) / sqrt(3*3*2*2) = 1/6
    assert matthews_corrcoef(PRED, GOLD) == pytest.approx(1 / 6)


def test_matthews_multiclass():
    # confusion (rows true, cols predicted) [[1,0,1],[1,1,0],[0,1,1]]: trace 3, n 6, all row and
    # column sums 2 -> (3*6 - 12) / sqrt((36 - 12) * (36 - 12)) = 6 / 24
    assert matthews_corrcoef([0, 1, 2, 0, 1, 2], [0, 1, 2, 1, 2, 0]) == pytest.approx(0.25)


def test_matthews_extremes():
    assert matthews_corrcoef([0, 1, 1, 0], [0, 1, 1, 0]) == pytest.approx(1.0)
    assert matthews_corrcoef([1, 0, 0, 1], [0, 1, 1, 0]) == pytest.approx(-1.0)
    assert matthews_corrcoef([1, 1, 1, 1], [0, 1, 1, 0]) == 0.0  # undefined -> 0, as sklearn


def test_pearson():
    # x - mean = [-1.5, -.5, .5, 1.5], y - mean = [-3, -1, 0, 4]:
    # sum xy = 11, sum x^2 = 5, sum y^2 = 26 -> 11 / sqrt(130)
    assert pearson_corr([1, 2, 3, 4], [2, 4, 5, 9]) == pytest.approx(11 / math.sqrt(130))


def test_spearman_gives_ties_their_average_rank():
    # ranks x = [1, 2.5, 2.5, 4], y = [1, 3, 2, 4] -> centred [-1.5, 0, 0, 1.5] and
    # [-1.5, .5, -.5, 1.5]: 4.5 / sqrt(4.5 * 5) = sqrt(0.9); ordinal ranks would give 0.8
    assert spearman_corr([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(math.sqrt(0.9))


def test_spearman_matches_scipy_on_random_data_with_ties():
    from scipy.stats import spearmanr
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 6, 200).astype(float), rng.normal(size=200)
    assert spearman_corr(x, y) == pytest.approx(spearmanr(x, y).statistic)


def test_constant_predictions_have_no_correlation():
    assert math.isnan(pearson_corr([2.0, 2.0, 2.0], [1.0, 2.0, 3.0]))


def test_compute_metrics_keys_and_values():
    assert compute_metrics("sst-2", PRED, GOLD) == pytest.approx({"eval_accuracy": 0.6})
    assert compute_metrics("MRPC", PRED, GOLD) == pytest.approx(
        {"eval_accuracy": 0.6, "f1": 2 / 3, "acc_and_f1": (0.6 + 2 / 3) / 2})
    assert compute_metrics("qqp", PRED, GOLD).keys() == {"eval_accuracy", "f1", "acc_and_f1"}
    assert compute_metrics("cola", PRED, GOLD) == pytest.approx(
        {"eval_accuracy": 0.6, "mcc": 1 / 6})
    stsb = compute_metrics("sts-b", [1, 2, 2, 3], [1, 3, 2, 4])
    # pearson: centred [-1, 0, 0, 1] . [-1.5, .5, -.5, 1.5] = 3 over sqrt(2 * 5)
    assert stsb == pytest.approx({"pearson": 3 / math.sqrt(10), "spearman": math.sqrt(0.9),
                                  "corr": (3 / math.sqrt(10) + math.sqrt(0.9)) / 2})


def test_mnli_matched_and_mismatched_are_separate_accuracy_evaluations():
    assert compute_metrics("mnli", [0, 1, 2], [0, 1, 1]) == pytest.approx(
        {"eval_accuracy": 2 / 3})
    assert compute_metrics("mnli-mm", [0, 1, 2], [2, 1, 0]) == pytest.approx(
        {"eval_accuracy": 1 / 3})


def test_scores_are_argmaxed_and_regression_column_squeezed():
    logits = np.array([[0.2, 0.8], [3.0, -1.0], [0.1, 0.3], [0.0, 5.0], [1.0, 0.0]])
    assert compute_metrics("mrpc", logits, GOLD) == compute_metrics("mrpc", PRED, GOLD)
    assert compute_metrics("sts-b", [[1.0], [2.0], [2.0], [3.0]], [1, 3, 2, 4])[
        "spearman"] == pytest.approx(math.sqrt(0.9))


def test_primary_metrics():
    assert [primary_metric(t) for t in ("cola", "sst-2", "mrpc", "qqp", "sts-b", "mnli",
                                        "xnli", "classification", "regression")] == [
        "mcc", "eval_accuracy", "acc_and_f1", "acc_and_f1", "corr", "eval_accuracy",
        "eval_accuracy", "eval_accuracy", "corr"]


@pytest.mark.parametrize("call,match", [
    (lambda: accuracy([1, 0], [1, 0, 1]), "2 predictions for 3 labels"),
    (lambda: accuracy([0.3, 0.9], [1, 0]), "integer class ids"),
    (lambda: accuracy([1, 0], ["1", "0"]), "labels must be integer class ids"),
    (lambda: accuracy(np.zeros(0, int), np.zeros(0, int)), "no examples"),
    (lambda: compute_metrics("squad", [1], [1]), "no metrics for task 'squad'"),
])
def test_bad_inputs_are_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()
