"""GELU activations: exact values and gradients (computed from the input alone, see
bert_tf.model.activations) against float64 formulas, eager and under XLA."""

import math

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.model.activations import gelu, gelu_tanh


def _erf(x):
    return np.vectorize(math.erf)(x)


def _reference(x, approximate):
    """float64 (value, derivative) of GELU."""
    if approximate:
        c = math.sqrt(2.0 / math.pi)
        t = np.tanh(c * (x + 0.044715 * x ** 3))
        return 0.5 * x * (1 + t), 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)
    cdf = 0.5 * (1 + _erf(x / math.sqrt(2.0)))
    return x * cdf, cdf + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


@pytest.mark.parametrize("fn,approximate", [(gelu, False), (gelu_tanh, True)])
@pytest.mark.parametrize("jit_compile", [False, True])
def test_gelu_value_and_gradient_match_float64_formulas(fn, approximate, jit_compile):
    x64 = np.linspace(-10.0, 10.0, 4001)

    @tf.function(jit_compile=jit_compile)
    def value_and_grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return y, tape.gradient(y, x)

    y, dy = value_and_grad(tf.constant(x64, tf.float32))
    want_y, want_dy = _reference(x64, approximate)
    # float32 has ~6e-8 relative precision; values up to 10 and slopes up to ~1.13. TensorFlow's
    # own autodiff of the tanh form is off by 4e-6 here; the recomputed slope stays under 1e-6.
    np.testing.assert_allclose(y.numpy(), want_y, atol=2e-6)
    np.testing.assert_allclose(dy.numpy(), want_dy, atol=1e-6)


@pytest.mark.parametrize("fn", [gelu, gelu_tanh])
def test_gelu_gradient_keeps_a_low_precision_dtype(fn):
    x = tf.cast(tf.linspace(-3.0, 3.0, 13), tf.bfloat16)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    grad = tape.gradient(y, x)
    assert y.dtype == grad.dtype == tf.bfloat16
    want = _reference(np.linspace(-3.0, 3.0, 13), fn is gelu_tanh)[1]
    np.testing.assert_allclose(tf.cast(grad, tf.float32).numpy(), want, atol=2e-2)  # bf16: 8 bits
