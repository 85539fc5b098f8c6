"""Multi-head self-attention with BERT's weight layout (separate query/key/value [H, H] kernels)."""

import math

import keras
from keras import ops

from bert_tf.model.recompute import attention_probs, recomputed_attention


def attention_bias(input_mask, dtype):
    """[B, S] 0/1 mask -> additive bias [B, 1, 1, S]: 0 where attended, -10000 at padding."""
    mask = ops.cast(input_mask, dtype)
    return (1.0 - mask[:, None, None, :]) * -10000.0


@keras.saving.register_keras_serializable(package="bert_tf")
class SelfAttention(keras.layers.Layer):
    """Scaled dot-product self-attention over N heads; returns the context (x's shape) before
    the output projection. Softmax runs in float32 under mixed precision (in int8_bf16 serving
    copies, oneDNN's bfloat16 softmax, which computes in float32 inside)."""

    # The dtype of the score and value matmuls when it is not the projections' (None): int8
    # serving copies set bfloat16 for export precision int8_bf16 (bert_tf.model.int8).
    attention_dtype = None

    def __init__(self, hidden_size, num_heads, initializer_range=0.02, dropout_rate=0.1, **kwargs):
        super().__init__(**kwargs)
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size ({hidden_size}) must be divisible by num_heads "
                             f"({num_heads})")
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.head_size = hidden_size // num_heads
        self.initializer_range = initializer_range
        self.dropout_rate = dropout_rate
        init = keras.initializers.TruncatedNormal(stddev=initializer_range)
        dense = dict(kernel_initializer=init, dtype=self.dtype_policy)
        self.query = keras.layers.Dense(hidden_size, name="query", **dense)
        self.key = keras.layers.Dense(hidden_size, name="key", **dense)
        self.value = keras.layers.Dense(hidden_size, name="value", **dense)
        self.dropout = keras.layers.Dropout(dropout_rate, dtype=self.dtype_policy, name="dropout")
        # Serving copies may replace query/key/value by one layer computing
        # [q / sqrt(head_size) | k | v] [.., 3H] (bert_tf.model.int8: one int8 matmul, not three).
        self.query_key_value = None

    def build(self, input_shape):
        for layer in (self.query, self.key, self.value):
            layer.build(input_shape)
        self.built = True

    def _split_heads(self, x, batch, seq):
        x = ops.reshape(x, (batch, seq, self.num_heads, self.head_size))
        return ops.transpose(x, (0, 2, 1, 3))                                    # [B, N, S, D]

    def call(self, x, bias, training=None, packing=None):
        """x [B, S, H], or [T, H] with `packing` (a TokenPacking of the real tokens): then the
        projections run on the T tokens and only the attention itself on the padded layout."""
        def unpack(t):                     # to attention_dtype, and the padded layout
            t = t if self.attention_dtype is None else ops.cast(t, self.attention_dtype)
            return t if packing is None else packing.unpack(t)

        if self.query_key_value is not None:
            qkv = unpack(self.query_key_value(x))                               # [B, S, 3H]
            batch, seq = ops.shape(qkv)[0], ops.shape(qkv)[1]
            qkv = ops.reshape(qkv, (batch, seq, 3, self.num_heads, self.head_size))
            q, k, v = ops.unstack(ops.transpose(qkv, (2, 0, 3, 1, 4)), 3)       # [B, N, S, D]
        else:
            scale = 1.0 / math.sqrt(self.head_size)
            q = unpack(self.query(x) * ops.cast(scale, x.dtype))
            batch, seq = ops.shape(q)[0], ops.shape(q)[1]
            q = self._split_heads(q, batch, seq)
            k = self._split_heads(unpack(self.key(x)), batch, seq)
            v = self._split_heads(unpack(self.value(x)), batch, seq)
        if training and self.dropout_rate > 0:
            seed = self.dropout.seed_generator.next()
            context = recomputed_attention(q, k, v, bias, self.dropout_rate, seed)
        else:
            # int8_bf16 serving copies (attention_dtype bfloat16, x86-64 with oneDNN only)
            # hand the bf16 scores to oneDNN's softmax, which computes in float32 inside and
            # rounds once: the values of casting around a float32 softmax, two passes fewer.
            probs = attention_probs(q, k, bias, softmax_dtype=self.attention_dtype or "float32")
            context = ops.matmul(probs, v)                                       # [B, N, S, D]
        context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)),
                              (batch, seq, self.hidden_size))
        return packing.pack(context) if packing is not None else context

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_heads=self.num_heads,
                      initializer_range=self.initializer_range, dropout_rate=self.dropout_rate)
        return config
