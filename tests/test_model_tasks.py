"""Heads and task models: shapes, float32 logits under mixed precision, .keras round trips."""

import keras
import numpy as np
import pytest

from bert_tf import (BertClassifier, BertConfig, BertEncoder, BertMultipleChoice, BertPretrainer,
                     BertSpanLabeler, BertTokenClassifier)

TINY = BertConfig.from_preset("L-2_H-64_A-4", vocab_size=200, max_position_embeddings=40)


def inputs(batch=2, seq=12, seed=0):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int32)
    mask[:, -3:] = 0
    return {"input_ids": rng.integers(1, 200, (batch, seq)).astype(np.int32) * mask,
            "input_mask": mask, "segment_ids": np.zeros((batch, seq), np.int32),
            "masked_lm_positions": np.tile(np.array([[1, 4, 6]], np.int32), (batch, 1))}


def build(kind, dtype=None):
    encoder = BertEncoder(TINY, dtype=dtype)
    return {"pretrainer": lambda: BertPretrainer(encoder),
            "classifier": lambda: BertClassifier(encoder, num_classes=3),
            "regressor": lambda: BertClassifier(encoder, num_classes=1),
            "span": lambda: BertSpanLabeler(encoder),
            "tagger": lambda: BertTokenClassifier(encoder, num_classes=5),
            "choice": lambda: BertMultipleChoice(encoder)}[kind]()


def call(model, kind, x):
    if kind == "choice":  # [B, C, S]: 2 examples x 4 choices
        x = {k: np.stack([v] * 4, axis=1) for k, v in x.items() if k != "masked_lm_positions"}
    return model(x)


EXPECTED = {"pretrainer": {"mlm_logits": (2, 3, 200), "nsp_logits": (2, 2)},
            "classifier": {"logits": (2, 3)}, "regressor": {"logits": (2, 1)},
            "span": {"start_logits": (2, 12), "end_logits": (2, 12)},
            "tagger": {"logits": (2, 12, 5)}, "choice": {"logits": (2, 4)}}


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_output_shapes(kind):
    out = call(build(kind), kind, inputs())
    assert {k: tuple(v.shape) for k, v in out.items()} == EXPECTED[kind]


def test_pretrainer_parameter_count_for_base():
    model = BertPretrainer(BertEncoder(BertConfig.from_preset("base")))
    assert model.count_params() == 110_106_428


def test_mlm_decoder_is_tied_to_word_embeddings():
    model = build("pretrainer")
    x = inputs()
    before = model(x)["mlm_logits"].numpy()
    table = model.encoder.word_embeddings
    table.assign(table.numpy() * 2.0)
    assert not np.allclose(model(x)["mlm_logits"].numpy(), before)
    own = [w for w in model.mlm_head.weights if tuple(w.shape) == (200, 64)]
    assert own == []  # the head owns no [V, H] matrix of its own


def test_mlm_logits_only_at_requested_positions():
    model = build("pretrainer")
    x = inputs()
    seq = model.encoder(x)["sequence_output"].numpy()
    logits = model(x)["mlm_logits"].numpy()
    head = model.mlm_head
    h = head.layer_norm(head.transform(seq[:, [1, 4, 6]])).numpy()
    expected = h @ model.encoder.word_embeddings.numpy().T + head.output_bias.numpy()
    np.testing.assert_allclose(logits, expected, atol=1e-4)


def test_pretrainer_accepts_an_empty_batch_without_masked_positions():
    x = dict(inputs(batch=0), masked_lm_positions=np.zeros((0, 0), np.int32))
    out = build("pretrainer")(x)
    assert out["mlm_logits"].shape == (0, 0, 200) and out["nsp_logits"].shape == (0, 2)


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_round_trip_through_keras_file(kind, tmp_path):
    model = build(kind)
    x = inputs()
    path = tmp_path / f"{kind}.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    before, after = call(model, kind, x), call(restored, kind, x)
    for key in before:
        np.testing.assert_array_equal(after[key], before[key])


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_logits_are_float32_under_mixed_precision(policy):
    for kind in ("pretrainer", "classifier", "span"):
        out = call(build(kind, dtype=policy), kind, inputs())
        assert all(v.dtype == "float32" for v in out.values()), kind
