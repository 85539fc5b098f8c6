"""Offsets on real text: the original text between a token's offsets, normalised as the
tokenizer does, is the token without its "##" (for [UNK], a whole word)."""

import json
import unicodedata

import pytest
import tensorflow as tf

from bert_tf import tokenization
from bert_tf.tokenization import basic
from tests.helpers import shared_path

CORPUS = ["data/corpus/bert_format/wikitext2_raw_valid_test.sentences.txt",
          "data/corpus/bert_format/gutenberg_prose.sentences.txt",
          "data/corpus/bert_format/state_union.sentences.txt",
          "data/corpus/bert_format/inaugural.sentences.txt"]


def _corpus_sample():
    lines = []
    for rel in CORPUS:
        with open(shared_path(rel), encoding="utf-8") as f:
            lines.extend(line.rstrip("\n") for line in f if line.strip())
    non_ascii = [line for line in lines if not line.isascii()]
    return lines[::97] + non_ascii[::7]


def _squad_contexts():
    with open(shared_path("data/squad/dev-v1.1.half-a.json"), encoding="utf-8") as f:
        data = json.load(f)["data"]
    contexts = [p["context"] for article in data for p in article["paragraphs"]]
    return contexts[::6]


def _normalise(span, lower_case):
    """The tokenizer's normalisation of a span (final sigma folded: whether a sigma is final
    depends on the whole word, which the span may cut)."""
    text = basic.clean_text(span)
    if lower_case:
        text = basic.strip_accents(text.lower())
    return unicodedata.normalize("NFC", text).replace("ς", "σ")


def _body(token):
    body = token[2:] if token.startswith("##") and len(token) > 2 else token
    return unicodedata.normalize("NFC", body).replace("ς", "σ")


@pytest.fixture(scope="module")
def vocab_file():
    return str(shared_path("data/reference/vocab.txt"))


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
@pytest.mark.parametrize("source", ["corpus", "squad"])
def test_in_graph_offsets_span_their_tokens(vocab_file, source, lower_case):
    texts = _corpus_sample() if source == "corpus" else _squad_contexts()
    layer = tokenization.BertTokenizerLayer(vocab_file, lower_case=lower_case,
                                            with_offsets=True)
    inv = layer.vocabulary.id_to_token
    out = layer(tf.constant(texts))
    checked = 0
    for text, ids, starts, ends in zip(texts, out["token_ids"].to_list(),
                                       out["start_offsets"].to_list(),
                                       out["end_offsets"].to_list()):
        data = text.encode("utf-8")
        assert starts == sorted(starts) and all(s < e for s, e in zip(starts, ends))
        for i, s, e in zip(ids, starts, ends):
            span = data[s:e].decode("utf-8")  # offsets fall on character boundaries
            if inv[i] == "[UNK]":
                assert span.strip() and not any(c.isspace() for c in span)
            else:
                assert _normalise(span, lower_case) == _body(inv[i]), (text, span, inv[i])
            checked += 1
    assert checked > 10000


def test_python_offsets_equal_in_graph_byte_offsets(vocab_file):
    texts = _squad_contexts()[:40] + _corpus_sample()[-40:]
    python = tokenization.FullTokenizer(vocab_file, graph_min_batch=None)
    out = tokenization.BertTokenizerLayer(vocab_file, with_offsets=True)(tf.constant(texts))
    for text, starts, ends in zip(texts, out["start_offsets"].to_list(),
                                  out["end_offsets"].to_list()):
        _, char_starts, char_ends = python.tokenize_with_offsets(text)
        assert [len(text[:c].encode("utf-8")) for c in char_starts] == starts
        assert [len(text[:c].encode("utf-8")) for c in char_ends] == ends
