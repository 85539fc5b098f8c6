"""The export copy written with as few LiteRT operators as the same values allow.

A batch-1 request is some 25 tokens, and at that size each LiteRT operator costs XNNPACK a few
microseconds whatever it computes: a MiniLM export had 311 of them, 143 in its LayerNorms. Two
rewrites, the same logits to float rounding (docs/serving.md, How they are built):
- every LayerNorm as (x - mean) * (rsqrt(mean((x - mean)^2) + eps) * gamma) + beta, 9
  operators where Keras' x * inv + (beta - mean * inv) lowers to 11;
- query, key and value as one [H, 3H] FULLY_CONNECTED whose output one TRANSPOSE turns into
  the heads of all three (SelfAttention.fused_projections), where three projections took
  three reshapes and three transposes.
"""

import keras
import tensorflow as tf

from bert_tf.model.int8 import FusedLayerNorm, replace_layer_norms


@keras.saving.register_keras_serializable(package="bert_tf")
class CompactLayerNorm(FusedLayerNorm):
    """A last-axis LayerNorm with scale and offset (FusedLayerNorm's weights and
    from_layer_norm) in the fewest elementwise operators.

    gamma multiplies the per-row rsqrt, not the centred rows: the converter folds a multiply
    by a constant that feeds a FULLY_CONNECTED into its weights, and the int8 projection would
    then quantize activations without gamma, and without the smoothing that divides it."""

    def call(self, x):
        centred = x - tf.reduce_mean(x, axis=[-1], keepdims=True)
        variance = tf.reduce_mean(centred * centred, axis=[-1], keepdims=True)
        return centred * (tf.math.rsqrt(variance + self.epsilon) * self.gamma) + self.beta


def for_litert(model):
    """Rewrites `model` (an export copy) in place: every LayerNormalization a
    CompactLayerNorm, every attention's projections fused."""
    replace_layer_norms(model, CompactLayerNorm)
    for block in getattr(model, "encoder", model).blocks:
        block.attention.fused_projections = True
    return model
