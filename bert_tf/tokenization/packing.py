"""Packing token ids into BERT inputs with google-research/bert's truncation rule, in TF ops.

`[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, padded with id 0 to `seq_length`. Pairs are
truncated as run_classifier.py's _truncate_seq_pair does: while too long, drop the last token
of the longer of A and B (B on ties). Only core TensorFlow ops are used (tensorflow-text's
trimmers need ops that TF Serving does not ship).
"""

import tensorflow as tf


def truncate_pair_lengths(len_a: tf.Tensor, len_b: tf.Tensor, budget: int | tf.Tensor
                          ) -> tuple[tf.Tensor, tf.Tensor]:
    """Lengths A and B keep under _truncate_seq_pair with room for `budget` tokens (int
    tensors of any one shape, element-wise).

    Closed form of the loop: the longer side shrinks until both are equal, then B and A
    alternately lose a token (B first), so when both are cut A keeps ceil(budget/2)."""
    len_a, len_b = tf.convert_to_tensor(len_a), tf.convert_to_tensor(len_b)
    budget = tf.cast(budget, len_a.dtype)
    fits = len_a + len_b <= budget
    # A no longer than B: A keeps up to ceil(budget/2), B the rest.
    a_short = tf.minimum(len_a, (budget + 1) // 2)
    # A longer than B: B keeps up to floor(budget/2), A the rest.
    b_short = tf.minimum(len_b, budget // 2)
    keep_a = tf.where(fits, len_a, tf.where(len_a <= len_b, a_short, budget - b_short))
    keep_b = tf.where(fits, len_b, tf.where(len_a <= len_b, budget - a_short, b_short))
    return keep_a, keep_b


def pack(segments, seq_length, cls_id, sep_id, extras=()):
    """Packs one or two segments of ragged int ids [B, None] into dense BERT inputs.

    `extras` are ragged tensors shaped like the segments (e.g. offsets), packed the same way
    with -1 at [CLS], [SEP] and padding; each is a tuple with one tensor per segment.
    Returns (dict of int32 input_ids, input_mask, segment_ids [B, seq_length], packed extras).
    Works on dense [B, seq_length] tensors only: each segment is densified (which keeps at
    most seq_length tokens per row) and moved to its columns with a per-row gather."""
    if len(segments) not in (1, 2):
        raise ValueError(f"BERT packs one or two segments, got {len(segments)}")
    specials = len(segments) + 1
    if seq_length < specials + 1:
        raise ValueError(f"seq_length={seq_length} leaves no room for text next to "
                         f"{specials} special tokens")
    if len(segments) == 1:
        return _pack_single(segments[0], seq_length, cls_id, sep_id, extras)
    lengths = [s.row_lengths() for s in segments]
    keeps = list(truncate_pair_lengths(lengths[0], lengths[1], seq_length - specials))
    column = tf.range(seq_length, dtype=tf.int64)[None, :]
    # Segment A occupies columns 1..keep_a, B keep_a+2..keep_a+1+keep_b; a [SEP] follows each.
    starts = [tf.ones_like(keeps[0]), keeps[0] + 2]
    placements = []
    for keep, start in zip(keeps, starts):
        source = column - start[:, None]  # column -> index into the segment
        valid = (source >= 0) & (source < keep[:, None])
        placements.append((valid, tf.clip_by_value(source, 0, seq_length - 1)))
    ends = [s + k for s, k in zip(starts, keeps)]
    is_sep = tf.reduce_any(tf.stack([tf.equal(column, e[:, None]) for e in ends]), axis=0)
    is_cls = tf.equal(column, 0)
    mask = column < (ends[-1] + 1)[:, None]

    def place(parts, cls_value, sep_value, pad):
        out = None
        for part, (valid, source) in zip(parts, placements):
            dense = part.to_tensor(default_value=pad, shape=[None, seq_length])
            moved = tf.where(valid, tf.gather(dense, source, batch_dims=1), pad)
            out = moved if out is None else tf.where(valid, moved, out)
        out = tf.where(is_cls, tf.cast(cls_value, out.dtype), out)
        return tf.where(is_sep, tf.cast(sep_value, out.dtype), out)

    ids = place([tf.cast(s, tf.int32) for s in segments], cls_id, sep_id, 0)
    segment_ids = tf.cast(mask & (column >= starts[1][:, None]), tf.int32)
    packed = [place(list(extra), -1, -1, -1) for extra in extras]
    return ({"input_ids": ids, "input_mask": tf.cast(mask, tf.int32),
             "segment_ids": segment_ids}, packed)


def _pack_single(segment, seq_length, cls_id, sep_id, extras):
    """pack() for one segment: densify truncated to seq_length - 2 columns, put [CLS] before
    and [SEP] after the kept tokens. About twice as fast as the general two-segment path."""
    keep = tf.minimum(segment.row_lengths(), seq_length - 2)
    sep_column = tf.equal(tf.range(seq_length, dtype=keep.dtype)[None, :], (keep + 1)[:, None])

    def place(part, cls_value, sep_value, pad):
        dense = part.to_tensor(default_value=pad, shape=[None, seq_length - 2])  # truncates
        edge = tf.fill(tf.stack([tf.shape(dense)[0], 1]), tf.cast(cls_value, dense.dtype))
        tail = tf.fill(tf.shape(edge), tf.cast(pad, dense.dtype))
        body = tf.concat([edge, dense, tail], axis=1)
        return tf.where(sep_column, tf.cast(sep_value, dense.dtype), body)

    ids = place(tf.cast(segment, tf.int32), cls_id, sep_id, 0)
    mask = tf.sequence_mask(keep + 2, seq_length, dtype=tf.int32)
    packed = [place(extra[0], -1, -1, -1) for extra in extras]
    return ({"input_ids": ids, "input_mask": mask, "segment_ids": tf.zeros_like(ids)}, packed)
