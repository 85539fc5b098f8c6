"""The sentence-embedding objectives against the same losses computed in numpy
(sentence-transformers' MultipleNegativesRankingLoss and CosineSimilarityLoss definitions)."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.objectives.embedding import (CosineSimilarityObjective, InBatchNegativesObjective,
                                          column_keys)

RNG = np.random.default_rng(0)


def unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def cross_entropy(logits, targets):
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -log_probs[np.arange(len(targets)), targets]


def mean_loss(objective, embeddings, features):
    outputs = {"embedding": tf.constant(embeddings, tf.float32)}
    (term,) = objective.loss_terms
    numerator = objective.numerators(outputs, features)[term]
    return float(numerator) / float(objective.denominators(features)[term])


def column_features(columns, rows, length=3):
    features = {}
    for column in columns:
        for key in column_keys(column):
            features[key] = tf.ones([rows, length], tf.int32)
    return features


def test_in_batch_negatives_is_scaled_cosine_cross_entropy_against_all_positives():
    anchors, positives = RNG.normal(size=(4, 8)), RNG.normal(size=(4, 8))
    logits = 20.0 * unit(anchors) @ unit(positives).T
    expected = cross_entropy(logits, np.arange(4)).mean()
    loss = mean_loss(InBatchNegativesObjective(), np.concatenate([anchors, positives]),
                     column_features(("anchor", "positive"), 4))
    assert loss == pytest.approx(expected, rel=1e-5)


def test_hard_negatives_join_the_candidates():
    a, p, n = (RNG.normal(size=(3, 8)) for _ in range(3))
    logits = 5.0 * unit(a) @ np.concatenate([unit(p), unit(n)]).T    # [3, 6]
    expected = cross_entropy(logits, np.arange(3)).mean()
    loss = mean_loss(InBatchNegativesObjective(scale=5.0),
                     np.concatenate([a, p, n]),
                     column_features(("anchor", "positive", "negative"), 3))
    assert loss == pytest.approx(expected, rel=1e-5)


def test_symmetric_averages_both_directions():
    a, p = RNG.normal(size=(4, 8)), RNG.normal(size=(4, 8))
    forward = cross_entropy(20.0 * unit(a) @ unit(p).T, np.arange(4))
    backward = cross_entropy(20.0 * unit(p) @ unit(a).T, np.arange(4))
    loss = mean_loss(InBatchNegativesObjective(symmetric=True), np.concatenate([a, p]),
                     column_features(("anchor", "positive"), 4))
    assert loss == pytest.approx(((forward + backward) / 2).mean(), rel=1e-5)


def test_in_batch_accuracy_counts_anchors_whose_best_candidate_is_their_positive():
    a = np.array([[1.0, 0.0], [0.0, 1.0]])
    p = np.array([[1.0, 0.0], [0.9, -0.1]])      # anchor 1's best candidate is positive 0
    outputs = {"embedding": tf.constant(np.concatenate([a, p]), tf.float32)}
    features = column_features(("anchor", "positive"), 2)
    total, count = InBatchNegativesObjective().metrics(outputs, features)["in_batch_accuracy"]
    assert (float(total), float(count)) == (1.0, 2.0)


def test_cosine_similarity_loss_is_squared_error_to_the_score():
    a, b = RNG.normal(size=(5, 8)), RNG.normal(size=(5, 8))
    scores = RNG.uniform(size=5).astype(np.float32)
    cosines = (unit(a) * unit(b)).sum(-1)
    features = dict(column_features(("text_a", "text_b"), 5), score=tf.constant(scores))
    loss = mean_loss(CosineSimilarityObjective(), np.concatenate([a, b]), features)
    assert loss == pytest.approx(np.mean((cosines - scores) ** 2), rel=1e-5)


def test_columns_are_embedded_in_one_model_call():
    features = {"anchor_input_ids": tf.constant([[1, 2]]),
                "positive_input_ids": tf.constant([[3, 4]])}
    for column in ("anchor", "positive"):
        features[f"{column}_input_mask"] = tf.ones([1, 2], tf.int32)
        features[f"{column}_segment_ids"] = tf.zeros([1, 2], tf.int32)
    inputs = InBatchNegativesObjective().model_inputs(features)
    assert inputs["input_ids"].numpy().tolist() == [[1, 2], [3, 4]]


def test_gradient_accumulation_is_refused_with_in_batch_negatives():
    InBatchNegativesObjective.check_accumulation(1)
    with pytest.raises(ValueError, match="micro-batch"):
        InBatchNegativesObjective.check_accumulation(2)
