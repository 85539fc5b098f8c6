"""Contrastive and similarity objectives of sentence-embedding models (run_embedding).

A training batch holds one set of model inputs per text column, `<column>_input_ids`,
`<column>_input_mask`, `<column>_segment_ids` (all of one length); model_inputs() stacks the
columns into one batch so the model embeds every text in one call, and the loss splits the
`embedding` output back into columns. A batch of single texts (`input_ids`, ...: evaluation,
prediction) goes to the model as it is.

InBatchNegativesObjective is sentence-transformers' MultipleNegativesRankingLoss: each anchor's
cosine similarities to every positive of the batch (and every hard negative, when the batch has
a negative column), times `scale`, are the logits of a softmax cross-entropy whose target is the
anchor's own positive. `symmetric` averages it with the positive -> anchor direction (each
positive against every anchor), as MultipleNegativesSymmetricRankingLoss.

The negatives are the other rows of the batch the model sees in one call: on each replica, its
share of the global batch. Gradient accumulation would cut that to a micro-batch and silently
give a different loss from the batch size asked for, so the objective refuses it
(check_accumulation).

CosineSimilarityObjective is sentence-transformers' CosineSimilarityLoss: the mean squared error
between the cosine similarity of a pair's two embeddings and its gold `score` (scaled to [0, 1]
by the data).
"""

import tensorflow as tf

from bert_tf.objectives.base import Objective

MODEL_KEYS = ("input_ids", "input_mask", "segment_ids")
TRIPLET_COLUMNS = ("anchor", "positive", "negative")
SCORED_COLUMNS = ("text_a", "text_b")
SCORE = "score"


def column_keys(column):
    """The feature keys of one text column's model inputs."""
    return tuple(f"{column}_{key}" for key in MODEL_KEYS)


def _normalized(embeddings):
    return tf.math.l2_normalize(tf.cast(embeddings, tf.float32), axis=-1)


class _ColumnsObjective(Objective):
    """Embeds every text column of a batch in one model call."""

    columns = ()                 # the text columns, in order; the last ones may be optional

    def batch_columns(self, features):
        """The columns this batch has (`columns` up to the first one it lacks)."""
        present = [c for c in self.columns if f"{c}_input_ids" in features]
        return tuple(self.columns[:len(present)])

    def model_inputs(self, features):
        if "input_ids" in features:                      # single texts
            return {key: features[key] for key in MODEL_KEYS}
        columns = self.batch_columns(features)
        return {key: tf.concat([features[f"{column}_{key}"] for column in columns], 0)
                for key in MODEL_KEYS}

    def column_embeddings(self, outputs, features):
        """The normalised [batch, hidden] embeddings of each column of the batch, in order."""
        return tf.split(_normalized(outputs["embedding"]), len(self.batch_columns(features)),
                        axis=0)

    def denominators(self, features):
        rows = tf.shape(features[f"{self.columns[0]}_input_ids"])[0]
        return {self.loss_terms[0]: tf.cast(rows, tf.float32)}


class InBatchNegativesObjective(_ColumnsObjective):
    """Softmax cross-entropy of scaled cosine similarities, anchors against the batch's
    positives (+ hard negatives); see the module docstring for what the negatives are."""

    metric_names = ("in_batch_accuracy",)
    loss_terms = ("in_batch_negatives",)

    columns = TRIPLET_COLUMNS    # the negative column when the data has one

    def __init__(self, scale=20.0, symmetric=False):
        if scale <= 0:
            raise ValueError(f"the similarity scale must be > 0, got {scale}")
        self.scale = float(scale)
        self.symmetric = bool(symmetric)

    @staticmethod
    def check_accumulation(gradient_accumulation_steps):
        """In-batch negatives come from the rows embedded together: micro-batches would change
        the loss, so gradient accumulation is refused."""
        if gradient_accumulation_steps > 1:
            raise ValueError(
                "--loss=mnrl takes its negatives from the batch: --gradient_accumulation_steps"
                f"={gradient_accumulation_steps} would score each anchor against its "
                "micro-batch only (a different loss); lower --train_batch_size instead")

    def _logits(self, outputs, features):
        """[rows, candidates] scaled cosines of anchors to positives (+ negatives), and the
        [rows, rows] ones of positives to anchors."""
        anchors, positives, *negatives = self.column_embeddings(outputs, features)
        candidates = tf.concat([positives] + negatives, 0)
        forward = self.scale * tf.matmul(anchors, candidates, transpose_b=True)
        backward = self.scale * tf.matmul(positives, anchors, transpose_b=True)
        return forward, backward

    def numerators(self, outputs, features):
        forward, backward = self._logits(outputs, features)
        targets = tf.range(tf.shape(forward)[0])
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=forward)
        if self.symmetric:
            loss = 0.5 * (loss + tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=targets, logits=backward))
        return {"in_batch_negatives": tf.reduce_sum(loss)}

    def metrics(self, outputs, features):
        forward, _ = self._logits(outputs, features)
        rows = tf.shape(forward)[0]
        correct = tf.equal(tf.argmax(forward, axis=-1, output_type=tf.int32), tf.range(rows))
        return {"in_batch_accuracy": (tf.reduce_sum(tf.cast(correct, tf.float32)),
                                      tf.cast(rows, tf.float32))}


class CosineSimilarityObjective(_ColumnsObjective):
    """Squared error between each pair's cosine similarity and its `score` in [0, 1]."""

    metric_names = ()
    loss_terms = ("cosine_similarity",)
    columns = SCORED_COLUMNS

    def numerators(self, outputs, features):
        a, b = self.column_embeddings(outputs, features)
        cosine = tf.reduce_sum(a * b, axis=-1)
        error = cosine - tf.cast(features[SCORE], tf.float32)
        return {"cosine_similarity": tf.reduce_sum(tf.square(error))}

    def metrics(self, outputs, features):
        return {}
