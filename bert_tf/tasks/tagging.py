"""Token classification (NER): softmax cross-entropy on each word's first sub-token.

loss = sum(w * xent) / max(sum(w), 1) over the batch, w = label_weights (1 on first sub-tokens,
0 on other sub-tokens, [CLS], [SEP] and padding): the mean over labelled words.
"""

import tensorflow as tf

from bert_tf.training.task import Task

MODEL_KEYS = ("input_ids", "input_mask", "segment_ids")


class TaggingTask(Task):
    metric_names = ("accuracy",)
    loss_terms = ("tagging",)

    def model_inputs(self, features):
        return {k: features[k] for k in MODEL_KEYS}

    def denominators(self, features):
        weights = tf.cast(features["label_weights"], tf.float32)
        return {"tagging": tf.maximum(tf.reduce_sum(weights), 1.0)}

    def _xent(self, outputs, features):
        return tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.cast(features["label_ids"], tf.int32),
            logits=tf.cast(outputs["logits"], tf.float32))                       # [B, S]

    def numerators(self, outputs, features):
        weights = tf.cast(features["label_weights"], tf.float32)
        return {"tagging": tf.reduce_sum(weights * self._xent(outputs, features))}

    def metrics(self, outputs, features):
        weights = tf.cast(features["label_weights"], tf.float32)
        predicted = tf.argmax(outputs["logits"], axis=-1, output_type=tf.int32)
        correct = tf.cast(tf.equal(predicted, tf.cast(features["label_ids"], tf.int32)),
                          tf.float32)
        return {"accuracy": (tf.reduce_sum(weights * correct), tf.reduce_sum(weights))}
