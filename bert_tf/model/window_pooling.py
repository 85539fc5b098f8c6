"""Combining the outputs of a text's windows (bert_tf.tokenization.windows) into one output per
text: the mean or the maximum of the window logits. Used by BertClassifier during training and
evaluation and by the serving signatures, so both combine alike."""

import tensorflow as tf

POOLINGS = ("mean", "max")


def combine_windows(values, window_example, num_examples=None, pooling="mean"):
    """[num_examples, ...] float32: the windows' `values` [N, ...] averaged ("mean") or
    maximised ("max") per example; num_examples defaults to max(window_example) + 1."""
    if pooling not in POOLINGS:
        raise ValueError(f"window pooling must be one of {', '.join(POOLINGS)}, "
                         f"got {pooling!r}")
    values = tf.cast(values, tf.float32)
    ids = tf.cast(window_example, tf.int32)
    if num_examples is None:
        # an empty batch (a replica whose input has ended) has no windows and no examples
        num_examples = tf.reduce_max(tf.concat([ids, [-1]], axis=0)) + 1
    if pooling == "mean":
        return tf.math.unsorted_segment_mean(values, ids, num_examples)
    return tf.math.unsorted_segment_max(values, ids, num_examples)
