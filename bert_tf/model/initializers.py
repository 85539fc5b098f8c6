"""BERT's weight initializer: a truncated normal of standard deviation initializer_range."""

import keras


def truncated_normal(stddev):
    """A new TruncatedNormal(stddev) initializer, to be used for one weight only: an unseeded
    Keras 3 initializer draws the same values on every call, so weights sharing one instance
    would start equal (query = key = value, position embedding i = word embedding i)."""
    return keras.initializers.TruncatedNormal(stddev=stddev)
