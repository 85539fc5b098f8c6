"""The export copy's LayerNorms and GELUs written the way OpenVINO recognises them.

OpenVINO fuses a LayerNorm into one MVN kernel and a GELU into one elementwise kernel when the
graph spells them as (x - mean) / sqrt(mean((x - mean)^2) + eps) and 0.5 x (1 + erf(x / sqrt
2)). Keras' LayerNormalization computes x * inv + (beta - mean * inv) instead, and bert_tf's
GELU carries a custom gradient: in a MiniLM export that left 26 reductions and about 85
elementwise kernels where the peers' ONNX graph has 13 MVNs. The values are the same to float
rounding.
"""

import keras
import numpy as np
import tensorflow as tf

from bert_tf.model.int8 import _gelu_erf, _layers_of, _replace_sublayer
from bert_tf.model.transformer import TransformerBlock


class MeanVarianceNorm(keras.layers.Layer):
    """A last-axis LayerNorm with scale and offset, in the form OpenVINO fuses into MVN."""

    def __init__(self, epsilon=1e-12, **kwargs):
        super().__init__(**kwargs)
        self.epsilon = epsilon

    def build(self, input_shape):
        depth = input_shape[-1]
        self.gamma = self.add_weight(name="gamma", shape=(depth,), initializer="ones",
                                     trainable=False)
        self.beta = self.add_weight(name="beta", shape=(depth,), initializer="zeros",
                                    trainable=False)

    @classmethod
    def from_layer_norm(cls, norm):
        """The MeanVarianceNorm computing what the built keras LayerNormalization `norm` does."""
        if not (norm.center and norm.scale and list(np.atleast_1d(norm.axis)) == [-1]):
            raise ValueError(f"{norm.name}: only last-axis LayerNorms with scale and offset")
        layer = cls(norm.epsilon, name=norm.name)
        layer.build(tuple(norm.gamma.shape))
        layer.gamma.assign(norm.gamma)
        layer.beta.assign(norm.beta)
        return layer

    def call(self, x):
        centred = x - tf.reduce_mean(x, axis=[-1], keepdims=True)
        variance = tf.reduce_mean(tf.pow(centred, 2.0), axis=[-1], keepdims=True)
        return centred / tf.sqrt(variance + self.epsilon) * self.gamma + self.beta

    def get_config(self):
        return dict(super().get_config(), epsilon=self.epsilon)


def for_openvino(model):
    """Rewrites `model` (an export copy) in place: every LayerNormalization a MeanVarianceNorm,
    every exact-GELU feed-forward's activation the plain erf formula."""
    parents = _layers_of(model)
    for parent in parents:
        if isinstance(parent, TransformerBlock) and parent.activation == "gelu":
            parent.intermediate_activation = _gelu_erf
        for attribute, child in list(vars(parent).items()):
            if isinstance(child, keras.layers.LayerNormalization):
                _replace_sublayer(parent, attribute, MeanVarianceNorm.from_layer_norm(child))
    return model
