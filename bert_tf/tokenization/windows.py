"""Long texts as overlapping windows, in TF ops: each text becomes one or more BERT inputs of
seq_length instead of being truncated.

The first text (text_a) is cut into windows of `window` WordPieces whose starts are `stride`
apart; the last window is moved back to end at the text's end (so it is full, not a short
tail). A second text (text_b) is kept in every window, truncated to at most half the room, so
most of each window is the first text. `window_example` [N] maps each window to its row.
Only core TensorFlow ops: the same code runs in tf.data, in Keras models and in SavedModels.
"""

import tensorflow as tf

from bert_tf.tokenization import packing


def check_window_options(doc_stride, window_pooling, max_windows, seq_length, given=()):
    """The rules for long-text window options, shared by run_classifier and
    export_savedmodel.py: --doc_stride and --max_windows >= 0 (0: truncate, all windows),
    --window_pooling mean or max, the flags in `given` (of --window_pooling, --max_windows: the
    ones set) only with a stride, and a stride no larger than the window (seq_length - 2
    WordPieces of text: a larger one would skip text). Raises ValueError naming the flags."""
    if doc_stride < 0 or max_windows < 0:
        raise ValueError("--doc_stride and --max_windows must be >= 0")
    if window_pooling not in ("mean", "max"):
        raise ValueError(f"--window_pooling must be mean or max, got {window_pooling!r}")
    if given and not doc_stride:
        raise ValueError(f"{', '.join(given)} {'apply' if len(given) > 1 else 'applies'} to "
                         f"--doc_stride windows: give --doc_stride")
    window = seq_length - 2                 # [CLS] text [SEP]
    if doc_stride > window:
        raise ValueError(f"--doc_stride={doc_stride} is larger than the window of "
                         f"--max_seq_length={seq_length} ({window} WordPieces of text): "
                         f"windows would skip text; use --doc_stride <= {window}")


def window_spans(lengths, window, stride, max_windows=0):
    """(window_example [N], start [N], end [N]) of the windows of texts of `lengths` [B]
    (int64). `window` is a scalar or [B]; `stride` a Python int >= 1; max_windows > 0 keeps
    the first max_windows windows of each text. Every text has at least one window (an empty
    text: one empty window)."""
    lengths = tf.cast(lengths, tf.int64)
    window = tf.broadcast_to(tf.cast(window, tf.int64), tf.shape(lengths))
    step = tf.maximum(tf.minimum(tf.cast(stride, tf.int64), window), 1)
    extra = tf.maximum(lengths - window, 0)
    count = 1 + (extra + step - 1) // step
    if max_windows:
        count = tf.minimum(count, max_windows)
    window_example = tf.repeat(tf.range(tf.size(lengths, out_type=tf.int64)), count)
    index = tf.ragged.range(count).flat_values
    start = tf.minimum(index * tf.gather(step, window_example), tf.gather(extra, window_example))
    end = tf.minimum(start + tf.gather(window, window_example),
                     tf.gather(lengths, window_example))
    return window_example, start, end


def _slices(segment, rows, start, end):
    """Ragged [N, None]: segment[rows[i]][start[i]:end[i]] for each i."""
    offsets = tf.gather(segment.row_starts(), rows)
    return tf.gather(segment.flat_values, tf.ragged.range(offsets + start, offsets + end))


def pack_windows(segments, seq_length, stride, cls_id, sep_id, max_windows=0):
    """Windows of one or two ragged [B, None] id segments, packed as BERT inputs.

    Returns (dict of int32 input_ids, input_mask, segment_ids [N, seq_length], int32
    window_example [N])."""
    if len(segments) not in (1, 2):
        raise ValueError(f"BERT packs one or two segments, got {len(segments)}")
    room = seq_length - len(segments) - 1
    if room < 2:
        raise ValueError(f"seq_length={seq_length} leaves no room for windows")
    first = segments[0]
    keep_b = None
    window = tf.constant(room, tf.int64)
    if len(segments) == 2:
        keep_b = tf.minimum(segments[1].row_lengths(), room // 2)
        window = room - keep_b
    window_example, start, end = window_spans(first.row_lengths(), window, stride, max_windows)
    parts = [_slices(first, window_example, start, end)]
    if keep_b is not None:
        parts.append(_slices(segments[1], window_example, tf.zeros_like(window_example),
                             tf.gather(keep_b, window_example)))
    features, _ = packing.pack(parts, seq_length, cls_id, sep_id)
    return features, tf.cast(window_example, tf.int32)
