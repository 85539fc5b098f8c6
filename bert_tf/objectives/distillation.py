"""Task distillation: the classification objective with a second term, the student's distance
to a frozen teacher's outputs (the `teacher_logits` [B, C] feature, computed once per training
example before training, bert_tf.jobs.distillation), and optionally a third, its distance to
the teacher's intermediate [CLS] vectors (`teacher_cls` [B, L, H]).

loss = (1 - alpha) * hard + alpha * soft + beta * hidden, where hard is
ClassificationObjective's loss on the gold labels (class-weighted when asked), soft the mean
over the batch of
  classification: KL(softmax(teacher / T) || softmax(student / T)) * T^2 (Hinton et al.: the
                  T^2 keeps the soft gradients' scale as T changes);
  regression:     (student - teacher)^2, the squared distance to the teacher's score;
and hidden the mean over the batch of sum_l |s_l / |s_l| - t_l / |t_l||^2, s_l the [CLS]
vector of the student's block l (the model's `layer_cls` output) and t_l that of the teacher
block it is matched to (Sun et al. 2019, "Patient Knowledge Distillation": unit vectors, so
the term does not depend on the scale of either model's activations).
Examples of a transfer set (--distill_transfer_file) have no gold label: their `label_weight`
feature is 0, so hard is the mean over the batch's labelled examples only, and so is the
accuracy metric.
Training metrics: accuracy, and each term unweighted (label_loss, distill_loss, hidden_loss).

TaggingDistillationObjective does the same for token classification (run_ner): hard is
TaggingObjective's loss, soft the mean over labelled words (label_weights) of the tempered
KL divergence at each word's first sub-token (`teacher_logits` [B, S, C]).

SpanDistillationObjective does it for answer spans (run_squad): hard is SpanObjective's loss,
soft the mean over the batch of the tempered KL divergences of the start and of the end
distributions over the window's positions (`teacher_start_logits`, `teacher_end_logits`
[B, S]), halved as the hard loss's two terms are.
"""

import tensorflow as tf

from bert_tf.objectives.classification import ClassificationObjective, per_example_loss
from bert_tf.objectives.span import SpanObjective
from bert_tf.objectives.tagging import TaggingObjective


def soft_loss(student_logits, teacher_logits, temperature, is_regression):
    """Soft-target losses of logits [..., C] (see the module docstring): [...], e.g. [B]
    per example, or [B, S] per token."""
    student = tf.cast(student_logits, tf.float32)
    teacher = tf.cast(teacher_logits, tf.float32)
    if is_regression:
        return tf.square(student[:, 0] - teacher[:, 0])
    teacher_log = tf.nn.log_softmax(teacher / temperature, axis=-1)
    student_log = tf.nn.log_softmax(student / temperature, axis=-1)
    kl = tf.reduce_sum(tf.exp(teacher_log) * (teacher_log - student_log), axis=-1)
    return kl * temperature ** 2


def hidden_loss(student_cls, teacher_cls):
    """[B] per-example sums over layers of squared distances between unit [CLS] vectors;
    both [B, L, H]."""
    student = tf.math.l2_normalize(tf.cast(student_cls, tf.float32), axis=-1)
    teacher = tf.math.l2_normalize(tf.cast(teacher_cls, tf.float32), axis=-1)
    return tf.reduce_sum(tf.square(student - teacher), axis=[1, 2])


class DistillationObjective(ClassificationObjective):
    loss_terms = ("classification", "distillation")

    def __init__(self, is_regression, temperature, alpha, class_weights=None, hidden_weight=0.0):
        super().__init__(is_regression, class_weights)
        self.temperature, self.alpha = float(temperature), float(alpha)
        self.hidden_weight = float(hidden_weight)
        self.metric_names = self.metric_names + ("label_loss", "distill_loss")
        if self.hidden_weight:
            self.loss_terms = self.loss_terms + ("hidden",)
            self.metric_names = self.metric_names + ("hidden_loss",)

    def _weights(self, features):
        """[B] class weights, 0 for the transfer set's examples (label_weight)."""
        weights = super()._weights(features)
        if "label_weight" in features:
            weights = weights * tf.cast(features["label_weight"], tf.float32)
        return weights

    def denominators(self, features):
        examples = tf.cast(tf.shape(features["label_ids"])[0], tf.float32)
        found = dict(super().denominators(features), distillation=examples)
        # A batch of transfer examples alone has no labelled one: its hard term is 0 / 1.
        found["classification"] = tf.where(found["classification"] > 0,
                                           found["classification"], 1.0)
        if self.hidden_weight:
            found["hidden"] = examples
        return found

    def _hidden_sum(self, outputs, features):
        return tf.reduce_sum(hidden_loss(outputs["layer_cls"], features["teacher_cls"]))

    def _soft_sum(self, outputs, features):
        return tf.reduce_sum(soft_loss(outputs["logits"], features["teacher_logits"],
                                       self.temperature, self.is_regression))

    def numerators(self, outputs, features):
        hard = super().numerators(outputs, features)["classification"]
        found = {"classification": (1.0 - self.alpha) * hard,
                 "distillation": self.alpha * self._soft_sum(outputs, features)}
        if self.hidden_weight:
            found["hidden"] = self.hidden_weight * self._hidden_sum(outputs, features)
        return found

    def metrics(self, outputs, features):
        weights = self._weights(features)
        hard = tf.reduce_sum(weights * per_example_loss(
            outputs["logits"], features["label_ids"], self.is_regression))
        examples = tf.cast(tf.shape(features["label_ids"])[0], tf.float32)
        found = dict(super().metrics(outputs, features),
                     label_loss=(hard, tf.reduce_sum(weights)),
                     distill_loss=(self._soft_sum(outputs, features), examples))
        if self.hidden_weight:
            found["hidden_loss"] = (self._hidden_sum(outputs, features), examples)
        return found

    def _accuracy_weights(self, features):
        """The labelled examples only: a transfer set's have no gold label."""
        if "label_weight" not in features:
            return None
        return tf.cast(features["label_weight"], tf.float32)


