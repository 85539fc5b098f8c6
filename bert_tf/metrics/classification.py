"""GLUE metrics as GLUE defines them, and the per-task set run_classifier reports.

accuracy everywhere for classification; F1 of class 1 for MRPC and QQP; Matthews correlation
for CoLA; Pearson and Spearman (average ranks for ties) for STS-B. MNLI matched and
mismatched are two evaluations by the caller ("mnli" and "mnli-mm" here).

Predictions may be class ids [n] or scores [n, num_classes] (argmax taken); regression
predictions are [n] or [n, 1]. Labels are class ids or float targets.
"""

import math

import numpy as np
from scipy.stats import rankdata

_ACCURACY_TASKS = ("sst-2", "mnli", "mnli-mm", "qnli", "rte", "wnli", "ax", "xnli",
                   "classification")
_F1_TASKS = ("mrpc", "qqp")
_CORR_TASKS = ("sts-b", "regression")
TASK_NAMES = ("cola",) + _ACCURACY_TASKS + _F1_TASKS + _CORR_TASKS

_ALIASES = {"sst2": "sst-2", "stsb": "sts-b", "mnli-m": "mnli", "mnli-matched": "mnli",
            "mnli-mismatched": "mnli-mm", "diagnostic": "ax"}

PRIMARY_METRIC = {**{t: "eval_accuracy" for t in _ACCURACY_TASKS}, "cola": "mcc",
                  **{t: "acc_and_f1" for t in _F1_TASKS}, **{t: "corr" for t in _CORR_TASKS}}


def _task(name):
    key = str(name).strip().lower().replace("_", "-")
    key = _ALIASES.get(key, key)
    if key not in TASK_NAMES:
        raise ValueError(f"no metrics for task {name!r}; known: {', '.join(TASK_NAMES)}")
    return key


def _pair(predictions, labels):
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {labels.shape}")
    if len(predictions) != len(labels):
        raise ValueError(f"{len(predictions)} predictions for {len(labels)} labels")
    if len(labels) == 0:
        raise ValueError("no examples to score")
    return predictions, labels


def class_ids(predictions):
    """Class ids from ids [n] or scores [n, num_classes]."""
    predictions = np.asarray(predictions)
    if predictions.ndim == 2:
        return predictions.argmax(axis=-1)
    if predictions.ndim == 1 and np.issubdtype(predictions.dtype, np.integer):
        return predictions
    raise ValueError("classification predictions must be integer class ids [n] or scores "
                     f"[n, num_classes]; got {predictions.dtype} of shape {predictions.shape}")


def _id_pair(predictions, labels):
    predictions, labels = _pair(class_ids(predictions), labels)
    if not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"classification labels must be integer class ids, got {labels.dtype}")
    return predictions, labels


def _scores(predictions):
    predictions = np.asarray(predictions, dtype=np.float64)
    if predictions.ndim == 2 and predictions.shape[1] == 1:
        predictions = predictions[:, 0]
    if predictions.ndim != 1:
        raise ValueError(f"regression predictions must be [n] or [n, 1], got shape "
                         f"{predictions.shape}")
    return predictions


def accuracy(predictions, labels):
    """Fraction of exact matches."""
    predictions, labels = _id_pair(predictions, labels)
    return float(np.mean(predictions == labels))


def f1_score(predictions, labels, positive=1):
    """F1 of the `positive` class: 2TP / (2TP + FP + FN); 0.0 when there is no TP, FP or FN
    at all (no positive predicted nor present), as scikit-learn reports it."""
    predictions, labels = _id_pair(predictions, labels)
    tp = np.sum((predictions == positive) & (labels == positive))
    fp = np.sum((predictions == positive) & (labels != positive))
    fn = np.sum((predictions != positive) & (labels == positive))
    denominator = 2 * tp + fp + fn
    return float(2 * tp / denominator) if denominator else 0.0


def matthews_corrcoef(predictions, labels):
    """Matthews correlation (the multi-class form, equal to the binary phi coefficient for two
    classes); 0.0 when it is undefined (all predictions or all labels one class)."""
    predictions, labels = _id_pair(predictions, labels)
    classes = np.union1d(predictions, labels)
    pred = np.searchsorted(classes, predictions)
    true = np.searchsorted(classes, labels)
    confusion = np.zeros((len(classes), len(classes)), dtype=np.float64)
    np.add.at(confusion, (true, pred), 1.0)
    n, correct = confusion.sum(), np.trace(confusion)
    true_counts, pred_counts = confusion.sum(axis=1), confusion.sum(axis=0)
    numerator = correct * n - np.dot(pred_counts, true_counts)
    denominator = math.sqrt((n * n - np.dot(pred_counts, pred_counts))
                            * (n * n - np.dot(true_counts, true_counts)))
    return float(numerator / denominator) if denominator else 0.0


def pearson_corr(predictions, labels):
    """Pearson correlation; NaN when either side is constant (undefined)."""
    x, y = _pair(_scores(predictions), np.asarray(labels, dtype=np.float64))
    x, y = x - x.mean(), y - y.mean()
    denominator = math.sqrt(np.dot(x, x) * np.dot(y, y))
    return float(np.dot(x, y) / denominator) if denominator else math.nan


def spearman_corr(predictions, labels):
    """Spearman correlation: Pearson of the ranks, tied values sharing their average rank."""
    x, y = _pair(_scores(predictions), np.asarray(labels, dtype=np.float64))
    return pearson_corr(rankdata(x, method="average"), rankdata(y, method="average"))


def compute_metrics(task, predictions, labels):
    """The metrics run_classifier reports for `task`, keyed as users of google-research/bert
    and HuggingFace expect:
      classification: eval_accuracy; CoLA adds mcc; MRPC/QQP add f1 and acc_and_f1 (their mean)
      STS-B / regression: pearson, spearman and corr (their mean)
    `task` is a GLUE/XNLI task name, or "classification"/"regression" for custom data.
    """
    task = _task(task)
    if task in _CORR_TASKS:
        pearson, spearman = pearson_corr(predictions, labels), spearman_corr(predictions, labels)
        return {"pearson": pearson, "spearman": spearman, "corr": (pearson + spearman) / 2}
    results = {"eval_accuracy": accuracy(predictions, labels)}
    if task == "cola":
        results["mcc"] = matthews_corrcoef(predictions, labels)
    if task in _F1_TASKS:
        results["f1"] = f1_score(predictions, labels)
        results["acc_and_f1"] = (results["eval_accuracy"] + results["f1"]) / 2
    return results


def primary_metric(task):
    """The compute_metrics key that ranks checkpoints for `task` (GLUE's score component)."""
    return PRIMARY_METRIC[_task(task)]
