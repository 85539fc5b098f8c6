"""The pre-training loss as google-research/bert computes it: the masked-LM cross entropy
averaged over the real predictions only (padding slots have weight 0), plus the mean
next-sentence cross entropy."""

import numpy as np
import tensorflow as tf

from bert_tf.objectives.pretraining import PretrainingObjective


def _xent(logits, labels):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return -np.take_along_axis(log_probs, labels[..., None], axis=-1)[..., 0]


def test_masked_lm_loss_averages_over_the_weighted_predictions_only():
    rng = np.random.default_rng(0)
    mlm_logits = rng.normal(size=(2, 4, 7)).astype(np.float32)      # [B, P, vocab]
    nsp_logits = rng.normal(size=(2, 2)).astype(np.float32)
    features = {"input_ids": np.zeros((2, 8), np.int32),
                "masked_lm_ids": rng.integers(0, 7, size=(2, 4)).astype(np.int32),
                # 3 real predictions of 8 slots: padding must not dilute the average
                "masked_lm_weights": np.array([[1, 1, 0, 0], [1, 0, 0, 0]], np.float32),
                "next_sentence_labels": np.array([[0], [1]], np.int32)}
    outputs = {"mlm_logits": tf.constant(mlm_logits), "nsp_logits": tf.constant(nsp_logits)}
    objective = PretrainingObjective()
    numerators = objective.numerators(outputs, features)
    denominators = objective.denominators(features)
    weights = features["masked_lm_weights"]
    expected_mlm = ((weights * _xent(mlm_logits, features["masked_lm_ids"])).sum()
                    / (weights.sum() + 1e-5))
    expected_nsp = _xent(nsp_logits, features["next_sentence_labels"][:, 0]).mean()
    np.testing.assert_allclose(numerators["masked_lm"] / denominators["masked_lm"],
                               expected_mlm, rtol=1e-5)
    np.testing.assert_allclose(numerators["next_sentence"] / denominators["next_sentence"],
                               expected_nsp, rtol=1e-5)
