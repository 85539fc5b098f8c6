"""run_squad's task distillation: a student span labeler trained on the gold spans and on the
start and end distributions of a fine-tuned run_squad run (--teacher_checkpoint), by
bert_tf.objectives.distillation.SpanDistillationObjective.

The teacher scores the student's own training windows (train.tf_record) once, before training:
the two models share a vocabulary and casing (bert_tf.jobs.teachers.read_span_teacher), so
the teacher reads the same token ids at the same positions, whatever window length and stride
it was trained with. Each window's logits are then looked up by its unique id as the student's
batches are drawn. They are kept in float16 (SQuAD 1.1's 88k windows of 384: 135 MB), in the
output_dir's teacher_targets.npz (FinetuneTask.teacher_outputs), so a resumed or repeated run
reuses them while the teacher's checkpoint and the training file stay the same.
"""

import logging
import time

import numpy as np

logger = logging.getLogger("bert_tf")

NAMES = ("teacher_start_logits", "teacher_end_logits")


def teacher_span_logits(teacher, record_path, num_features, seq_length, batch_size):
    """{"teacher_start_logits", "teacher_end_logits"}: float16 [num_features, seq_length]
    arrays (soft targets need no more), row i for the window with unique id
    FIRST_UNIQUE_ID + i of `record_path` (a training TFRecord of run_squad)."""
    import tensorflow as tf

    from bert_tf.checkpoints import load_weights
    from bert_tf.data.squad import read_feature_dataset
    from bert_tf.data.squad.features import FIRST_UNIQUE_ID
    from bert_tf.model import BertEncoder, BertSpanLabeler
    from bert_tf.objectives.span import MODEL_INPUTS
    start = time.perf_counter()
    model = BertSpanLabeler(BertEncoder(teacher.config))
    logger.info("teacher: %s", load_weights(model, teacher.path, require_heads=True).summary())

    @tf.function(reduce_retracing=True, autograph=False)
    def forward(batch):
        outputs = model({k: batch[k] for k in MODEL_INPUTS}, training=False)
        return (tf.cast(outputs["start_logits"], tf.float32),
                tf.cast(outputs["end_logits"], tf.float32))

    targets = {name: np.zeros((num_features, seq_length), np.float16) for name in NAMES}
    seen = np.zeros(num_features, bool)
    for batch in read_feature_dataset(record_path, seq_length, True, batch_size,
                                      shuffle_buffer=0):
        rows = batch["unique_ids"].numpy() - FIRST_UNIQUE_ID
        if rows.min() < 0 or rows.max() >= num_features:
            raise ValueError(f"{record_path}: unique ids outside {FIRST_UNIQUE_ID} + "
                             f"[0, {num_features}): not a training file run_squad wrote")
        start_logits, end_logits = forward(batch)
        targets["teacher_start_logits"][rows] = start_logits.numpy()
        targets["teacher_end_logits"][rows] = end_logits.numpy()
        seen[rows] = True
    if not seen.all():
        raise RuntimeError(f"teacher: {int((~seen).sum())} of {num_features} training windows "
                           f"of {record_path} got no logits")
    logger.info("teacher: start and end logits of %d training windows (%s, batch %d) in %.1f s",
                num_features, teacher.path, batch_size, time.perf_counter() - start)
    return targets


def window_row(features):
    """The row of teacher_span_logits' arrays that a batch's windows read: unique id minus
    FIRST_UNIQUE_ID."""
    import tensorflow as tf

    from bert_tf.data.squad.features import FIRST_UNIQUE_ID
    return tf.cast(features["unique_ids"] - FIRST_UNIQUE_ID, tf.int32)
