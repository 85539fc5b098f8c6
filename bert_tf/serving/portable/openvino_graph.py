"""The export copy's LayerNorms and GELUs written the way OpenVINO recognises them.

OpenVINO fuses a LayerNorm into one MVN kernel and a GELU into one elementwise kernel when the
graph spells them as (x - mean) / sqrt(mean((x - mean)^2) + eps) and 0.5 x (1 + erf(x / sqrt
2)). Keras' LayerNormalization computes x * inv + (beta - mean * inv) instead, and bert_tf's
GELU carries a custom gradient: in a MiniLM export that left 26 reductions and about 85
elementwise kernels where the peers' ONNX graph has 13 MVNs. The values are the same to float
rounding.
"""

import tensorflow as tf

from bert_tf.model.int8 import FusedLayerNorm, _gelu_erf, _layers_of, replace_layer_norms
from bert_tf.model.transformer import TransformerBlock


class MeanVarianceNorm(FusedLayerNorm):
    """A last-axis LayerNorm with scale and offset (FusedLayerNorm's weights and
    from_layer_norm), computed in the form OpenVINO fuses into MVN instead of TensorFlow's
    internal kernel, which OpenVINO cannot convert."""

    def call(self, x):
        centred = x - tf.reduce_mean(x, axis=[-1], keepdims=True)
        variance = tf.reduce_mean(tf.pow(centred, 2.0), axis=[-1], keepdims=True)
        return centred / tf.sqrt(variance + self.epsilon) * self.gamma + self.beta


def for_openvino(model):
    """Rewrites `model` (an export copy) in place: every LayerNormalization a MeanVarianceNorm,
    every exact-GELU feed-forward's activation the plain erf formula."""
    for parent in _layers_of(model):
        if isinstance(parent, TransformerBlock) and parent.activation == "gelu":
            parent.intermediate_activation = _gelu_erf
    return replace_layer_norms(model, MeanVarianceNorm)
