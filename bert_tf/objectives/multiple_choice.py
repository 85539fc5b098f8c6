"""Multiple choice (SWAG): softmax cross-entropy over the C choice scores of each example."""

import tensorflow as tf

from bert_tf.objectives.base import Objective

MODEL_KEYS = ("input_ids", "input_mask", "segment_ids")


class MultipleChoiceObjective(Objective):
    metric_names = ("accuracy",)
    loss_terms = ("multiple_choice",)

    def model_inputs(self, features):
        # A replica whose input has ended gets an empty batch from tf.distribute; keep one
        # (padding) column so the pooler's [CLS] slice exists.
        def at_least_one_column(x):
            return tf.pad(x, [[0, 0], [0, 0], [0, tf.maximum(1 - tf.shape(x)[2], 0)]])
        return {k: at_least_one_column(features[k]) for k in MODEL_KEYS}

    def denominators(self, features):
        return {"multiple_choice": tf.cast(tf.shape(features["label_ids"])[0], tf.float32)}

    def numerators(self, outputs, features):
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.cast(features["label_ids"], tf.int32),
            logits=tf.cast(outputs["logits"], tf.float32))
        return {"multiple_choice": tf.reduce_sum(xent)}

    def metrics(self, outputs, features):
        predicted = tf.argmax(outputs["logits"], axis=-1, output_type=tf.int32)
        correct = tf.cast(tf.equal(predicted, tf.cast(features["label_ids"], tf.int32)),
                          tf.float32)
        return {"accuracy": (tf.reduce_sum(correct), tf.cast(tf.size(correct), tf.float32))}
