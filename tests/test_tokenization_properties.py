"""Property tests over arbitrary Unicode and bytes: no crash, and the fast Python tokenizer,
the character-by-character original algorithm and the in-graph layer all agree (tokens and
offsets)."""

import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings, strategies as st

from bert_tf import tokenization
from tests.helpers import shared_path

# Characters where implementations typically diverge: final sigma, dotted capital I, accents,
# spacing marks that NFD reorders (U+1D16D before U+1D165, U+302E before U+1715), nonspacing
# marks with class 0, CJK, controls, format characters, odd whitespace, private use,
# unassigned code points, compatibility characters.
TRICKY = list("ΣσςΑİıÉéẞß\u0301\u0345\u302e\u302f") + [
    "\U0001d16d", "\U0001d165", "\U0001d16e", "\u1715", "\u0f39", "\u093c", "\u4e00",
    "\u3400", "\uf900", "\U0002f800", "\u3000", "\u00a0", "\u2028", "\u2029", "\u200b",
    "\u200d", "\ufeff", "\x00", "\x0b", "\x1c", "\x85", "\ufffd", "\ue000", "\u0378", "…",
    "½", "ﬁ", "\u2126", "\u212a", "\U0001f600", "[", "#", " ", "\t", "a", "A"]
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
texts = st.text(alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(TRICKY)),
                max_size=40)


@pytest.fixture(scope="module")
def vocab_file():
    return str(shared_path("data/reference/vocab.txt"))


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def tokenizers(request, vocab_file):
    lower = request.param
    python = tokenization.FullTokenizer(vocab_file, lower, graph_min_batch=None)
    layer = tokenization.BertTokenizerLayer(vocab_file, lower_case=lower, with_offsets=True)
    graph = tf.function(layer, input_signature=[tf.TensorSpec([None], tf.string)])
    return python, graph


def _original(python, text):
    """The original's loop: BasicTokenizer, then WordpieceTokenizer on each word."""
    out = []
    for word in python.basic_tokenizer.tokenize(text):
        out.extend(python.wordpiece_tokenizer.tokenize(word))
    return out


def _byte_offsets(text, chars):
    starts = [0]
    for c in text:
        starts.append(starts[-1] + len(c.encode("utf-8")))
    return [starts[i] for i in chars]


@SETTINGS
@given(text=texts)
def test_fast_python_equals_original_algorithm(tokenizers, text):
    python, _ = tokenizers
    assert python.tokenize(text) == _original(python, text)


@SETTINGS
@given(text=texts)
def test_in_graph_equals_python_with_offsets(tokenizers, text):
    python, graph = tokenizers
    out = graph(tf.constant([text.encode("utf-8")]))
    tokens, starts, ends = python.tokenize_with_offsets(text)
    assert out["token_ids"].to_list()[0] == python.convert_tokens_to_ids(tokens)
    assert out["start_offsets"].to_list()[0] == _byte_offsets(text, starts)
    assert out["end_offsets"].to_list()[0] == _byte_offsets(text, ends)
    assert all(0 <= s < e <= len(text) for s, e in zip(starts, ends))


@SETTINGS
@given(data=st.binary(max_size=40))
def test_arbitrary_bytes_drop_undecodable_bytes_alike(tokenizers, data):
    python, graph = tokenizers
    ids = graph(tf.constant([data]))["token_ids"].to_list()[0]
    assert ids == python.encode(data) == python.convert_tokens_to_ids(_original(python, data))
