"""bert_tf.data.cross_pairs: new pairs of a pair task's own sentences (--distill_cross_pairs)."""

import pytest

from bert_tf.data.cross_pairs import cross_pairs, sentence_key

PAIRS = [("the cat sat on the mat", "a dog barked loudly"),
         ("The cat sat on a mat today.", "stocks rose sharply"),
         ("markets fell", "stocks fell sharply today")]


def test_each_sentence_meets_its_nearest_sentence_of_another_pair_once():
    # "markets fell" is nearest to its own partner only, "a dog barked loudly" to nothing;
    # the reverse matches (the mat sentence from the other side, ...) are not repeated.
    assert cross_pairs(PAIRS) == [("the cat sat on the mat", "The cat sat on a mat today."),
                                  ("stocks rose sharply", "stocks fell sharply today")]


def test_a_pair_given_in_both_orders_is_still_one_pair():
    assert cross_pairs(PAIRS + [(b, a) for a, b in PAIRS]) == cross_pairs(PAIRS)


def test_held_out_sentences_take_no_part():
    held_out = {sentence_key("the cat sat on a mat today")}
    assert cross_pairs(PAIRS, held_out=held_out) == [
        ("stocks rose sharply", "stocks fell sharply today")]


def test_pairs_below_the_threshold_are_not_made():
    assert cross_pairs(PAIRS, min_similarity=0.9) == []


def test_a_bad_threshold_is_named():
    with pytest.raises(ValueError, match=r"threshold must be in \(0, 1\], got 0"):
        cross_pairs(PAIRS, min_similarity=0)
