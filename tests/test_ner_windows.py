"""Word-aligned WordPiece windows: first-sub-token labels, ignored sub-tokens, long inputs split
into overlapping windows, every word predicted exactly once."""

import numpy as np
import pytest

from bert_tf.data.ner import (WordScores, encode_units, group_sentences, per_sentence,
                              read_conll, word_windows)
from bert_tf.tokenization import FullTokenizer
from helpers import shared_path


@pytest.fixture(scope="module")
def tokenizer():
    return FullTokenizer(str(shared_path("data/reference/vocab.txt")), do_lower_case=True)


@pytest.fixture(scope="module")
def dev_head():
    """The first 12 documents of the CoNLL-2003 dev set."""
    conll = read_conll(shared_path("data/conll2003/eng.testa"))
    keep = [i for i, s in enumerate(conll.sentences) if s.document < 12]
    conll.sentences = [conll.sentences[i] for i in keep]
    conll.docstarts = {i: line for i, line in conll.docstarts.items() if i < len(keep)}
    conll.num_documents = 12
    return conll


def test_label_sits_on_the_first_sub_token_only(tokenizer):
    words = ["unaffable", "take", "over"]   # una ##ffa ##ble
    pieces = [tokenizer.tokenize(w) for w in words]
    assert len(pieces[0]) == 3
    features = encode_units([words], tokenizer, 32, 16, label_ids=[[3, 0, 0]])
    a = features.arrays
    tokens = tokenizer.convert_ids_to_tokens(a["input_ids"][0][a["input_mask"][0] == 1])
    assert tokens == ["[CLS]"] + sum(pieces, []) + ["[SEP]"]
    first_positions = np.cumsum([1] + [len(p) for p in pieces[:-1]])
    assert np.flatnonzero(a["label_weights"][0]).tolist() == first_positions.tolist()
    assert a["label_ids"][0, first_positions[0]] == 3
    # Continuation pieces, [CLS], [SEP] and padding carry weight 0 (ignored by the loss).
    assert a["label_weights"][0].sum() == len(words)


def test_multi_piece_word_from_conll(tokenizer, dev_head):
    # A real word that WordPiece splits: only its first piece is labelled.
    sentence = next(s for s in dev_head.sentences
                    if any(len(tokenizer.tokenize(w)) > 1 for w in s.words))
    k = next(i for i, w in enumerate(sentence.words) if len(tokenizer.tokenize(w)) > 1)
    n = len(tokenizer.tokenize(sentence.words[k]))
    features = encode_units([sentence.words], tokenizer, 128, 64, label_ids=[[1] * len(
        sentence.words)])
    first = 1 + sum(len(tokenizer.tokenize(w)) for w in sentence.words[:k])
    weights = features.arrays["label_weights"][0]
    assert weights[first] == 1.0 and weights[first + 1:first + n].sum() == 0.0


def test_word_windows_cover_every_word_within_budget():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 4, size=300).tolist()
    windows = word_windows(lengths, budget=30, stride=10)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    covered = np.zeros(len(lengths), bool)
    for first, end in windows:
        assert starts[end] - starts[first] <= 30
        covered[first:end] = True
    assert covered.all()
    assert all(b[0] > a[0] for a, b in zip(windows, windows[1:]))          # progress
    assert all(b[0] <= a[1] for a, b in zip(windows, windows[1:]))         # overlap, no gap
    assert all(starts[b[0]] - starts[a[0]] <= 10 or b[0] == a[0] + 1
               for a, b in zip(windows, windows[1:]))
    assert word_windows([5, 2], budget=30, stride=10) == [(0, 2)]


def test_word_longer_than_a_window_gets_one_of_its_own():
    assert word_windows([2, 50, 2], budget=10, stride=5) == [(0, 1), (1, 2), (2, 3)]


def test_documents_are_windowed_and_every_word_comes_back_once(tokenizer, dev_head):
    units = group_sentences(dev_head, "document")
    assert len(units.words) == 12
    tags = sorted({t for s in dev_head.sentences for t in s.tags})
    index = {t: i for i, t in enumerate(tags)}
    label_ids = [[index[t] for t in unit] for unit in units.tags]
    features = encode_units(units.words, tokenizer, 32, 8, label_ids=label_ids)
    a = features.arrays
    assert features.num_windows > 3 * len(units.words)       # documents of ~100s of pieces
    assert a["input_mask"].sum(axis=1).max() <= 32
    # An oracle that outputs each window's own labels must reproduce every gold tag, read back
    # through max-context selection and per-sentence splitting.
    scores = WordScores(features, [len(w) for w in units.words], len(tags))
    for w in range(features.num_windows):
        scores.add(w, np.eye(len(tags), dtype=np.float32)[a["label_ids"][w]])
    predicted = [[tags[i] for i in s.argmax(-1)] for s in scores.result()]
    assert per_sentence(units, predicted) == [s.tags for s in dev_head.sentences]


def test_missing_window_prediction_is_an_error(tokenizer):
    features = encode_units([["a", "b"], ["c"]], tokenizer, 16, 8)
    scores = WordScores(features, [2, 1], 3)
    scores.add(0, np.zeros((16, 3), np.float32))
    with pytest.raises(RuntimeError, match="unit 1"):
        scores.result()


def test_word_of_deleted_characters_still_gets_a_position(tokenizer):
    features = encode_units([["a", "\u200b", "b"]], tokenizer, 16, 8, label_ids=[[1, 2, 1]])
    a = features.arrays
    assert a["label_weights"][0].sum() == 3
    unk = tokenizer.special_ids["[UNK]"]
    assert a["input_ids"][0, 2] == unk and a["label_ids"][0, 2] == 2
