"""dropout16: stateless dropout with 16-bit random draws (the attention layer regenerates its
mask from the seed in the backward pass, so the mask must depend on nothing else)."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.model.dropout import dropout16


def _seed(a, b):
    return tf.constant([a, b], tf.int64)


def test_same_seed_gives_the_same_mask_and_another_seed_a_different_one():
    x = tf.ones([4, 33, 17])
    first, again = dropout16(x, 0.1, _seed(1, 2)), dropout16(x, 0.1, _seed(1, 2))
    other = dropout16(x, 0.1, _seed(1, 3))
    np.testing.assert_array_equal(first.numpy(), again.numpy())
    assert not np.array_equal(first.numpy() == 0, other.numpy() == 0)


def test_mask_is_the_same_under_xla():
    x = tf.random.stateless_normal([3, 5, 7], seed=[0, 1])       # odd element count (105)
    eager = dropout16(x, 0.3, _seed(7, 7))
    xla = tf.function(lambda x: dropout16(x, 0.3, _seed(7, 7)), jit_compile=True)(x)
    np.testing.assert_array_equal(eager.numpy(), xla.numpy())


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_drops_at_the_rate_and_keeps_the_expectation(rate):
    x = tf.ones([256, 128, 64])                                   # 2.1M elements
    y = dropout16(x, rate, _seed(11, 5)).numpy()
    dropped = (y == 0).mean()
    # Binomial standard error at 2.1M draws is <= 3.5e-4; allow 5 of them.
    assert abs(dropped - rate) < 2e-3
    kept = np.unique(y[y != 0])
    threshold = round(rate * 65536)
    np.testing.assert_allclose(kept, [65536 / (65536 - threshold)], rtol=1e-6)
    assert abs(y.mean() - 1.0) < 4e-3


def test_rate_zero_keeps_everything_unchanged():
    x = tf.random.stateless_normal([8, 9], seed=[2, 2])
    np.testing.assert_array_equal(dropout16(x, 0.0, _seed(0, 1)).numpy(), x.numpy())


def test_bfloat16_inputs_stay_bfloat16():
    y = dropout16(tf.ones([4, 4], tf.bfloat16), 0.1, _seed(0, 1))
    assert y.dtype == tf.bfloat16
