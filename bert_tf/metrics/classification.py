"""GLUE metrics as GLUE defines them, and the per-task set run_classifier reports.

accuracy everywhere for classification; F1 of class 1 for MRPC and QQP; Matthews correlation
for CoLA; Pearson and Spearman (average ranks for ties) for STS-B. MNLI matched and
mismatched are two evaluations by the caller ("mnli" and "mnli-mm" here).

Given the label list, every classification task also gets per-class precision, recall, F1
and support and their macro F1 (per_class_metrics), from the confusion matrix, and whether
the predictions collapsed to one class (majority_prediction).

Predictions may be class ids [n] or scores [n, num_classes] (argmax taken); regression
predictions are [n] or [n, 1]. Labels are class ids or float targets.
"""

import math
import re
from dataclasses import dataclass

import numpy as np
from scipy.stats import pearsonr, spearmanr

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


def confusion_matrix(predictions, labels, num_classes):
    """[num_classes, num_classes] int64 counts: row = gold class id, column = predicted."""
    predictions, labels = _id_pair(predictions, labels)
    for name, ids in (("predicted", predictions), ("gold", labels)):
        if ids.min() < 0 or ids.max() >= num_classes:
            raise ValueError(f"{name} class ids must be in [0, {num_classes}), got "
                             f"{ids.min()}..{ids.max()}")
    counts = np.bincount(labels * num_classes + predictions, minlength=num_classes ** 2)
    return counts.reshape(num_classes, num_classes)


def metric_labels(label_names):
    """The label strings as they appear in metric names: each run of characters other than
    ASCII letters, digits, '_', '.' and '-' becomes '_' ("very good" -> "very_good", "" -> "_");
    labels that would then share a name get "_<label id>" appended."""
    names = [re.sub(r"[^0-9A-Za-z_.-]+", "_", str(label)) or "_" for label in label_names]
    names = [f"{name}_{i}" if names.count(name) > 1 else name for i, name in enumerate(names)]
    if len(set(names)) != len(names):
        raise ValueError(f"labels {list(label_names)} give clashing metric names {names}")
    return names


def per_class_metrics(confusion, label_names):
    """From a confusion_matrix: precision_<label>, recall_<label>, f1_<label> and
    support_<label> (gold count) for every label of `label_names` (index = class id; names
    from metric_labels), and macro_f1,
    the unweighted mean of the per-class F1 over all of them (absent classes included). A ratio
    whose denominator is 0 is 0.0: precision of a class never predicted, recall of a class
    absent from the gold labels, F1 = 2TP / (2TP + FP + FN) of a class neither predicted nor
    present (scikit-learn's zero_division=0)."""
    tp = np.diag(confusion)
    predicted, support = confusion.sum(axis=0), confusion.sum(axis=1)

    def ratio(numerator, denominator):
        return [float(n / d) if d else 0.0 for n, d in zip(numerator, denominator)]

    precision, recall = ratio(tp, predicted), ratio(tp, support)
    f1 = ratio(2 * tp, predicted + support)
    results = {}
    for i, name in enumerate(metric_labels(label_names)):
        results.update({f"precision_{name}": precision[i], f"recall_{name}": recall[i],
                        f"f1_{name}": f1[i], f"support_{name}": int(support[i])})
    results["macro_f1"] = float(np.mean(f1))
    return results


@dataclass(frozen=True)
class MajorityPrediction:
    """The most common predicted class of an evaluation: its id, its share of the predictions
    and its share of the gold labels. `collapsed`: it takes at least 95% of the predictions and
    at least 10 points more than of the gold labels (a dev set that is itself 96% one class does
    not count) -- a model that learnt to answer one class whatever the input."""

    class_id: int
    share: float
    gold_share: float
    collapsed: bool


def majority_prediction(confusion):
    """MajorityPrediction of a confusion_matrix (the lowest class id among equally common)."""
    confusion = np.asarray(confusion)
    predicted, gold, n = confusion.sum(axis=0), confusion.sum(axis=1), int(confusion.sum())
    if n == 0:
        raise ValueError("no examples to score")
    top = int(predicted.argmax())
    count, gold_count = int(predicted[top]), int(gold[top])
    # in integer counts, so that 95% and 10 points are exact: count/n >= 0.95 and
    # (count - gold_count)/n >= 0.10
    collapsed = 20 * count >= 19 * n and 10 * (count - gold_count) >= n
    return MajorityPrediction(top, count / n, gold_count / n, collapsed)


def pearson_corr(predictions, labels):
    """Pearson correlation (scipy's); NaN when either side is constant (undefined)."""
    x, y = _pair(_scores(predictions), np.asarray(labels, dtype=np.float64))
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(pearsonr(x, y).statistic)


def spearman_corr(predictions, labels):
    """Spearman correlation (scipy's), tied values sharing their average rank; NaN when either
    side is constant."""
    x, y = _pair(_scores(predictions), np.asarray(labels, dtype=np.float64))
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(spearmanr(x, y).statistic)


def compute_metrics(task, predictions, labels, label_names=None):
    """The metrics run_classifier reports for `task`, keyed as users of google-research/bert
    and HuggingFace expect:
      classification: eval_accuracy; CoLA adds mcc; MRPC/QQP add f1 and acc_and_f1 (their mean)
      STS-B / regression: pearson, spearman and corr (their mean)
    `task` is a GLUE/XNLI task name, or "classification"/"regression" for custom data. With
    `label_names` (the label strings by class id, at least 2), classification adds
    per_class_metrics.
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
    if label_names is not None and len(label_names) >= 2:
        results.update(per_class_metrics(
            confusion_matrix(predictions, labels, len(label_names)), label_names))
    return results


def primary_metric(task):
    """The compute_metrics key that ranks checkpoints for `task` (GLUE's score component)."""
    return PRIMARY_METRIC[_task(task)]
