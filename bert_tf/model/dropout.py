"""Stateless dropout drawing 16 random bits per element.

The attention layer regenerates its dropout mask in the backward pass from the same seed, so the
mask must be a pure function of (shape, seed). Each uint32 draw supplies two elements (half the
random-number work of one draw per element): the mask compares 16-bit integers with
round(rate * 2^16), and kept values are scaled by 1 / (the exact keep probability), so dropout
stays unbiased. The drop rate is `rate` to within 2^-17 (0.1 -> 0.100006).
"""

import tensorflow as tf

_LEVELS = 1 << 16


def _keep_mask(shape, seed, threshold):
    """bool[shape]: True where a 16-bit uniform integer drawn from `seed` is >= threshold."""
    size = tf.reduce_prod(shape)
    words = tf.random.stateless_uniform([(size + 1) // 2], seed, minval=None, maxval=None,
                                        dtype=tf.uint32)
    halves = tf.reshape(tf.bitcast(words, tf.uint16), [-1])[:size]
    return tf.reshape(halves >= tf.cast(threshold, tf.uint16), shape)


def dropout16(x, rate, seed):
    """Inverted dropout of `x` at `rate` (0 <= rate < 1) with a stateless int [2] `seed`."""
    threshold = min(int(round(rate * _LEVELS)), _LEVELS - 1)
    scale = tf.cast(_LEVELS / (_LEVELS - threshold), x.dtype)
    keep = _keep_mask(tf.shape(x), seed, threshold)
    return tf.where(keep, x * scale, tf.zeros_like(x))
