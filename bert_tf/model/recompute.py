"""Backward passes that recompute activations instead of keeping them from the forward pass.

A `base` training step at batch 16 x 128 otherwise keeps, per layer, the attention softmax, the
dropped-out probabilities and their random bits (30 MiB) and the FFN's activated intermediate
tensor (24 MiB): 650 MiB of its peak memory. Recomputing them costs one [B, N, S, S] matmul and a
few elementwise passes per layer. Each recomputation reads a value of the incoming gradient (a
NaN test that adds 0 unless the gradient is already NaN), so XLA can neither merge it with the
forward computation nor schedule it before that gradient exists; either would keep the tensors
alive again.
"""

import tensorflow as tf
from keras import ops

from bert_tf.model.dropout import dropout16


def _after(gradient):
    """bool scalar read from `gradient`: False unless its first element is NaN."""
    return tf.math.is_nan(tf.reshape(gradient, [-1])[0])


def attention_probs(q, k, bias, softmax_dtype="float32"):
    """Attention probabilities [B, N, S, S] (or any leading axes) in q's dtype; the softmax
    runs in `softmax_dtype` (float32 unless a caller knows its kernel computes in float32
    inside)."""
    scores = ops.matmul(q, ops.swapaxes(k, -1, -2))                # [..., S, S]
    scores = ops.cast(scores, softmax_dtype) + ops.cast(bias, softmax_dtype)
    return ops.cast(ops.softmax(scores, axis=-1), q.dtype)


def recomputed_attention(q, k, v, bias, rate, seed):
    """dropout(softmax(q k^T + bias)) v, q/k/v [B, N, S, D], for training. The backward pass
    recomputes the probabilities and the dropout mask from q, k and the stateless `seed`."""

    @tf.custom_gradient
    def attend(q, k, v):
        probs = dropout16(attention_probs(q, k, bias), rate, seed)
        def grad(d_context):                                                     # [B, N, S, D]
            after = _after(d_context)
            q_ = q + tf.cast(after, q.dtype)
            p = attention_probs(q_, k, bias)
            keep_seed = seed + tf.cast(after, seed.dtype)
            dropped = dropout16(p, rate, keep_seed)
            d_v = tf.matmul(dropped, d_context, transpose_a=True)
            # Dropout is linear: its backward applies the same mask and scale.
            d_p = dropout16(tf.matmul(d_context, v, transpose_b=True), rate, keep_seed)
            p32, d_p32 = tf.cast(p, tf.float32), tf.cast(d_p, tf.float32)
            d_scores = p32 * (d_p32 - tf.reduce_sum(d_p32 * p32, axis=-1, keepdims=True))
            d_scores = tf.cast(d_scores, q.dtype)                                # [B, N, S, S]
            return tf.matmul(d_scores, k), tf.matmul(d_scores, q_, transpose_a=True), d_v
        return tf.matmul(probs, v), grad

    return attend(q, k, v)


def activation_then_dense(h, activation, kernel, bias):
    """activation(h) @ kernel + bias for h [B, S, I], kernel [I, H], bias [H]. The backward pass
    recomputes activation(h) from h (which it needs anyway for the activation's slope)."""

    @tf.custom_gradient
    def project(h, kernel, bias):
        a = tf.reshape(activation(h), [-1, kernel.shape[0]])                     # [B*S, I]
        y = tf.matmul(a, kernel) + bias
        def grad(dy):
            h_ = h + tf.cast(_after(dy), h.dtype)
            dy2 = tf.reshape(dy, [-1, kernel.shape[1]])                          # [B*S, H]
            with tf.GradientTape() as tape:
                tape.watch(h_)
                a_ = activation(h_)
            d_kernel = tf.matmul(tf.reshape(a_, [-1, kernel.shape[0]]), dy2, transpose_a=True)
            d_a = tf.reshape(tf.matmul(dy2, kernel, transpose_b=True), tf.shape(h))
            return tape.gradient(a_, h_, output_gradients=d_a), d_kernel, tf.reduce_sum(dy2, 0)
        return tf.reshape(y, tf.concat([tf.shape(h)[:-1], [kernel.shape[1]]], 0)), grad

    return project(h, kernel, bias)
