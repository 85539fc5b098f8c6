"""Per-request padding: the model runs on each request batch cut to its own longest row,
rounded up to one of a few bucket lengths, instead of on seq_length.

A 20-token request then costs a 32-token forward pass, not a 128-token one. Buckets (every 16
tokens up to 128, every 32 up to 256, every 64 up to 512, ...: at most 1/7 longer than the
longest row once past 112) keep the number of distinct shapes small (8 up to 128, 16 up to
512), which matters under XLA, where every new input shape is compiled once (seconds for a
base model); exports without XLA cut each batch to its longest row, with no buckets. With
jit_compile the batch is also padded to a power of two (by repeating its last row) for the
same reason. Outputs are returned at the request's shape: per-token outputs are
zero-padded back to the features' length (zero past the bucket length, where every row is
padding) and padded rows are dropped. Padding rows of the
attention mask are masked out, so cutting them changes no unpadded output (up to float
rounding: matmuls of other shapes sum in another order).
"""

import tensorflow as tf


def length_buckets(max_length, smallest=16):
    """16, 32, ..., 128, 160, ..., 256, 320, ... below max_length, then max_length itself: the
    step is a quarter of the largest power of two <= the size, and at least `smallest`."""
    if max_length < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    buckets, size = [], smallest
    while size < max_length:
        buckets.append(size)
        size += max(smallest, (1 << (size.bit_length() - 1)) // 4)
    return buckets + [int(max_length)]


def _round_up(value, buckets):
    """The smallest of the ascending int32 `buckets` >= value (value itself above them all)."""
    index = tf.searchsorted(buckets, tf.reshape(value, [1]), side="left")[0]
    return tf.gather(tf.concat([buckets, tf.reshape(value, [1])], axis=0), index)


def used_length(input_mask):
    """1 + the last position any row's mask covers (0 when no row has a token); int32."""
    seq = tf.shape(input_mask)[-1]
    positions = tf.range(1, seq + 1)                                   # broadcasts over [..., S]
    return tf.maximum(tf.reduce_max(tf.where(input_mask != 0, positions, 0)), 0)


def bucketed(model_fn, buckets, *, pad_batch=False, per_token_outputs=True):
    """model_fn(features) -> outputs, run on features cut to a bucket length (and, with
    pad_batch, on a power-of-two batch); outputs come back at the features' batch and length.

    features: int32 [B, ..., S] dict with "input_mask"; buckets: ascending lengths (S caps
    them; none: each batch is cut to its longest row); per_token_outputs: outputs of rank >= 2
    with an unknown second dimension are per token ([B, S, ...]) and are padded back to S
    (False for tasks whose outputs are per row or per [MASK])."""
    buckets = tf.constant(sorted(set(int(b) for b in buckets)), tf.int32)
    batch_buckets = tf.constant([2 ** i for i in range(13)], tf.int32)

    def run(features):
        mask = features["input_mask"]
        seq = tf.shape(mask)[-1]
        length = tf.minimum(_round_up(tf.maximum(used_length(mask), 1), buckets), seq)
        cut = {k: v[..., :length] for k, v in features.items()}
        batch = tf.shape(mask)[0]
        if pad_batch:
            rows = tf.where(batch > 0, _round_up(batch, batch_buckets), 0)
            cut = {k: tf.gather(v, tf.minimum(tf.range(rows), batch - 1))
                   for k, v in cut.items()}
        outputs = {}
        for key, value in model_fn(cut).items():
            if pad_batch:
                value = value[:batch]
            if per_token_outputs and value.shape.rank >= 2 and value.shape[1] is None:
                paddings = [[0, 0], [0, seq - length]] + [[0, 0]] * (value.shape.rank - 2)
                value = tf.pad(value, paddings)
            outputs[key] = value
        return outputs

    return run
