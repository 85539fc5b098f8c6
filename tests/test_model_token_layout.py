"""Padding-free inference (BertEncoder(skip_padding=True), bert_tf.model.token_layout): the blocks'
per-token layers run on the real tokens only, and the outputs at real tokens are those of the
padded computation. FlatTokens (flat_tokens=True, the LiteRT layout) runs them on every
position as rows, with every output unchanged."""

import keras
import numpy as np
import tensorflow as tf
from helpers import RAGGED_MASK, ragged_features

from bert_tf.config import BertConfig
from bert_tf.model.encoder import BertEncoder
from bert_tf.model.int8 import int8_model
from bert_tf.model.token_layout import FlatTokens, RealTokens
from bert_tf.model.precision import with_dtype_policy

CONFIG = BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=64, max_position_embeddings=16)
MASK = RAGGED_MASK


def _padded_and_packed():
    keras.utils.set_random_seed(3)
    padded = BertEncoder(CONFIG)
    return padded, with_dtype_policy(padded, "float32", skip_padding=True)


def test_packing_moves_the_real_tokens_and_back():
    layout = RealTokens(tf.constant(MASK))
    x = tf.constant(np.arange(18, dtype=np.float32).reshape(3, 6, 1))
    packed = layout.to_rows(x)
    assert packed.numpy().ravel().tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8, 12]
    np.testing.assert_array_equal(layout.to_padded(packed).numpy(), x.numpy() * MASK[..., None])


def test_skipping_padding_keeps_every_output_at_real_tokens():
    padded, packed = _padded_and_packed()
    want = tf.function(lambda f: padded(f, training=False))(ragged_features())
    got = tf.function(lambda f: packed(f, training=False))(ragged_features())
    real = MASK.astype(bool)
    np.testing.assert_allclose(got["pooled_output"], want["pooled_output"], atol=1e-5)
    for name in ("sequence_output",):
        np.testing.assert_allclose(got[name].numpy()[real], want[name].numpy()[real], atol=1e-5)
        assert not got[name].numpy()[~real].any()                      # zeros at padding
    for g, w in zip(got["encoder_outputs"], want["encoder_outputs"]):
        np.testing.assert_allclose(g.numpy()[real], w.numpy()[real], atol=1e-5)


def test_skipping_padding_keeps_an_int8_models_outputs_at_real_tokens():
    padded, _ = _padded_and_packed()
    quantized, quantized_packed = int8_model(padded), int8_model(padded, skip_padding=True)
    want = tf.function(lambda f: quantized(f, training=False))
    got = tf.function(lambda f: quantized_packed(f, training=False))
    np.testing.assert_allclose(got(ragged_features())["pooled_output"],
                               want(ragged_features())["pooled_output"], atol=1e-5)


def test_training_runs_on_the_padded_layout():
    _, packed = _padded_and_packed()
    out = packed(ragged_features(), training=True)
    assert out["sequence_output"].numpy()[~MASK.astype(bool)].any()    # padding computed


def test_skip_padding_survives_the_config_round_trip():
    _, packed = _padded_and_packed()
    copy = BertEncoder.from_config(packed.get_config())
    assert copy.skip_padding and not BertEncoder(CONFIG).skip_padding


def test_a_batch_without_padding_packs_to_the_same_tokens():
    mask = tf.ones((2, 3), tf.int32)
    layout = RealTokens(mask)
    x = tf.reshape(tf.range(6, dtype=tf.float32), (2, 3, 1))
    assert layout.to_rows(x).numpy().ravel().tolist() == [0, 1, 2, 3, 4, 5]
    np.testing.assert_array_equal(layout.to_padded(layout.to_rows(x)).numpy(), x.numpy())


def test_flat_tokens_keep_every_output_padding_included():
    keras.utils.set_random_seed(3)
    padded = BertEncoder(CONFIG)
    flat = with_dtype_policy(padded, "float32", skip_padding=False, flat_tokens=True)
    want = tf.function(lambda f: padded(f, training=False))(ragged_features())
    got = tf.function(lambda f: flat(f, training=False))(ragged_features())
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(got[name], want[name], atol=1e-6)
    assert BertEncoder.from_config(flat.get_config()).flat_tokens


def test_flat_tokens_are_rows_of_every_position():
    flat = FlatTokens(tf.constant(MASK))
    x = tf.constant(np.arange(18, dtype=np.float32).reshape(3, 6, 1))
    assert flat.to_rows(x).shape == (18, 1)
    np.testing.assert_array_equal(flat.to_padded(flat.to_rows(x)).numpy(), x.numpy())


def test_pooled_only_gives_the_same_pooled_output_from_the_first_position_alone():
    keras.utils.set_random_seed(3)
    padded = BertEncoder(CONFIG)
    want = tf.function(lambda f: padded(f, training=False))(ragged_features())
    for options in ({}, {"flat_tokens": True}, {"skip_padding": True}):
        pooled = with_dtype_policy(padded, "float32", pooled_only=True, **options)
        got = tf.function(lambda f: pooled(f, training=False))(ragged_features())
        np.testing.assert_allclose(got["pooled_output"], want["pooled_output"], atol=1e-5)
        np.testing.assert_allclose(got["sequence_output"][:, 0],
                                   want["sequence_output"][:, 0], atol=1e-5)
        assert got["sequence_output"].shape[1] == 1
    assert BertEncoder.from_config(pooled.get_config()).pooled_only
