"""Token classification (NER): softmax cross-entropy on each word's first sub-token.

loss = sum(w * xent) / max(sum(w), 1) over the batch, w = label_weights (1 on first sub-tokens,
0 on other sub-tokens, [CLS], [SEP] and padding): the mean over labelled words.

With class weights c (one per label, --class_weights): w_i = label_weights_i * c[label_i] and
loss = sum(w * xent) / sum(w), the weighted mean over labelled words (1 as denominator for a
batch without labelled words); accuracy stays unweighted.
"""

import numpy as np
import tensorflow as tf

from bert_tf.objectives.base import Objective

MODEL_KEYS = ("input_ids", "input_mask", "segment_ids")


class TaggingObjective(Objective):
    metric_names = ("accuracy",)
    loss_terms = ("tagging",)

    def __init__(self, class_weights=None):
        self.class_weights = (None if class_weights is None
                              else np.asarray(class_weights, np.float32))

    def model_inputs(self, features):
        return {k: features[k] for k in MODEL_KEYS}

    def _loss_weights(self, features):
        """[B, S] weight of each position's cross-entropy in the loss."""
        weights = tf.cast(features["label_weights"], tf.float32)
        if self.class_weights is None:
            return weights
        per_label = tf.gather(tf.constant(self.class_weights),
                              tf.cast(features["label_ids"], tf.int32))
        return weights * per_label

    def denominators(self, features):
        counted = tf.reduce_sum(tf.cast(features["label_weights"], tf.float32))
        if self.class_weights is None:
            return {"tagging": tf.maximum(counted, 1.0)}
        return {"tagging": tf.where(counted > 0, tf.reduce_sum(self._loss_weights(features)),
                                    1.0)}

    def _xent(self, outputs, features):
        return tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.cast(features["label_ids"], tf.int32),
            logits=tf.cast(outputs["logits"], tf.float32))                       # [B, S]

    def numerators(self, outputs, features):
        return {"tagging": tf.reduce_sum(self._loss_weights(features)
                                         * self._xent(outputs, features))}

    def metrics(self, outputs, features):
        weights = tf.cast(features["label_weights"], tf.float32)
        predicted = tf.argmax(outputs["logits"], axis=-1, output_type=tf.int32)
        correct = tf.cast(tf.equal(predicted, tf.cast(features["label_ids"], tf.int32)),
                          tf.float32)
        return {"accuracy": (tf.reduce_sum(weights * correct), tf.reduce_sum(weights))}
