"""Instance layout, truncation and masked-LM selection follow google-research/bert's algorithm.

The layout is compared, draw for draw, with a plain list-of-sentences reference written from the
algorithm's description; masking is checked statistically on real corpus text (binomial bounds of
4.5 standard deviations; every draw is seeded, so the tests are deterministic).
"""

import functools
import math
import random

import numpy as np
import pytest

from bert_tf import tokenization
from bert_tf.data.pretraining import instances, masking
from bert_tf.data.pretraining.shard_worker import masking_vocab
from tests.helpers import shared_path

Z = 4.5


@functools.lru_cache(maxsize=None)
def _tokenizer():
    return tokenization.FullTokenizer(str(shared_path("data/reference/vocab.txt")), True)


@functools.lru_cache(maxsize=None)
def _documents(name="inaugural.sentences.txt", max_docs=12):
    """Real documents as lists of sentences of token ids."""
    text = shared_path(f"data/corpus/bert_format/{name}").read_text(encoding="utf-8")
    docs = []
    for block in text.split("\n\n")[:max_docs]:
        sentences = [_tokenizer().encode(line) for line in block.split("\n")]
        docs.append([s for s in sentences if s])
    return docs


def _flatten(docs):
    flat, offsets, first, end = [], [0], [], []
    for doc in docs:
        first.append(len(offsets) - 1)
        for sentence in doc:
            flat.extend(sentence)
            offsets.append(len(flat))
        end.append(len(offsets) - 1)
    return np.array(flat, np.int32), offsets, first, end


def _reference(documents, max_num_tokens, short_seq_prob, dupe_factor, rng):
    """The algorithm as google-research/bert describes it, on token lists; randint(a, b) is
    a + int(random() * (b - a + 1)) as in the implementation under test."""
    def randint(a, b):
        return a + int(rng.random() * (b - a + 1))

    out = []
    for _ in range(dupe_factor):
        for d, doc in enumerate(documents):
            target = max_num_tokens
            if rng.random() < short_seq_prob:
                target = randint(2, max_num_tokens)
            chunk, length, i = [], 0, 0
            while i < len(doc):
                chunk.append(doc[i])
                length += len(doc[i])
                if i == len(doc) - 1 or length >= target:
                    a_end = randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
                    a = [t for s in chunk[:a_end] for t in s]
                    if len(chunk) == 1 or rng.random() < 0.5:
                        for _ in range(10):
                            r = randint(0, len(documents) - 1)
                            if r != d:
                                break
                        other = documents[r]
                        b = []
                        for s in other[randint(0, len(other) - 1):]:
                            b.extend(s)
                            if len(b) >= target - len(a):
                                break
                        i -= len(chunk) - a_end
                        out.append((a, b, 1))
                    else:
                        out.append((a, [t for s in chunk[a_end:] for t in s], 0))
                    chunk, length = [], 0
                i += 1
    return out


@pytest.mark.parametrize("max_seq_length,short_seq_prob", [(128, 0.1), (32, 0.5), (512, 0.0)])
def test_layout_matches_the_reference_draw_for_draw(max_seq_length, short_seq_prob):
    docs = _documents()
    flat, offsets, first, end = _flatten(docs)
    a0, a1, b0, b1, label, forced = instances.layout_instances(
        offsets, first, end, max_seq_length - 3, short_seq_prob, 3, random.Random(7))
    expected = _reference(docs, max_seq_length - 3, short_seq_prob, 3, random.Random(7))
    got = [(flat[x0:x1].tolist(), flat[y0:y1].tolist(), int(lab))
           for x0, x1, y0, y1, lab in zip(a0, a1, b0, b1, label)]
    assert len(got) == len(expected) > 50
    assert got == expected
    assert np.all(label[forced == 1] == 1)


def test_single_document_corpus_takes_random_next_from_itself():
    docs = _documents(max_docs=1)
    flat, offsets, first, end = _flatten(docs)
    a0, a1, b0, b1, label, _ = instances.layout_instances(offsets, first, end, 125, 0.1, 2,
                                                          random.Random(1))
    assert len(a0) > 5 and label.sum() > 0
    assert np.all((b0 >= offsets[0]) & (b1 <= offsets[-1]))


def _truncate_by_loop(len_a, len_b, max_num_tokens):
    while len_a + len_b > max_num_tokens:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return len_a, len_b


def test_truncation_lengths_equal_trimming_the_longer_side_one_token_at_a_time():
    cases = [(la, lb, m) for la in range(1, 30) for lb in range(1, 30) for m in (2, 3, 7, 20, 40)]
    la, lb, m = (np.array(c) for c in zip(*cases))
    zeros = np.zeros_like(la)
    a0, a1, b0, b1 = instances.truncate_pairs(zeros, la, zeros + 100, 100 + lb, m,
                                              np.random.default_rng(0))
    for i, case in enumerate(cases):
        assert (a1[i] - a0[i], b1[i] - b0[i]) == _truncate_by_loop(*case), case
    assert np.all(a0 >= 0) and np.all(a1 <= la) and np.all(b0 >= 100) and np.all(b1 <= 100 + lb)


def test_truncation_trims_front_and_back_equally_often():
    n = 20000
    a0, a1, b0, b1 = instances.truncate_pairs(np.zeros(n, int), np.full(n, 50), np.zeros(n, int),
                                              np.full(n, 2), 12, np.random.default_rng(1))
    assert np.all(a1 - a0 == 10)
    front = a0.sum() / (40 * n)  # 40 removals per instance
    assert abs(front - 0.5) < Z * math.sqrt(0.25 / (40 * n))


