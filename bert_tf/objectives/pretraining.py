"""Masked LM + next-sentence prediction, with google-research/bert's losses and eval metrics.

masked-LM loss = sum(w * xent) / (sum(w) + 1e-5) over the masked positions (w =
masked_lm_weights, 0 for padding); next-sentence loss = mean xent; total = their sum.
"""

import tensorflow as tf

from bert_tf.objectives.base import Objective


def _xent(logits, labels):
    return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(labels, tf.int32),
                                                          logits=tf.cast(logits, tf.float32))


class PretrainingObjective(Objective):
    metric_names = ("masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
                    "next_sentence_loss")

    loss_terms = ("masked_lm", "next_sentence")

    def __init__(self, use_next_sentence=True):
        self.use_next_sentence = use_next_sentence
        if not use_next_sentence:
            self.metric_names = self.metric_names[:2]
            self.loss_terms = self.loss_terms[:1]

    def denominators(self, features):
        weights = tf.cast(features["masked_lm_weights"], tf.float32)
        terms = {"masked_lm": tf.reduce_sum(weights) + 1e-5}
        if self.use_next_sentence:
            terms["next_sentence"] = tf.cast(tf.shape(features["input_ids"])[0], tf.float32)
        return terms

    def _parts(self, outputs, features):
        weights = tf.cast(features["masked_lm_weights"], tf.float32)
        mlm_xent = _xent(outputs["mlm_logits"], features["masked_lm_ids"])       # [B, P]
        parts = {"weights": weights, "mlm_xent": mlm_xent}
        if self.use_next_sentence:
            labels = tf.reshape(features["next_sentence_labels"], [-1])
            parts["nsp_xent"] = _xent(outputs["nsp_logits"], labels)             # [B]
            parts["nsp_labels"] = labels
        return parts

    def numerators(self, outputs, features):
        p = self._parts(outputs, features)
        terms = {"masked_lm": tf.reduce_sum(p["weights"] * p["mlm_xent"])}
        if self.use_next_sentence:
            terms["next_sentence"] = tf.reduce_sum(p["nsp_xent"])
        return terms

    def metrics(self, outputs, features):
        p = self._parts(outputs, features)
        weights = p["weights"]
        predicted = tf.argmax(outputs["mlm_logits"], axis=-1, output_type=tf.int32)
        correct = tf.cast(tf.equal(predicted, tf.cast(features["masked_lm_ids"], tf.int32)),
                          tf.float32)
        total_weight = tf.reduce_sum(weights)
        values = {"masked_lm_accuracy": (tf.reduce_sum(weights * correct), total_weight),
                  "masked_lm_loss": (tf.reduce_sum(weights * p["mlm_xent"]), total_weight)}
        if self.use_next_sentence:
            nsp_pred = tf.argmax(outputs["nsp_logits"], axis=-1, output_type=tf.int32)
            nsp_correct = tf.cast(tf.equal(nsp_pred, tf.cast(p["nsp_labels"], tf.int32)),
                                  tf.float32)
            count = tf.cast(tf.size(p["nsp_labels"]), tf.float32)
            values["next_sentence_accuracy"] = (tf.reduce_sum(nsp_correct), count)
            values["next_sentence_loss"] = (tf.reduce_sum(p["nsp_xent"]), count)
        return values
