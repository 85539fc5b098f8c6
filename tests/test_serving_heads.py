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