def test_assembled_tokens_are_cls_a_sep_b_sep_then_padding():
    flat = np.arange(100, 200, dtype=np.int32)
    ids, len_a, len_b = instances.assemble_tokens(flat, np.array([0]), np.array([3]),
                                                  np.array([50]), np.array([52]), 10, 101, 102)
    assert ids.tolist() == [[101, 100, 101, 102, 102, 150, 151, 102, 0, 0]]
    assert (len_a.tolist(), len_b.tolist()) == ([3], [2])


@functools.lru_cache(maxsize=None)
def _real_batch(max_seq_length=128, seed=3):
    docs = _documents("wikitext2_raw_valid_test.sentences.txt", 20)
    flat, offsets, first, end = _flatten(docs)
    a0, a1, b0, b1, _, _ = instances.layout_instances(offsets, first, end, max_seq_length - 3,
                                                      0.1, 2, random.Random(seed))
    a0, a1, b0, b1 = instances.truncate_pairs(a0, a1, b0, b1, max_seq_length - 3,
                                              np.random.default_rng(seed))
    ids, len_a, len_b = instances.assemble_tokens(flat, a0, a1, b0, b1, max_seq_length,
                                                  _tokenizer().vocab["[CLS]"],
                                                  _tokenizer().vocab["[SEP]"])
    return ids, len_a, len_b


def _mask(whole_word, prob=0.15, predictions=20, seed=5):
    ids, len_a, len_b = _real_batch()
    vocab = masking_vocab(_tokenizer())
    batch = masking.mask_batch(ids, len_a, len_b, prob, predictions, vocab,
                               np.random.default_rng(seed), whole_word=whole_word)
    return ids, len_a, len_b, batch, vocab


@pytest.mark.parametrize("whole_word", [False, True])
def test_masked_positions_are_sorted_real_non_special_tokens(whole_word):
    ids, len_a, len_b, batch, vocab = _mask(whole_word)
    real = batch.masked_lm_weights > 0
    positions = batch.masked_lm_positions
    assert len(ids) > 1000
    for row in range(len(ids)):
        p = positions[row][real[row]]
        assert np.all(np.diff(p) > 0)
        assert np.all(positions[row][~real[row]] == 0)
        forbidden = {0, len_a[row] + 1, len_a[row] + len_b[row] + 2}
        assert not forbidden & set(p.tolist())
        assert np.all(p < len_a[row] + len_b[row] + 3)
    np.testing.assert_array_equal(batch.masked_lm_ids[real],
                                  np.take_along_axis(ids, positions, 1)[real])
    unchanged = np.ones_like(ids, bool)
    rows = np.broadcast_to(np.arange(len(ids))[:, None], positions.shape)
    unchanged[rows[real], positions[real]] = False
    np.testing.assert_array_equal(batch.input_ids[unchanged], ids[unchanged])
    assert batch.input_ids.max() < vocab.vocab_size and batch.input_ids.min() >= 0


def test_number_of_predictions_is_round_len_times_prob_capped():
    ids, len_a, len_b, batch, _ = _mask(False)
    length = len_a + len_b + 3
    expected = [min(20, max(1, round(n * 0.15))) for n in length.tolist()]  # Python's round
    assert batch.masked_lm_weights.sum(axis=1).astype(int).tolist() == expected
    masked_fraction = batch.masked_lm_weights.sum() / length.sum()
    assert abs(masked_fraction - 0.15) < 0.01


def test_replacement_is_80_percent_mask_10_random_10_unchanged():
    ids, _, _, batch, vocab = _mask(False)
    real = batch.masked_lm_weights > 0
    new = np.take_along_axis(batch.input_ids, batch.masked_lm_positions, 1)[real]
    old = batch.masked_lm_ids[real]
    n = real.sum()
    as_mask = (new == vocab.mask_id).mean()
    kept = (new == old).mean()
    for observed, p in ((as_mask, 0.8), (kept, 0.1), (1 - as_mask - kept, 0.1)):
        assert abs(observed - p) < Z * math.sqrt(p * (1 - p) / n), (observed, p, n)
    assert (batch.num_masked, batch.num_kept + batch.num_random) == (
        (new == vocab.mask_id).sum(), n - (new == vocab.mask_id).sum())


def test_whole_word_masking_never_splits_a_word():
    ids, len_a, len_b, batch, vocab = _mask(True)
    cont = vocab.is_continuation
    real = batch.masked_lm_weights > 0
    words_checked = 0
    for row in range(len(ids)):
        chosen = set(batch.masked_lm_positions[row][real[row]].tolist())
        for lo, hi in ((1, len_a[row] + 1), (len_a[row] + 2, len_a[row] + len_b[row] + 2)):
            word = []
            for pos in range(lo, hi + 1):
                if pos < hi and word and cont[ids[row, pos]]:
                    word.append(pos)
                    continue
                if len(word) > 1:
                    picked = [p in chosen for p in word]
                    assert all(picked) or not any(picked), (row, word)
                    words_checked += any(picked)
                word = [pos]
    assert words_checked > 50
    predictions = batch.masked_lm_weights.sum(axis=1)
    budget = np.minimum(20, np.maximum(1, np.rint((len_a + len_b + 3) * 0.15)))
    assert np.all(predictions <= budget)
    assert predictions.sum() / budget.sum() > 0.97  # skipping too-long words rarely loses much
