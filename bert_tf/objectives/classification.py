"""Sentence(-pair) classification and regression losses for the trainer.

Classification: mean softmax cross-entropy over the batch (google-research's run_classifier).
Regression (STS-B, num_classes == 1): mean squared error of the single output.
Class weights (--class_weights): the weighted mean sum_i w[y_i] loss_i / sum_i w[y_i].
Long-text windows: the model combines the window logits, so losses are per example as usual.
Multi-label (multi_label=True, label_ids multi-hot [B, K]): sigmoid binary cross-entropy averaged
over the K labels and the examples; the "accuracy" metric is then the exact-match (subset)
accuracy, every label decided at probability 0.5.
"""

import tensorflow as tf

from bert_tf.data.classification.pipeline import MODEL_KEYS
from bert_tf.objectives.base import Objective


class ClassificationObjective(Objective):
    loss_terms = ("classification",)

    def __init__(self, is_regression=False, class_weights=None, multi_label=False):
        self.is_regression = bool(is_regression)
        self.multi_label = bool(multi_label)
        self.metric_names = () if self.is_regression else ("accuracy",)
        self.class_weights = (None if class_weights is None
                              else tf.constant(class_weights, tf.float32))

    def model_inputs(self, features):
        # A replica whose input has ended gets an empty [0, 0] batch from tf.distribute; give
        # it one (padding) column so the pooler's [CLS] slice exists.
        def at_least_one_column(x):
            return tf.pad(x, [[0, 0], [0, tf.maximum(1 - tf.shape(x)[1], 0)]])
        inputs = {k: at_least_one_column(features[k]) for k in MODEL_KEYS}
        if "window_example" in features:
            inputs["window_example"] = features["window_example"]
        return inputs

    def _weights(self, features):
        """[B] float32 loss weights: the class weight of each example's label, or 1."""
        labels = features["label_ids"]
        if self.class_weights is None:
            return tf.ones(tf.shape(labels)[:1], tf.float32)
        return tf.gather(self.class_weights, tf.cast(labels, tf.int32))

    def denominators(self, features):
        return {"classification": tf.reduce_sum(self._weights(features))}

    def numerators(self, outputs, features):
        return {"classification": tf.reduce_sum(self._weights(features) * per_example_loss(
            outputs["logits"], features["label_ids"], self.is_regression, self.multi_label))}

    def metrics(self, outputs, features):
        if self.is_regression:
            return {}
        if self.multi_label:
            wrong = tf.not_equal(tf.cast(outputs["logits"], tf.float32) >= 0.0,
                                 tf.cast(features["label_ids"], tf.float32) > 0.5)
            exact = 1.0 - tf.cast(tf.reduce_any(wrong, axis=-1), tf.float32)
            return {"accuracy": (tf.reduce_sum(exact), tf.cast(tf.size(exact), tf.float32))}
        predicted = tf.argmax(outputs["logits"], axis=-1, output_type=tf.int32)
        correct = tf.cast(tf.equal(predicted, tf.cast(features["label_ids"], tf.int32)),
                          tf.float32)
        counted = self._accuracy_weights(features)
        if counted is None:
            return {"accuracy": (tf.reduce_sum(correct), tf.cast(tf.size(correct), tf.float32))}
        return {"accuracy": (tf.reduce_sum(counted * correct), tf.reduce_sum(counted))}

    def _accuracy_weights(self, features):
        """[B] float32 0/1: which examples the accuracy metric counts (None: all)."""
        return None


def per_example_loss(logits, labels, is_regression, multi_label=False):
    """[B] losses: squared error of logits[:, 0] (regression), softmax cross-entropy, or
    (multi_label) the mean over labels of the sigmoid cross-entropy against multi-hot labels."""
    logits = tf.cast(logits, tf.float32)
    if multi_label:
        return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
            labels=tf.cast(labels, tf.float32), logits=logits), axis=-1)
    if is_regression:
        return tf.square(logits[:, 0] - tf.cast(labels, tf.float32))
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(labels, tf.int32),
                                                          logits=logits)
