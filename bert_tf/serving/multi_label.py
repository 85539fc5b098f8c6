"""The "multi_label" serving head: a BertClassifier trained with run_classifier --multi_label
(K independent sigmoid outputs) -> per-label probabilities and the labels above a threshold.

Outputs (every signature), for a batch of B rows and K labels:
  probabilities  float32 [B, K]  sigmoid of each label's logit
  logits         float32 [B, K]
  selected       bool [B, K]     probability >= threshold
  labels         string [B, K]   label k where selected, else "" (a fixed shape, so the
                                 predicted set of row i is its non-empty strings, in label
                                 order)
The threshold (one for every label, run_classifier's tuned one by default) is recorded in
assets.extra/export_info.json. Only core TensorFlow ops beyond the classifier's.
"""

import tensorflow as tf

from bert_tf.contract import MULTI_LABEL_THRESHOLD
from bert_tf.serving.heads import ClassifierHead, _check_labels


class MultiLabelHead(ClassifierHead):
    """ClassifierHead (same inputs, long-text windows included) with sigmoid outputs."""

    kind = "multi_label"

    def __init__(self, model, vocab_tokens, lower_case, seq_length, labels, text_pair=False,
                 threshold=MULTI_LABEL_THRESHOLD, **windows):
        super().__init__(model, vocab_tokens, lower_case, seq_length, labels, text_pair,
                         **windows)
        threshold = float(threshold)
        if not 0.0 < threshold < 1.0:
            raise ValueError(f"multi-label threshold must be in (0, 1), got {threshold}")
        self.threshold = threshold

    @classmethod
    def build(cls, model, vocab_tokens, lower_case, seq_length, options):
        return cls(model, vocab_tokens, lower_case, seq_length,
                   _check_labels(options.labels, model.num_classes, cls.kind),
                   options.text_pair, options.multi_label_threshold, **options.windows())

    def outputs(self, predictions, features):
        logits = predictions["logits"]
        probabilities = tf.sigmoid(logits)
        selected = probabilities >= self.threshold
        names = tf.broadcast_to(tf.constant(self.labels, tf.string)[tf.newaxis, :],
                                tf.shape(logits))
        return {"probabilities": probabilities, "logits": logits, "selected": selected,
                "labels": tf.where(selected, names, tf.constant("", tf.string))}

    def info(self):
        return dict(super().info(), threshold=self.threshold)
