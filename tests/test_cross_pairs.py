"""bert_tf.data.cross_pairs: new pairs of a pair task's own sentences (--distill_cross_pairs)."""

import pytest

from bert_tf.data import cross_pairs as module
from bert_tf.data.cross_pairs import cross_pairs, sentence_key

PAIRS = [("the cat sat on the mat", "a dog barked loudly"),
         ("The cat sat on a mat today.", "stocks rose sharply"),
         ("markets fell", "stocks fell sharply today")]
CATS = ("the cat sat on the mat", "The cat sat on a mat today.")      # similarity 0.85
STOCKS = ("stocks rose sharply", "stocks fell sharply today")         # similarity 0.46


def test_each_sentence_meets_its_nearest_sentence_of_another_pair_once():
    # "markets fell" is near its own partner only, "a dog barked loudly" near nothing; the
    # matches seen from the other side ("The cat sat on a mat today.", ...) are not repeated.
    assert cross_pairs(PAIRS) == [CATS, STOCKS]


def test_sentences_already_paired_anywhere_are_not_paired_again():
    pairs = [("the cat sat", "dogs bark"), ("the cat sat down", "birds sing")]
    assert cross_pairs(pairs) == [("the cat sat", "the cat sat down")]
    assert cross_pairs(pairs + [("The cat sat.", "the cat sat down")]) == []


def test_a_pair_given_in_both_orders_is_still_one_pair():
    assert cross_pairs(PAIRS + [(b, a) for a, b in PAIRS]) == cross_pairs(PAIRS)


def test_excluded_pairs_such_as_the_evaluation_pairs_are_never_made():
    assert cross_pairs(PAIRS, exclude=[CATS[::-1]]) == [STOCKS]


def test_held_out_sentences_take_no_part():
    assert cross_pairs(PAIRS, held_out={sentence_key("the cat sat on a mat today")}) == [STOCKS]
    # "stocks rose sharply" loses its only match, and "markets fell" had none but its partner.
    assert cross_pairs(PAIRS, held_out={sentence_key(STOCKS[1])}) == [CATS]


def test_pairs_below_the_threshold_are_not_made():
    assert cross_pairs(PAIRS, min_similarity=0.5) == [CATS]


def test_the_result_does_not_depend_on_the_chunk_size(monkeypatch):
    monkeypatch.setattr(module, "_CHUNK_CELLS", 7)           # one sentence a chunk
    assert cross_pairs(PAIRS) == [CATS, STOCKS]


def test_words_are_unicode_letters_and_digits_case_folded():
    assert sentence_key("Straße, 2 Läufer!") == "strasse2läufer"
    assert cross_pairs([("der Läufer läuft", "x"), ("DER LÄUFER LÄUFT schnell", "y")]) == [
        ("der Läufer läuft", "DER LÄUFER LÄUFT schnell")]


@pytest.mark.parametrize("threshold", [0, 1.0])
def test_a_bad_threshold_is_named(threshold):
    with pytest.raises(ValueError, match=r"threshold must be in \(0, 1\), got"):
        cross_pairs(PAIRS, min_similarity=threshold)
