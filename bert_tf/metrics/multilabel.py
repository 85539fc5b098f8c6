"""Multi-label classification metrics (run_classifier --multi_label).

Each example has K independent yes/no decisions: label k is predicted when its sigmoid
probability is >= the threshold (one global threshold for every label). From the per-label
true positives, false positives and false negatives:

  micro_precision, micro_recall, micro_f1   counts summed over labels, then the ratio
  macro_precision, macro_recall, macro_f1   the unweighted mean of the per-label values over
                                            all K labels (absent ones included)
  precision_<label>, recall_<label>, f1_<label>, support_<label> (gold count)
  exact_match      subset accuracy: the predicted set equals the gold set (also reported as
                   eval_accuracy, the name plots and the single-label runs use)
  label_accuracy   the fraction of the N x K decisions that are right (1 - Hamming loss)

A ratio whose denominator is 0 is 0.0 (scikit-learn's zero_division=0); F1 is
2TP / (2TP + FP + FN). Label names in keys are those of metrics.classification.metric_labels.

tune_threshold picks the global threshold with the highest micro F1 on a grid (default
0.05, 0.10, ..., 0.95).
"""

import numpy as np

from bert_tf.contract import MULTI_LABEL_THRESHOLD
from bert_tf.metrics.classification import metric_labels

THRESHOLD_GRID = tuple(round(0.05 * i, 2) for i in range(1, 20))


def sigmoid(logits):
    """float64 sigmoid, without overflow for large |logits|."""
    x = np.asarray(logits, np.float64)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def binary_cross_entropy(logits, targets):
    """Sigmoid binary cross-entropy of [N, K] logits against [N, K] 0/1 targets, averaged over
    labels and examples (the training loss)."""
    x = np.asarray(logits, np.float64)
    z = np.asarray(targets, np.float64)
    if x.shape != z.shape:
        raise ValueError(f"logits {x.shape} and targets {z.shape} differ in shape")
    return float(np.mean(np.maximum(x, 0.0) - x * z + np.log1p(np.exp(-np.abs(x)))))


def _check(probabilities, label_ids):
    probabilities = np.asarray(probabilities, np.float64)
    gold = np.asarray(label_ids)
    if probabilities.ndim != 2 or probabilities.shape != gold.shape:
        raise ValueError(f"probabilities {probabilities.shape} and multi-hot labels "
                         f"{gold.shape} must both be [N, K]")
    if len(gold) == 0:
        raise ValueError("no examples to score")
    return probabilities, gold > 0.5


def select(probabilities, threshold):
    """bool [N, K]: the labels predicted at `threshold` (probability >= threshold)."""
    return np.asarray(probabilities) >= threshold


def _ratio(numerator, denominator):
    numerator, denominator = np.asarray(numerator, np.float64), np.asarray(denominator)
    return np.where(denominator > 0, numerator / np.maximum(denominator, 1), 0.0)


def multi_label_metrics(probabilities, label_ids, label_names,
                        threshold=MULTI_LABEL_THRESHOLD):
    """The metrics of the module docstring (plus `threshold`) for [N, K] probabilities and
    multi-hot gold labels [N, K]."""
    probabilities, gold = _check(probabilities, label_ids)
    if probabilities.shape[1] != len(label_names):
        raise ValueError(f"{probabilities.shape[1]} label columns for {len(label_names)} label "
                         f"names")
    predicted = select(probabilities, threshold)
    tp = np.sum(predicted & gold, axis=0)
    fp = np.sum(predicted & ~gold, axis=0)
    fn = np.sum(~predicted & gold, axis=0)
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    f1 = _ratio(2 * tp, 2 * tp + fp + fn)
    total_tp, total_fp, total_fn = int(tp.sum()), int(fp.sum()), int(fn.sum())
    exact = float(np.mean(np.all(predicted == gold, axis=1)))
    results = {
        "micro_precision": float(_ratio(total_tp, total_tp + total_fp)),
        "micro_recall": float(_ratio(total_tp, total_tp + total_fn)),
        "micro_f1": float(_ratio(2 * total_tp, 2 * total_tp + total_fp + total_fn)),
        "macro_precision": float(np.mean(precision)),
        "macro_recall": float(np.mean(recall)),
        "macro_f1": float(np.mean(f1)),
        "exact_match": exact,
        "eval_accuracy": exact,
        "label_accuracy": float(np.mean(predicted == gold)),
        "threshold": float(threshold),
    }
    for k, name in enumerate(metric_labels(label_names)):
        results.update({f"precision_{name}": float(precision[k]),
                        f"recall_{name}": float(recall[k]), f"f1_{name}": float(f1[k]),
                        f"support_{name}": int(tp[k] + fn[k])})
    return results


def micro_f1_by_threshold(probabilities, label_ids, grid=THRESHOLD_GRID):
    """{threshold: micro F1} for every threshold of `grid`."""
    probabilities, gold = _check(probabilities, label_ids)
    scores = {}
    for threshold in grid:
        predicted = select(probabilities, threshold)
        tp = int(np.sum(predicted & gold))
        wrong = int(np.sum(predicted != gold))          # false positives + false negatives
        scores[float(threshold)] = 2 * tp / (2 * tp + wrong) if tp + wrong else 0.0
    return scores


def tune_threshold(probabilities, label_ids, grid=THRESHOLD_GRID,
                   prefer=MULTI_LABEL_THRESHOLD):
    """(threshold, {threshold: micro F1}): the grid threshold with the highest micro F1. Among
    equally good thresholds (a plateau, common on small or well-separated data) the one
    closest to `prefer` wins, then the lower one."""
    if not len(grid):
        raise ValueError("empty threshold grid")
    scores = micro_f1_by_threshold(probabilities, label_ids, grid)
    best = max(scores.values())
    tied = [t for t, score in scores.items() if score >= best - 1e-12]
    return min(tied, key=lambda t: (abs(t - prefer), t)), scores
