"""Serving heads without an export: the outputs a head gives for model predictions, under the
names docs/serving.md documents (clients read them by name)."""

import re
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.model import BertClassifier, BertEncoder
from bert_tf.serving.heads import make_head
from bert_tf.serving.options import HeadOptions

DOCS = Path(__file__).resolve().parents[1] / "docs" / "serving.md"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "yes", "no"]


def _documented_outputs(kind):
    """The output names in docs/serving.md's table row of `kind`."""
    row = re.search(rf"^\| `{kind}` \|[^|]*\|([^|]*)\|", DOCS.read_text(encoding="utf-8"), re.M)
    return re.findall(r"`(\w+)`", row.group(1))


@pytest.fixture(scope="module")
def classifier_head():
    """The serving head of a tiny 3-label classifier (building its tokenizer takes ~1.4 s)."""
    keras.utils.set_random_seed(1)
    config = BertConfig.from_preset("L-1_H-32_A-2", vocab_size=len(VOCAB),
                                    max_position_embeddings=16)
    return make_head("classifier", BertClassifier(BertEncoder(config), 3), VOCAB, True, 16,
                     HeadOptions(labels=["neg", "neutral", "pos"]))


def test_classifier_outputs_are_the_documented_probabilities_logits_and_labels(
        classifier_head):
    head = classifier_head
    logits = tf.constant([[0.0, 1.0, 3.0], [2.0, -1.0, 0.5]])
    out = head.outputs({"logits": logits}, features={})
    assert list(out) == _documented_outputs("classifier") == [
        "probabilities", "logits", "label_id", "label"]
    np.testing.assert_allclose(out["probabilities"], tf.nn.softmax(logits), rtol=1e-6)
    np.testing.assert_array_equal(out["logits"], logits)
    assert out["label_id"].numpy().tolist() == [2, 0]
    assert out["label"].numpy().tolist() == [b"pos", b"neg"]


def test_best_span_takes_windows_shorter_than_max_answer_length():
    """A request of 16 tokens to a SQuAD export with max_answer_length 30 (an XLA export's
    warm-up sends such lengths) gets the best valid span, not an error."""
    from bert_tf.serving.span import best_span
    rng = np.random.default_rng(0)
    start, end = rng.normal(size=(2, 16)).astype(np.float32)
    candidates = np.arange(16) >= 3
    got = best_span(tf.constant(start[None]), tf.constant(end[None]),
                    tf.constant(candidates[None]), max_answer_length=30)
    pairs = [(start[i] + end[j], i, j) for i in range(3, 16) for j in range(i, 16)]
    score, i, j = max(pairs)
    assert (int(got[0][0]), int(got[1][0])) == (i, j)
    assert float(got[2][0]) == score
