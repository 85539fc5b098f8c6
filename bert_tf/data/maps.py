"""dataset.map for the input pipelines' functions, without autograph."""

import tensorflow as tf


def graph_map(dataset, fn, parallel=True, deterministic=None):
    """dataset.map(fn), in parallel (AUTOTUNE) unless `parallel` is False. The pipelines'
    functions branch on Python values only, so autograph is skipped: tf.data would otherwise
    convert each function again for every dataset built."""
    return dataset.map(tf.autograph.experimental.do_not_convert(fn),
                       num_parallel_calls=tf.data.AUTOTUNE if parallel else None,
                       deterministic=deterministic)