class TaggingDistillationObjective(TaggingObjective):
    """Token classification distilled (see the module docstring): (1 - alpha) * tagging loss +
    alpha * soft loss, means over the batch's words with a gold tag and over all its words.
    Windows of a transfer set (--distill_transfer_file) have no gold tags: their
    `label_weight` feature is 0, so the tagging loss and accuracy skip them."""

    loss_terms = ("tagging", "distillation")
    metric_names = ("accuracy", "label_loss", "distill_loss")

    def __init__(self, temperature, alpha, class_weights=None):
        super().__init__(class_weights)
        self.temperature, self.alpha = float(temperature), float(alpha)

    @staticmethod
    def _gold(features):
        """`features` with label_weights [B, S] kept at words with a gold tag only."""
        if "label_weight" not in features:
            return features
        gold = (tf.cast(features["label_weights"], tf.float32)
                * tf.cast(features["label_weight"], tf.float32)[:, None])
        return dict(features, label_weights=gold)

    def denominators(self, features):
        words = tf.reduce_sum(tf.cast(features["label_weights"], tf.float32))
        return dict(super().denominators(self._gold(features)),
                    distillation=tf.maximum(words, 1.0))

    def _soft_sum(self, outputs, features):
        soft = soft_loss(outputs["logits"], features["teacher_logits"], self.temperature,
                         is_regression=False)                                      # [B, S]
        return tf.reduce_sum(tf.cast(features["label_weights"], tf.float32) * soft)

    def numerators(self, outputs, features):
        hard = super().numerators(outputs, self._gold(features))["tagging"]
        return {"tagging": (1.0 - self.alpha) * hard,
                "distillation": self.alpha * self._soft_sum(outputs, features)}

    def metrics(self, outputs, features):
        gold = self._gold(features)
        weights = tf.cast(gold["label_weights"], tf.float32)
        words = tf.reduce_sum(tf.cast(features["label_weights"], tf.float32))
        return dict(super().metrics(outputs, gold),
                    label_loss=(tf.reduce_sum(weights * self._xent(outputs, features)),
                                tf.reduce_sum(weights)),
                    distill_loss=(self._soft_sum(outputs, features), words))


class SpanDistillationObjective(SpanObjective):
    """Answer spans distilled (see the module docstring): (1 - alpha) * span loss + alpha *
    (soft start loss + soft end loss) / 2, each a mean over the batch's windows."""

    loss_terms = ("start", "end", "distillation")
    metric_names = SpanObjective.metric_names + ("label_loss", "distill_loss")

    def __init__(self, temperature, alpha):
        self.temperature, self.alpha = float(temperature), float(alpha)

    def denominators(self, features):
        windows = tf.cast(tf.shape(features["input_ids"])[0], tf.float32)
        return dict(super().denominators(features), distillation=2.0 * windows)

    def _soft_sum(self, outputs, features):
        return sum(tf.reduce_sum(soft_loss(outputs[f"{end}_logits"],
                                           features[f"teacher_{end}_logits"],
                                           self.temperature, is_regression=False))
                   for end in ("start", "end"))

    def numerators(self, outputs, features):
        hard = super().numerators(outputs, features)
        return {"start": (1.0 - self.alpha) * hard["start"],
                "end": (1.0 - self.alpha) * hard["end"],
                "distillation": self.alpha * self._soft_sum(outputs, features)}

    def metrics(self, outputs, features):
        hard = super().numerators(outputs, features)
        windows = 2.0 * tf.cast(tf.shape(features["input_ids"])[0], tf.float32)
        return dict(super().metrics(outputs, features),
                    label_loss=(hard["start"] + hard["end"], windows),
                    distill_loss=(self._soft_sum(outputs, features), windows))
