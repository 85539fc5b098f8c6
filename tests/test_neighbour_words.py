"""Word replacement by word-embedding neighbours (bert_tf.data.neighbour_words), on a
vocabulary small enough to know every word's nearest."""

import numpy as np
import pytest

from bert_tf.data.neighbour_words import NeighbourReplacer

VOCAB = ["[PAD]", "[UNK]", "the", "house", "home", "building", "truck", "lorry", "##s", "1999",
         "cars"]
TABLE = np.array([[0.0, 0.0], [0.5, 0.5], [1.0, 0.01], [1.0, 0.0], [0.95, 0.05], [0.8, 0.6],
                  [0.0, 1.0], [0.05, 0.95], [1.0, 0.0], [0.0, 1.0], [0.3, 0.95]])


def test_the_nearest_words_by_cosine_are_whole_words_of_four_letters_or_more():
    replacer = NeighbourReplacer(VOCAB, 3 * TABLE, 1.0, seed=0, neighbours=2)
    # "the" and "##s" lie nearer "house" than "building" does, but are not whole long words.
    assert sorted(replacer.neighbours(VOCAB.index("house"))) == ["building", "home"]
    assert sorted(replacer.neighbours(VOCAB.index("truck"))) == ["cars", "lorry"]


def test_every_eligible_word_is_replaced_and_the_rest_of_the_text_stays():
    replacer = NeighbourReplacer(VOCAB, TABLE, 1.0, seed=0, neighbours=1)
    assert replacer("The house, the TRUCK! In 1999 (cars) houses") == \
        "The home, the lorry! In 1999 (lorry) houses"


def test_words_are_replaced_with_the_probability_given_as_the_seed_decides():
    text = " ".join(["house", "truck"] * 1000)

    def replaced(seed, probability=0.3):
        out = NeighbourReplacer(VOCAB, TABLE, probability, seed, neighbours=2)(text).split()
        return sum(a != b for a, b in zip(out, text.split())) / 2000, out

    share, words = replaced(seed=1)
    assert 0.27 < share < 0.33
    assert replaced(seed=1)[1] == words and replaced(seed=2)[1] != words
    assert replaced(seed=1, probability=1.0)[0] == 1.0


@pytest.mark.parametrize("vocab, probability, message", [
    (VOCAB[:-1], 0.3, "the word-embedding table has 11 rows but the vocabulary 10 tokens"),
    (VOCAB, 0.0, r"the replacement probability must be in \(0, 1\], got 0.0"),
])
def test_a_table_of_another_vocabulary_or_a_bad_probability_is_refused(vocab, probability,
                                                                       message):
    with pytest.raises(ValueError, match=message):
        NeighbourReplacer(vocab, TABLE, probability, seed=0, neighbours=2)


def test_a_vocabulary_with_too_few_words_for_the_neighbours_is_refused():
    with pytest.raises(ValueError, match="4 whole words of 4 letters or more: too few for 8"):
        NeighbourReplacer(VOCAB[:7], TABLE[:7], 0.3, seed=0)
