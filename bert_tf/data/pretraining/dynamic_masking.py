"""Masked-LM selection in the TensorFlow graph, for a batch of unmasked sequences.

Same rule as masking.py (and google-research/bert): num_to_predict = min(P, max(1,
round(len * masked_lm_prob))) over the non-padding length, candidates are all real tokens except
[CLS] and [SEP], optionally grouped into whole words (a `##` piece joins the token before it when
that is a candidate), groups visited in random order and skipped if they no longer fit; 80% [MASK],
10% a random id, 10% unchanged; positions sorted, padded with 0 / weight 0. Randomness comes from
stateless ops with an explicit seed, so a (seed, batch number) pair always gives the same masks.
"""

import dataclasses

import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class MaskingSpec:
    """Vocabulary facts and settings the in-graph masking needs."""

    vocab_size: int
    mask_id: int
    cls_id: int
    sep_id: int
    is_continuation: tuple  # bool per id: the token starts with "##"
    masked_lm_prob: float = 0.15
    max_predictions_per_seq: int = 20
    whole_word: bool = False

    @classmethod
    def from_vocab_file(cls, vocab_file, **settings):
        from bert_tf.tokenization import load_vocab
        vocab = load_vocab(vocab_file)
        tokens = sorted(vocab, key=vocab.get)
        return cls(vocab_size=len(tokens), mask_id=vocab["[MASK]"], cls_id=vocab["[CLS]"],
                   sep_id=vocab["[SEP]"],
                   is_continuation=tuple(t.startswith("##") for t in tokens), **settings)


def _seed(seed, salt):
    return tf.random.experimental.stateless_fold_in(seed, salt)


def _select_words(ids, candidates, budget, is_continuation, seed):
    batch, length = tf.shape(ids)[0], tf.shape(ids)[1]
    previous = tf.pad(candidates[:, :-1], [[0, 0], [1, 0]])
    word_start = candidates & ~(tf.gather(is_continuation, ids) & previous)
    group = tf.maximum(tf.cumsum(tf.cast(word_start, tf.int32), axis=1) - 1, 0)
    num_groups = tf.reduce_sum(tf.cast(word_start, tf.int32), axis=1)
    rows = tf.range(batch)[:, None] * length
    sizes = tf.math.unsorted_segment_sum(tf.cast(candidates, tf.int32), rows + group,
                                         batch * length)
    sizes = tf.reshape(sizes, [batch, length])
    keys = tf.random.stateless_uniform([batch, length], _seed(seed, 1))
    keys = tf.where(tf.range(length)[None, :] < num_groups[:, None], keys, 2.0)
    order = tf.argsort(keys, axis=1, stable=True)
    sorted_sizes = tf.gather(sizes, order, batch_dims=1)

    def visit(count, size):  # one group rank for the whole batch
        accept = (size > 0) & (count + size <= budget)
        return count + tf.where(accept, size, 0)

    counts = tf.scan(visit, tf.transpose(sorted_sizes), initializer=tf.zeros_like(budget))
    before = tf.concat([tf.zeros_like(budget)[None, :], counts[:-1]], axis=0)
    accepted_sorted = tf.transpose(counts > before)
    accepted = tf.gather(accepted_sorted, tf.argsort(order, axis=1), batch_dims=1)
    return candidates & tf.gather(accepted, group, batch_dims=1)


def _select_tokens(candidates, budget, seed):
    keys = tf.random.stateless_uniform(tf.shape(candidates), _seed(seed, 1))
    keys = tf.where(candidates, keys, 2.0)
    rank = tf.argsort(tf.argsort(keys, axis=1, stable=True), axis=1, stable=True)
    return candidates & (rank < budget[:, None])


def mask_batch(input_ids, input_mask, spec, seed):
    """Chooses and applies masked-LM predictions for int32 [B, L] unmasked input_ids.

    seed: int32/int64 [2] tensor. Returns (input_ids, masked_lm_positions, masked_lm_ids,
    masked_lm_weights): int32 [B, L], int32 [B, P] x 2, float32 [B, P].
    """
    ids = tf.convert_to_tensor(input_ids, tf.int32)
    real = tf.cast(input_mask, tf.bool)
    candidates = real & (ids != spec.cls_id) & (ids != spec.sep_id)
    num_tokens = tf.reduce_sum(tf.cast(real, tf.float32), axis=1)
    budget = tf.cast(tf.round(num_tokens * spec.masked_lm_prob), tf.int32)
    budget = tf.minimum(spec.max_predictions_per_seq, tf.maximum(1, budget))
    if spec.whole_word:
        selected = _select_words(ids, candidates, budget,
                                 tf.constant(spec.is_continuation, tf.bool), seed)
    else:
        selected = _select_tokens(candidates, budget, seed)

    shape = tf.shape(ids)
    draw = tf.random.stateless_uniform(shape, _seed(seed, 2))
    random_ids = tf.random.stateless_uniform(shape, _seed(seed, 3), maxval=spec.vocab_size,
                                             dtype=tf.int32)
    replaced = tf.where(selected & (draw < 0.8), spec.mask_id,
                        tf.where(selected & (draw >= 0.9), random_ids, ids))

    length = shape[1]
    p = spec.max_predictions_per_seq
    ordered = tf.sort(tf.where(selected, tf.range(length)[None, :], length), axis=1)
    ordered = tf.pad(ordered, [[0, 0], [0, tf.maximum(p - length, 0)]], constant_values=length)
    ordered = ordered[:, :p]
    weights = ordered < length
    positions = tf.where(weights, ordered, 0)
    labels = tf.where(weights, tf.gather(ids, positions, batch_dims=1), 0)
    return replaced, positions, labels, tf.cast(weights, tf.float32)
