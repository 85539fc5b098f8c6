"""Padding-free inference: the real tokens of a padded batch packed into one [T, H] matrix.

In a batch of requests of mixed lengths cut to its longest row, every projection, the FFN and
LayerNorm would also run on the padding (on MRPC dev pairs at batch 32 a third of the rows).
These layers act on each token alone, so they can run on the T real tokens only; attention is
the one place tokens meet, and it gets the padded [B, S, H] layout back around its score and
value matmuls. Outputs at real tokens are unchanged; at padding they are zero.

FlatTokens has the same interface for every position, padding included: the layout of the
LiteRT exports (bert_tf.serving.portable).
"""

import tensorflow as tf


class RealTokens:
    """The real-token positions of a [B, S] 0/1 mask, to move tensors between [B, S, ...]
    (padded) and [T, ...] (packed). TensorFlow graphs only: T is data-dependent, so XLA cannot
    compile it."""

    def __init__(self, input_mask):
        real = tf.reshape(tf.not_equal(input_mask, 0), [-1])             # [B*S]
        self.padded_shape = tf.shape(input_mask, out_type=tf.int64)       # [B, S]
        self.positions = tf.where(real)[:, 0]                             # [T] in [0, B*S)
        # Each padded position's row in [x; 0]: its token's row in x, or the zero row T.
        count = tf.shape(self.positions, out_type=tf.int64)[0]
        self.rows = tf.where(real, tf.cumsum(tf.cast(real, tf.int64)) - 1, count)
        # A batch without padding (every batch of one) packs by a reshape: no gather.
        self.no_padding = tf.reduce_all(real)

    def to_rows(self, x):
        """[B, S, ...] -> [T, ...]."""
        flat = tf.reshape(x, tf.concat([[-1], tf.shape(x, out_type=tf.int64)[2:]], axis=0))
        packed = tf.cond(self.no_padding, lambda: flat,
                         lambda: tf.gather(flat, self.positions))
        packed.set_shape([None] + x.shape[2:])
        return packed

    def to_padded(self, x):
        """[T, ...] -> [B, S, ...], zeros at padding."""
        trailing = tf.shape(x, out_type=tf.int64)[1:]

        def gathered():
            zero_row = tf.zeros(tf.concat([[1], trailing], axis=0), x.dtype)
            return tf.gather(tf.concat([x, zero_row], axis=0), self.rows)

        padded = tf.cond(self.no_padding, lambda: x, gathered)
        padded = tf.reshape(padded, tf.concat([self.padded_shape, trailing], axis=0))
        padded.set_shape([None, None] + x.shape[1:])
        return padded


class FlatTokens:
    """Every position of a [B, S] mask, padding included, as [B*S, ...] rows: a reshape each
    way, no gather, so the same outputs everywhere. For LiteRT: its converter turns a Dense on
    [B, S, H] of unknown B and S into shape arithmetic around every matmul (which its
    XNNPACK delegate runs apart), and a Dense on [B*S, H] into one FULLY_CONNECTED."""

    def __init__(self, input_mask):
        self.padded_shape = tf.shape(input_mask)                           # [B, S]

    def to_rows(self, x):
        """[B, S, ...] -> [B*S, ...]."""
        return tf.reshape(x, [-1] + list(x.shape[2:]))

    def to_padded(self, x):
        """[B*S, ...] -> [B, S, ...]."""
        padded = tf.reshape(x, tf.concat([self.padded_shape, list(x.shape[1:])], axis=0))
        padded.set_shape([None, None] + list(x.shape[1:]))
        return padded
