"""bert_tf.serving.portable.litert_graph: the LiteRT export copy's rewrites keep the encoder's
outputs (the LiteRT export tests check the converted file's operators)."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers import ragged_features

from bert_tf.config import BertConfig
from bert_tf.model.attention import SelfAttention
from bert_tf.model.encoder import BertEncoder
from bert_tf.model.precision import with_dtype_policy
from bert_tf.serving.portable.litert_graph import CompactLayerNorm, for_litert

CONFIG = BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=64, max_position_embeddings=16)


def _encoder():
    """A small encoder whose LayerNorms scale and shift (fresh ones are 1 and 0)."""
    keras.utils.set_random_seed(3)
    encoder = BertEncoder(CONFIG)
    rng = np.random.default_rng(0)
    for layer in encoder._flatten_layers(include_self=False, recursive=True):
        if isinstance(layer, keras.layers.LayerNormalization):
            layer.gamma.assign(rng.uniform(0.5, 2.0, layer.gamma.shape).astype(np.float32))
            layer.beta.assign(rng.normal(0.0, 0.5, layer.beta.shape).astype(np.float32))
    return encoder


@pytest.mark.parametrize("options", [{}, {"flat_tokens": True}, {"pooled_only": True},
                                     {"flat_tokens": True, "pooled_only": True}])
def test_the_litert_copy_gives_the_encoders_outputs(options):
    encoder = _encoder()
    want = tf.function(lambda f: encoder(f, training=False))(ragged_features())
    copy = for_litert(with_dtype_policy(encoder, "float32", **options))
    got = tf.function(lambda f: copy(f, training=False))(ragged_features())
    np.testing.assert_allclose(got["pooled_output"], want["pooled_output"], atol=1e-5)
    length = got["sequence_output"].shape[1]
    np.testing.assert_allclose(got["sequence_output"], want["sequence_output"][:, :length],
                               atol=1e-5)
    assert all(block.attention.fused_projections for block in copy.blocks)
    assert not any(block.attention.fused_projections for block in encoder.blocks)


def test_every_layernorm_of_the_copy_is_compact_with_the_same_weights():
    encoder = _encoder()
    copy = for_litert(with_dtype_policy(encoder, "float32"))
    norms = [layer for layer in copy._flatten_layers(include_self=False, recursive=True)
             if isinstance(layer, (keras.layers.LayerNormalization, CompactLayerNorm))]
    assert norms and all(isinstance(layer, CompactLayerNorm) for layer in norms)
    for name in ("gamma", "beta"):
        np.testing.assert_array_equal(
            getattr(copy.blocks[0].attention_layer_norm, name).numpy(),
            getattr(encoder.blocks[0].attention_layer_norm, name).numpy())


def test_a_compact_layernorm_round_trips_through_keras_serialization():
    layer = CompactLayerNorm(epsilon=1e-6, name="attention_layer_norm")
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(again) is CompactLayerNorm
    assert (again.epsilon, again.name) == (1e-6, "attention_layer_norm")


def test_fused_attention_is_for_inference_only_training_keeps_dropout():
    keras.utils.set_random_seed(3)
    attention = SelfAttention(32, 4, dropout_rate=0.5)
    attention.fused_projections = True
    x, bias = tf.random.normal([2, 6, 32]), tf.zeros([2, 1, 1, 6])
    assert not np.allclose(attention(x, bias, training=True), attention(x, bias, training=False))
