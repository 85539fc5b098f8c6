"""BERT input packing: google-research's pair truncation rule, layout and padding."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.tokenization import packing


def _google_truncate(len_a, len_b, budget):
    """run_classifier.py's _truncate_seq_pair, on lengths: drop from the longer, B on ties."""
    while len_a + len_b > budget:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return len_a, len_b


def test_truncate_pair_lengths_equals_the_original_loop():
    cases = list(itertools.product(range(14), range(14), range(0, 24)))
    la, lb, budget = (np.array(c, np.int64) for c in zip(*cases))
    keep_a, keep_b = packing.truncate_pair_lengths(la, lb, budget)
    expected = [_google_truncate(*c) for c in cases]
    assert list(zip(keep_a.numpy().tolist(), keep_b.numpy().tolist())) == expected


def test_pack_pair_layout_truncation_and_padding():
    a = tf.ragged.constant([[11, 12, 13, 14, 15], [21]], tf.int32)
    b = tf.ragged.constant([[31, 32], [41, 42, 43, 44, 45, 46]], tf.int32)
    out, _ = packing.pack([a, b], seq_length=8, cls_id=101, sep_id=102)
    # Budget 5: row 0 keeps A=3, B=2; row 1 keeps A=1, B=4.
    assert out["input_ids"].numpy().tolist() == [[101, 11, 12, 13, 102, 31, 32, 102],
                                                 [101, 21, 102, 41, 42, 43, 44, 102]]
    assert out["segment_ids"].numpy().tolist() == [[0, 0, 0, 0, 0, 1, 1, 1],
                                                   [0, 0, 0, 1, 1, 1, 1, 1]]
    assert out["input_mask"].numpy().min() == 1
    assert all(v.dtype == tf.int32 for v in out.values())


def test_pack_single_pads_with_zero_and_packs_extras():
    a = tf.ragged.constant([[7, 8], [9, 9, 9, 9, 9, 9], []], tf.int32)
    starts = tf.ragged.constant([[0, 4], [0, 1, 2, 3, 4, 5], []], tf.int64)
    out, (packed,) = packing.pack([a], seq_length=5, cls_id=1, sep_id=2, extras=([starts],))
    assert out["input_ids"].numpy().tolist() == [[1, 7, 8, 2, 0], [1, 9, 9, 9, 2], [1, 2, 0, 0, 0]]
    assert out["input_mask"].numpy().tolist() == [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1],
                                                  [1, 1, 0, 0, 0]]
    assert out["segment_ids"].numpy().sum() == 0
    assert packed.numpy().tolist() == [[-1, 0, 4, -1, -1], [-1, 0, 1, 2, -1],
                                       [-1, -1, -1, -1, -1]]


def test_pack_rejects_too_short_sequences():
    a = tf.ragged.constant([[1]], tf.int32)
    with pytest.raises(ValueError, match="seq_length=3"):
        packing.pack([a, a], seq_length=3, cls_id=1, sep_id=2)
