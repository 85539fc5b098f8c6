"""GLUE and per-class metrics against values worked out by hand (the arithmetic is in each
test)."""

import math

import numpy as np
import pytest

from bert_tf.metrics.classification import (accuracy, compute_metrics, confusion_matrix,
                                            f1_score, majority_prediction, matthews_corrcoef,
                                            metric_labels, pearson_corr, per_class_metrics,
                                            primary_metric, spearman_corr)
from bert_tf.metrics.results import write_confusion_matrix

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


# Four labels; "very good" is never predicted, "n/a" neither predicted nor present.
LABELS = ["pos", "neg", "very good", "n/a"]
MULTI_PRED = [0, 0, 1, 1, 0, 0, 0]
MULTI_GOLD = [0, 0, 0, 1, 1, 2, 2]


def test_confusion_matrix_rows_are_gold_columns_predicted():
    np.testing.assert_array_equal(confusion_matrix(MULTI_PRED, MULTI_GOLD, 4),
                                  [[2, 1, 0, 0], [1, 1, 0, 0], [2, 0, 0, 0], [0, 0, 0, 0]])


def test_per_class_precision_recall_f1_support_and_macro_f1():
    # column sums (predicted) [5, 2, 0, 0], row sums (support) [3, 2, 2, 0], TP [2, 1, 0, 0]
    # F1 = 2TP / (predicted + support): 4/8, 2/4, 0/2, and 0 by convention for "n/a"
    expected = {"precision_pos": 2 / 5, "recall_pos": 2 / 3, "f1_pos": 0.5, "support_pos": 3,
                "precision_neg": 1 / 2, "recall_neg": 1 / 2, "f1_neg": 0.5, "support_neg": 2,
                "precision_very_good": 0.0, "recall_very_good": 0.0, "f1_very_good": 0.0,
                "support_very_good": 2,
                "precision_n_a": 0.0, "recall_n_a": 0.0, "f1_n_a": 0.0, "support_n_a": 0,
                "macro_f1": (0.5 + 0.5 + 0 + 0) / 4}
    values = per_class_metrics(confusion_matrix(MULTI_PRED, MULTI_GOLD, len(LABELS)), LABELS)
    assert values == pytest.approx(expected)
    assert all(type(values[f"support_{n}"]) is int for n in ("pos", "neg", "very_good", "n_a"))


def test_compute_metrics_adds_per_class_metrics_given_the_labels():
    values = compute_metrics("mrpc", PRED, GOLD, ["0", "1"])
    assert {k: values[k] for k in ("eval_accuracy", "f1", "acc_and_f1")} == compute_metrics(
        "mrpc", PRED, GOLD)
    assert values["f1_1"] == values["f1"] and values["f1_0"] == pytest.approx(0.5)
    assert values["macro_f1"] == pytest.approx((2 / 3 + 0.5) / 2)
    assert (values["precision_0"], values["recall_1"]) == pytest.approx((1 / 2, 2 / 3))
    assert compute_metrics("sts-b", [1.0, 2.0], [1.0, 3.0], ["0", "1"]).keys() == {
        "pearson", "spearman", "corr"}


def test_predictions_all_but_one_of_one_class_on_balanced_gold_have_collapsed():
    # 1,000 gold labels half and half; 977 predicted class 1: 97.7% against a gold 50%
    gold = np.repeat([0, 1], 500)
    predictions = np.where(np.arange(1000) < 23, 0, 1)
    majority = majority_prediction(confusion_matrix(predictions, gold, 2))
    assert (majority.class_id, majority.collapsed) == (1, True)
    assert (majority.share, majority.gold_share) == (pytest.approx(0.977), pytest.approx(0.5))


def test_balanced_predictions_have_not_collapsed():
    majority = majority_prediction(confusion_matrix(PRED, GOLD, 2))     # 3 of 5 predict 1
    assert (majority.class_id, majority.share, majority.collapsed) == (1, 0.6, False)


def test_one_class_predictions_on_equally_one_class_gold_have_not_collapsed():
    # gold 96% class 2 and every prediction class 2: 100% is only 4 points above gold
    gold = np.array([2] * 96 + [0] * 4)
    majority = majority_prediction(confusion_matrix(np.full(100, 2), gold, 3))
    assert (majority.class_id, majority.share, majority.gold_share) == (2, 1.0, 0.96)
    assert not majority.collapsed


@pytest.mark.parametrize("gold_count, collapsed", [(85, True), (86, False)])
def test_collapse_needs_ten_points_over_gold_exactly(gold_count, collapsed):
    # 95 of 100 predictions class 1 (the 95% bound itself) against 85 or 86 gold
    gold = np.array([1] * gold_count + [0] * (100 - gold_count))
    predictions = np.array([1] * 95 + [0] * 5)
    assert majority_prediction(confusion_matrix(predictions, gold, 2)).collapsed is collapsed


def test_metric_labels_are_name_safe_and_distinct():
    assert metric_labels(["entailment", "not_entailment", "1", "4.5", "a-b"]) == [
        "entailment", "not_entailment", "1", "4.5", "a-b"]
    assert metric_labels(["very good", "n/a", "", "été"]) == ["very_good", "n_a", "_", "_t_"]
    assert metric_labels(["a b", "a_b", "c"]) == ["a_b_0", "a_b_1", "c"]
    with pytest.raises(ValueError, match="clashing metric names"):
        metric_labels(["a b", "a_b", "a_b_1"])


def test_confusion_matrix_file(tmp_path):
    path = write_confusion_matrix(tmp_path / "cm.tsv", confusion_matrix(MULTI_PRED, MULTI_GOLD, 4),
                                  ["pos", "neg", "very\tgood", "n/a"])
    assert (tmp_path / "cm.tsv").read_text() == (
        "gold/predicted\tpos\tneg\tvery good\tn/a\n"
        "pos\t2\t1\t0\t0\n"
        "neg\t1\t1\t0\t0\n"
        "very good\t2\t0\t0\t0\n"
        "n/a\t0\t0\t0\t0\n")
    assert path == str(tmp_path / "cm.tsv")


@pytest.mark.parametrize("call,match", [
    (lambda: accuracy([1, 0], [1, 0, 1]), "2 predictions for 3 labels"),
    (lambda: accuracy([0.3, 0.9], [1, 0]), "integer class ids"),
    (lambda: accuracy([1, 0], ["1", "0"]), "labels must be integer class ids"),
    (lambda: accuracy(np.zeros(0, int), np.zeros(0, int)), "no examples"),
    (lambda: compute_metrics("squad", [1], [1]), "no metrics for task 'squad'"),
    (lambda: confusion_matrix([0, 2], [0, 1], 2), r"predicted class ids must be in \[0, 2\)"),
])
def test_bad_inputs_are_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()
