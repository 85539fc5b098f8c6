"""Activation functions by canonical name (see bert_tf.config)."""

from keras import ops


def gelu(x):
    """Exact GELU: 0.5 x (1 + erf(x / sqrt 2)) (HuggingFace "gelu")."""
    return ops.gelu(x, approximate=False)


def gelu_tanh(x):
    """tanh-approximated GELU, what google-research/bert computes for "gelu"."""
    return ops.gelu(x, approximate=True)


_ACTIVATIONS = {"gelu": gelu, "gelu_tanh": gelu_tanh, "relu": ops.relu, "tanh": ops.tanh}


def get_activation(name):
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"unknown activation {name!r}; known: {', '.join(_ACTIVATIONS)}") from None
