"""Masked-LM selection for a batch of instances at once (numpy), following google-research/bert.

Per instance: num_to_predict = min(max_predictions_per_seq, max(1, round(len * masked_lm_prob)))
with len counting [CLS] and both [SEP] (round half to even, as Python's round). Candidates are
every position except [CLS], [SEP] and padding, grouped into whole words (a `##` piece joins the
piece before it, never across [SEP]) when whole-word masking is on. Groups are visited in random
order and a group is taken only if it still fits within num_to_predict (a group that does not fit
is skipped, a later smaller one may still fit). Each chosen position becomes [MASK] with
probability 0.8, a uniformly random vocabulary id with 0.1, and stays unchanged with 0.1.
Positions are reported in increasing order, padded with 0 (weight 0).
"""

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class MaskingVocab:
    """What masking needs to know about the vocabulary."""

    mask_id: int
    vocab_size: int
    is_continuation: np.ndarray  # bool [vocab_size]: the token starts with "##"


@dataclasses.dataclass
class MaskedBatch:
    input_ids: np.ndarray            # int32 [n, L], with the replacements applied
    masked_lm_positions: np.ndarray  # int32 [n, P]
    masked_lm_ids: np.ndarray        # int32 [n, P], the original ids at those positions
    masked_lm_weights: np.ndarray    # float32 [n, P], 1.0 for real predictions
    num_masked: int                  # replaced by [MASK]
    num_random: int                  # replaced by a random id
    num_kept: int                    # left unchanged


def candidate_positions(len_a, len_b, max_seq_length):
    """bool [n, L]: the positions of A and B tokens (not [CLS], [SEP] or padding)."""
    pos = np.arange(max_seq_length)[None, :]
    len_a, len_b = len_a[:, None], len_b[:, None]
    return ((pos >= 1) & (pos <= len_a)) | ((pos >= len_a + 2) & (pos <= len_a + len_b + 1))


def num_to_predict(num_tokens, masked_lm_prob, max_predictions_per_seq):
    return np.minimum(max_predictions_per_seq,
                      np.maximum(1, np.rint(num_tokens * masked_lm_prob).astype(np.int64)))


def _select_tokens(candidates, budget, width, rng):
    """Sorted chosen positions [n, width], padded with L: the first `budget` candidates in a
    random order. The order comes from sorting uint32 keys (random high bits, the position in
    the low bits), which numpy does several times faster than an argsort; two candidates share
    their random bits with probability 2**-21 or less, and then the earlier one goes first."""
    n, length = candidates.shape
    position_bits = max(1, (length - 1).bit_length())
    keys = rng.integers(0, 1 << (31 - position_bits), (n, length), dtype=np.uint32)
    keys = (keys << position_bits) | np.arange(length, dtype=np.uint32)
    keys[~candidates] = np.iinfo(np.uint32).max
    keys = np.sort(keys, axis=1)[:, :width]
    take = (np.arange(keys.shape[1])[None, :] < budget[:, None]) & (
        keys != np.iinfo(np.uint32).max)
    chosen = (keys & ((1 << position_bits) - 1)).astype(np.int64)
    return np.sort(np.where(take, chosen, length), axis=1)


def _select_words(ids, candidates, budget, is_continuation, rng):
    n, length = candidates.shape
    previous = np.zeros_like(candidates)
    previous[:, 1:] = candidates[:, :-1]
    word_start = candidates & ~(is_continuation[ids] & previous)
    group = np.cumsum(word_start, axis=1) - 1
    num_groups = word_start.sum(axis=1)
    width = max(int(num_groups.max(initial=0)), 1)
    rows = np.broadcast_to(np.arange(n)[:, None], candidates.shape)
    flat_group = (rows * width + np.maximum(group, 0))[candidates]
    sizes = np.bincount(flat_group, minlength=n * width).reshape(n, width)
    keys = rng.random((n, width))
    keys[np.arange(width)[None, :] >= num_groups[:, None]] = 2.0
    order = np.argsort(keys, axis=1)
    sorted_sizes = np.take_along_axis(sizes, order, axis=1)
    count = np.zeros(n, np.int64)
    accepted_sorted = np.zeros((n, width), bool)
    for r in range(width):
        size = sorted_sizes[:, r]
        accept = (size > 0) & (count + size <= budget)
        count += np.where(accept, size, 0)
        accepted_sorted[:, r] = accept
    accepted = np.zeros((n, width), bool)
    np.put_along_axis(accepted, order, accepted_sorted, axis=1)
    return candidates & np.take_along_axis(accepted, np.maximum(group, 0), axis=1)


def mask_batch(ids, len_a, len_b, masked_lm_prob, max_predictions_per_seq, vocab, rng,
               whole_word=False):
    """Applies masked-LM selection and replacement to ids int32 [n, L]; rng: numpy Generator."""
    n, length = ids.shape
    p = max_predictions_per_seq
    candidates = candidate_positions(len_a, len_b, length)
    budget = num_to_predict(len_a + len_b + 3, masked_lm_prob, p)
    if whole_word:
        selected = _select_words(ids, candidates, budget, vocab.is_continuation, rng)
        ordered = np.sort(np.where(selected, np.arange(length)[None, :], length), axis=1)
    else:
        ordered = _select_tokens(candidates, budget, min(p, length), rng)
    ordered = ordered[:, :p]
    if ordered.shape[1] < p:
        ordered = np.pad(ordered, ((0, 0), (0, p - ordered.shape[1])), constant_values=length)
    real = ordered < length
    positions = np.where(real, ordered, 0)
    labels = np.where(real, np.take_along_axis(ids, positions, axis=1), 0)

    draw = rng.random((n, p), dtype=np.float32)
    to_mask = real & (draw < 0.8)
    to_random = real & (draw >= 0.9)
    replacement = np.where(to_mask, vocab.mask_id,
                           np.where(to_random, rng.integers(0, vocab.vocab_size, draw.shape),
                                    labels))
    masked = ids.copy()
    rows = np.broadcast_to(np.arange(n)[:, None], positions.shape)
    masked[rows[real], positions[real]] = replacement[real]
    num_masked, num_random = int(to_mask.sum()), int(to_random.sum())
    return MaskedBatch(masked, positions.astype(np.int32), labels.astype(np.int32),
                       real.astype(np.float32), num_masked, num_random,
                       int(real.sum()) - num_masked - num_random)
