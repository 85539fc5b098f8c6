"""Sentence(-pair) classification and regression losses for the trainer.

Classification: mean softmax cross-entropy over the batch (google-research's run_classifier).
Regression (STS-B, num_classes == 1): mean squared error of the single output.
"""

import tensorflow as tf

from bert_tf.data.classification.pipeline import MODEL_KEYS
from bert_tf.training.task import Task


class ClassificationTask(Task):
    loss_terms = ("classification",)

    def __init__(self, is_regression=False):
        self.is_regression = bool(is_regression)
        self.metric_names = () if self.is_regression else ("accuracy",)

    def model_inputs(self, features):
        # A replica whose input has ended gets an empty [0, 0] batch from tf.distribute; give
        # it one (padding) column so the pooler's [CLS] slice exists.
        def at_least_one_column(x):
            return tf.pad(x, [[0, 0], [0, tf.maximum(1 - tf.shape(x)[1], 0)]])
        return {k: at_least_one_column(features[k]) for k in MODEL_KEYS}

    def denominators(self, features):
        return {"classification": tf.cast(tf.shape(features["label_ids"])[0], tf.float32)}

    def numerators(self, outputs, features):
        return {"classification": tf.reduce_sum(per_example_loss(
            outputs["logits"], features["label_ids"], self.is_regression))}

    def metrics(self, outputs, features):
        if self.is_regression:
            return {}
        predicted = tf.argmax(outputs["logits"], axis=-1, output_type=tf.int32)
        correct = tf.cast(tf.equal(predicted, tf.cast(features["label_ids"], tf.int32)),
                          tf.float32)
        return {"accuracy": (tf.reduce_sum(correct), tf.cast(tf.size(correct), tf.float32))}


def per_example_loss(logits, labels, is_regression):
    """[B] losses: squared error of logits[:, 0] (regression) or softmax cross-entropy."""
    logits = tf.cast(logits, tf.float32)
    if is_regression:
        return tf.square(logits[:, 0] - tf.cast(labels, tf.float32))
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(labels, tf.int32),
                                                          logits=logits)
