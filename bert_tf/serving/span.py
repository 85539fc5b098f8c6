"""The best answer span of one window, in core TensorFlow ops (SQuAD post-processing in the
graph).

The span maximises start_logit[i] + end_logit[j] over candidate tokens i <= j with
j - i + 1 <= max_answer_length, like google-research/bert's write_predictions for a single
window, except that every candidate pair is scored (the Python code only pairs the n_best_size
best starts with the n_best_size best ends, so it can miss a better valid span).
"""

import tensorflow as tf


def best_span(start_logits, end_logits, candidates, max_answer_length, starts=None):
    """start_logits, end_logits: float32 [B, S]; candidates: bool [B, S] (context tokens);
    starts: bool [B, S], the candidates that may start a span (default: all of them; run_squad
    allows only tokens with their maximum context in the window).

    Returns (start int32 [B], end int32 [B], score float32 [B]); a row without any candidate
    gets start = end = -1 and score 0."""
    if max_answer_length < 1:
        raise ValueError(f"max_answer_length must be >= 1, got {max_answer_length}")
    seq = tf.shape(start_logits)[1]
    # tf.expand_dims rather than x[:, :, None]: LiteRT lowers it at any sequence length.
    scores = tf.expand_dims(start_logits, 2) + tf.expand_dims(end_logits, 1)      # [B, S, S]
    # end - start in [0, max_answer_length - 1]. (tf.linalg.band_part would refuse a band wider
    # than the window: a request shorter than max_answer_length.)
    positions = tf.range(seq)
    length = tf.expand_dims(positions, 0) - tf.expand_dims(positions, 1)     # [S, S]: end - start
    band = (length >= 0) & (length < max_answer_length)
    starts = candidates if starts is None else candidates & starts
    valid = tf.expand_dims(band, 0) & tf.expand_dims(starts, 2) & tf.expand_dims(candidates, 1)
    flat_scores = tf.reshape(tf.where(valid, scores, tf.float32.min), [tf.shape(scores)[0], -1])
    best = tf.argmax(flat_scores, axis=1, output_type=tf.int32)
    found = tf.reduce_any(tf.reshape(valid, [tf.shape(valid)[0], -1]), axis=1)
    none = tf.fill(tf.shape(best), -1)
    start = tf.where(found, best // seq, none)
    end = tf.where(found, best % seq, none)
    score = tf.where(found, tf.reduce_max(flat_scores, axis=1), 0.0)
    return start, end, score
