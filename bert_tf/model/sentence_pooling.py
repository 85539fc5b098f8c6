"""SentencePooling: a sentence's embedding from its token vectors, as sentence-transformers'
Pooling (and Normalize) modules compute it, so a sentence-transformers model gives the same
embeddings here."""

import keras
from keras import ops

from bert_tf.names import POOLING_MODES


def check_mode(mode):
    """`mode`, or ValueError naming the modes."""
    if mode not in POOLING_MODES:
        raise ValueError(f"sentence pooling must be one of {', '.join(POOLING_MODES)}, got {mode!r}")
    return mode


def pool_tokens(sequence_output, input_mask=None, mode="mean", normalize=False):
    """[B, S, H] token vectors and an int/bool [B, S] input_mask (1 = token; None: all) ->
    [B, H] float32, pooled by `mode` (one of POOLING_MODES) and optionally divided by its L2
    norm. The one pooling of the library: SentencePooling and extract_features use it."""
    x = ops.cast(sequence_output, "float32")
    if input_mask is None:
        input_mask = ops.ones(ops.shape(x)[:2], "float32")
    keep = ops.expand_dims(ops.cast(input_mask, "float32"), -1)                    # [B, S, 1]
    if check_mode(mode) == "cls":
        pooled = x[:, 0, :]
    elif mode == "max":
        pooled = ops.max(ops.where(keep > 0, x, -1e9), axis=1)
    else:
        count = ops.maximum(ops.sum(keep, axis=1), 1e-9)                      # [B, 1]
        total = ops.sum(x * keep, axis=1)
        pooled = total / (count if mode == "mean" else ops.sqrt(count))
    return ops.normalize(pooled, axis=-1) if normalize else pooled


@keras.saving.register_keras_serializable(package="bert_tf")
class SentencePooling(keras.layers.Layer):
    """Pools [B, S, H] token vectors with an int/bool [B, S] input_mask (1 = token) into [B, H]
    float32 (computed in float32 whatever the layer's dtype policy), optionally divided by its
    L2 norm.

    Args:
      mode: one of POOLING_MODES.
      normalize: divide each embedding by its L2 norm (keras.ops.normalize).
    """

    def __init__(self, mode: str = "mean", normalize: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.mode = check_mode(mode)
        self.normalize = bool(normalize)

    def call(self, sequence_output, input_mask=None):
        return pool_tokens(sequence_output, input_mask, self.mode, self.normalize)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])

    def get_config(self):
        config = super().get_config()
        config.update(mode=self.mode, normalize=self.normalize)
        return config
