"""Answer-span extraction (SQuAD) with google-research/bert's loss.

loss = (mean start xent + mean end xent) / 2, each a softmax cross-entropy over all sequence
positions (padding included, as the original) against `start_positions` / `end_positions`
(0, i.e. [CLS], for impossible questions and answers outside the window).
"""

import tensorflow as tf

from bert_tf.objectives.base import Objective

MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids")


def _xent(logits, positions):
    positions = tf.reshape(tf.cast(positions, tf.int32), [-1])                     # [B]
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=positions, logits=tf.cast(logits, tf.float32))                       # [B]


class SpanObjective(Objective):
    metric_names = ("start_accuracy", "end_accuracy", "span_accuracy")
    loss_terms = ("start", "end")

    def model_inputs(self, features):
        return {k: features[k] for k in MODEL_INPUTS if k in features}

    def denominators(self, features):
        # Each half of the loss is a batch mean weighted 1/2.
        batch = 2.0 * tf.cast(tf.shape(features["input_ids"])[0], tf.float32)
        return {"start": batch, "end": batch}

    def numerators(self, outputs, features):
        return {"start": tf.reduce_sum(_xent(outputs["start_logits"],
                                             features["start_positions"])),
                "end": tf.reduce_sum(_xent(outputs["end_logits"], features["end_positions"]))}

    def metrics(self, outputs, features):
        def hits(logits, positions):
            predicted = tf.argmax(logits, axis=-1, output_type=tf.int32)
            gold = tf.reshape(tf.cast(positions, tf.int32), [-1])
            return tf.cast(tf.equal(predicted, gold), tf.float32)                   # [B]

        start = hits(outputs["start_logits"], features["start_positions"])
        end = hits(outputs["end_logits"], features["end_positions"])
        count = tf.cast(tf.size(start), tf.float32)
        return {"start_accuracy": (tf.reduce_sum(start), count),
                "end_accuracy": (tf.reduce_sum(end), count),
                "span_accuracy": (tf.reduce_sum(start * end), count)}
