"""Backward passes that recompute (bert_tf.model.recompute) give the gradients automatic
differentiation gives for the same forward computation, eagerly and under XLA."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.model.activations import gelu, gelu_tanh
from bert_tf.model.dropout import dropout16
from bert_tf.model.recompute import activation_then_dense, attention_probs, recomputed_attention
from bert_tf.model.transformer import TransformerBlock


def _normal(shape, seed):
    return tf.constant(np.random.default_rng(seed).normal(size=shape).astype(np.float32))


def _value_and_grads(fn, inputs, weights, jit_compile):
    @tf.function(jit_compile=jit_compile)
    def run(*inputs):
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            y = tf.reduce_sum(fn(*inputs) * weights)      # a random projection of the output
        return y, tape.gradient(y, inputs)
    return run(*inputs)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_attention_gradients_match_autodiff_with_the_same_dropout_mask(jit_compile):
    q, k, v = (_normal([2, 3, 7, 4], s) for s in range(3))
    mask = np.ones([2, 7], np.float32)
    mask[1, 5:] = 0                                                    # padding in one row
    bias = tf.constant((1 - mask[:, None, None, :]) * -10000.0)
    seed = tf.constant([5, 9], tf.int64)
    weights = _normal([2, 3, 7, 4], 9)

    def autodiff(q, k, v):
        return tf.matmul(dropout16(attention_probs(q, k, bias), 0.3, seed), v)

    got, got_grads = _value_and_grads(lambda q, k, v: recomputed_attention(q, k, v, bias, 0.3, seed),
                                      (q, k, v), weights, jit_compile)
    want, want_grads = _value_and_grads(autodiff, (q, k, v), weights, jit_compile)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    for g, w in zip(got_grads, want_grads):
        assert np.abs(w.numpy()).max() > 1e-2                        # a real gradient
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("activation", [gelu, gelu_tanh, tf.nn.relu])
@pytest.mark.parametrize("jit_compile", [False, True])
def test_activation_then_dense_gradients_match_autodiff(activation, jit_compile):
    h, kernel, bias = _normal([2, 5, 6], 0), _normal([6, 3], 1), _normal([3], 2)
    weights = _normal([2, 5, 3], 3)

    def autodiff(h, kernel, bias):
        return tf.einsum("bsi,io->bso", activation(h), kernel) + bias

    got, got_grads = _value_and_grads(lambda h, k, b: activation_then_dense(h, activation, k, b),
                                      (h, kernel, bias), weights, jit_compile)
    want, want_grads = _value_and_grads(autodiff, (h, kernel, bias), weights, jit_compile)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    for g, w in zip(got_grads, want_grads):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)


def test_training_block_without_dropout_equals_the_inference_block_and_its_gradients():
    """training=True takes the recomputing FFN path; with dropout off it must compute the same
    function as training=False, with the same weight gradients."""
    block = TransformerBlock(32, 4, 64, dropout_rate=0.0, attention_dropout_rate=0.0)
    x, weights = _normal([2, 5, 32], 0), _normal([2, 5, 32], 1)
    bias = tf.zeros([2, 1, 1, 5])
    block(x, bias)
    results = []
    for training in (True, False):
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(block(x, bias, training=training) * weights)
        results.append((y, tape.gradient(y, block.trainable_variables)))
    np.testing.assert_allclose(results[0][0].numpy(), results[1][0].numpy(), rtol=1e-6)
    for g, w in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)
