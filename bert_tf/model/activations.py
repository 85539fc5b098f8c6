"""Activation functions by canonical name (see bert_tf.config).

The GELUs carry their own gradient, computed from the input alone: autodiff of the formula keeps
its inner tanh/erf tensor ([B, S, intermediate], 25 MB per `base` layer at batch 16 x 128) alive
from the forward to the backward pass, while recomputing it costs a few elementwise ops. The
backward writes the function differently from the forward (sigmoids for tanh, erfc for erf) so
that XLA's common-subexpression pass cannot merge the two and keep the tensor after all.
"""

import math

import keras
from keras import ops

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_CUBIC = 0.044715


def _gelu_slope(x, approximate):
    """gelu'(x), written unlike the forward formula (see the module docstring)."""
    if approximate:
        # With s = sigmoid(2u): 0.5 (1 + tanh u) = s and 1 - tanh(u)^2 = 4 s sigmoid(-2u).
        u = _SQRT_2_OVER_PI * (x + _CUBIC * x * x * x)
        s = ops.sigmoid(2.0 * u)
        du = _SQRT_2_OVER_PI * (1.0 + 3.0 * _CUBIC * x * x)
        return s + 2.0 * x * s * ops.sigmoid(-2.0 * u) * du
    cdf = 0.5 * ops.erfc(-x * (1.0 / math.sqrt(2.0)))             # = 0.5 (1 + erf(x / sqrt 2))
    pdf = ops.exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi))
    return cdf + x * pdf


def _upstream(args, upstream):
    return args[0] if upstream is None else upstream


@ops.custom_gradient
def gelu(x):
    """Exact GELU: 0.5 x (1 + erf(x / sqrt 2)) (HuggingFace "gelu")."""
    def grad(*args, upstream=None):
        return _upstream(args, upstream) * _gelu_slope(x, approximate=False)
    return ops.gelu(x, approximate=False), grad


@ops.custom_gradient
def gelu_tanh(x):
    """tanh-approximated GELU, what google-research/bert computes for "gelu"."""
    def grad(*args, upstream=None):
        return _upstream(args, upstream) * _gelu_slope(x, approximate=True)
    return ops.gelu(x, approximate=True), grad


_ACTIVATIONS = {"gelu": gelu, "gelu_tanh": gelu_tanh, "relu": ops.relu, "tanh": ops.tanh}


def get_activation(name):
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"unknown activation {name!r}; known: {', '.join(_ACTIVATIONS)}") from None


def activation_name(fn):
    """The name get_activation() knows for activation `fn` (a function of this module or
    Keras' linear, tanh or relu), None for linear: how a layer's activation is stored."""
    if fn is keras.activations.linear:
        return None
    keras_names = {keras.activations.tanh: "tanh", keras.activations.relu: "relu"}
    if fn in keras_names:
        return keras_names[fn]
    for name, known in _ACTIVATIONS.items():
        if fn is known:
            return name
    raise ValueError(f"activation {fn!r} has no name in bert_tf.model.activations")
