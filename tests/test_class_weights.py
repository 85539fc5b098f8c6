"""--class_weights: 'auto' balances the classes of the real training labels, explicit weights are
checked against the label list, and the classifier's loss becomes the weighted mean."""

import csv

import numpy as np
import pytest
import tensorflow as tf

from helpers import shared_path


def sst2_labels(limit=2000):
    with open(shared_path("data/glue/SST-2/train.tsv"), encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:limit + 1]
    return np.array([int(r[1]) for r in rows])


def test_auto_gives_each_class_the_same_total_weight():
    from bert_tf.training.class_weights import resolve_class_weights
    labels = sst2_labels()
    keep = np.concatenate([np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)[:100]])
    imbalanced = labels[keep]                                   # ~10:1 positives
    weights = resolve_class_weights("auto", ["0", "1"], imbalanced)
    totals = [weights[k] * np.sum(imbalanced == k) for k in (0, 1)]
    np.testing.assert_allclose(totals, [len(imbalanced) / 2] * 2, rtol=1e-6)
    assert weights[0] > 5 * weights[1]


def test_explicit_weights_must_match_the_labels():
    from bert_tf.training.class_weights import resolve_class_weights
    np.testing.assert_allclose(resolve_class_weights("1,4.5", ["a", "b"]), [1.0, 4.5])
    with pytest.raises(ValueError, match="3 weights for 2 labels"):
        resolve_class_weights("1,2,3", ["a", "b"])
    with pytest.raises(ValueError, match="> 0"):
        resolve_class_weights("1,0", ["a", "b"])
    with pytest.raises(ValueError, match="comma-separated numbers"):
        resolve_class_weights("1,x", ["a", "b"])


def test_auto_needs_every_label_in_the_training_data():
    from bert_tf.training.class_weights import resolve_class_weights
    with pytest.raises(ValueError, match=r"\['c'\] never occur"):
        resolve_class_weights("auto", ["a", "b", "c"], np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="needs --do_train"):
        resolve_class_weights("auto", ["a", "b"], None)


def test_weighted_loss_is_the_weighted_mean_cross_entropy():
    from bert_tf.tasks.classification import ClassificationTask
    logits = np.array([[2.0, -1.0], [0.5, 0.2], [-1.0, 1.5], [0.0, 0.0]], np.float32)
    labels = np.array([0, 1, 1, 0], np.int32)
    weights = np.array([3.0, 0.5], np.float32)
    task = ClassificationTask(class_weights=weights)
    features = {"label_ids": tf.constant(labels)}
    loss = (task.numerators({"logits": tf.constant(logits)}, features)["classification"]
            / task.denominators(features)["classification"]).numpy()
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    per_example = -log_probs[np.arange(4), labels]
    expected = np.sum(weights[labels] * per_example) / np.sum(weights[labels])
    assert loss == pytest.approx(expected, rel=1e-5)
    unweighted = ClassificationTask()
    plain = (unweighted.numerators({"logits": tf.constant(logits)}, features)["classification"]
             / unweighted.denominators(features)["classification"]).numpy()
    assert plain == pytest.approx(per_example.mean(), rel=1e-5)
