"""Multi-head self-attention with BERT's weight layout (separate query/key/value [H, H] kernels)."""

import math

import keras
from keras import ops

from bert_tf.model.initializers import truncated_normal
from bert_tf.model.recompute import attention_probs, recomputed_attention


def attention_bias(input_mask, dtype):
    """[B, S] 0/1 mask -> additive bias [B, 1, 1, S]: 0 where attended, -10000 at padding."""
    mask = ops.cast(input_mask, dtype)
    # expand_dims, not mask[:, None, None, :]: LiteRT lowers the strided slice that new axes
    # make only when the sequence length is static (bert_tf.serving.portable: any length).
    return (1.0 - ops.expand_dims(ops.expand_dims(mask, 1), 1)) * -10000.0


def _batch_and_length(x, layout, length_axis=1):
    """B and S of x ([B, S, ...], or [B, N, S, D] with length_axis 2): the layout's padded
    shape when there is one, computed once for every layer (LiteRT's converter would otherwise
    repeat the shape arithmetic around every reshape)."""
    if layout is not None:
        return layout.padded_shape[0], layout.padded_shape[1]
    shape = ops.shape(x)
    return shape[0], shape[length_axis]


@keras.saving.register_keras_serializable(package="bert_tf")
class SelfAttention(keras.layers.Layer):
    """Scaled dot-product self-attention over N heads; returns the context (x's shape) before
    the output projection. Softmax runs in float32 under mixed precision."""

    softmax_dtype = "float32"
    # Set on a LiteRT export copy (bert_tf.serving.portable.litert_graph): query, key and value
    # as one [H, 3H] matmul, one FULLY_CONNECTED whose input XNNPACK quantizes once instead of
    # three times, split into heads by one transpose (the same logits, fewer operators). At
    # inference only. Not a config entry: the weights stay three Dense layers, as checkpoints
    # hold them.
    fused_projections = False

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
        self.make_projections()          # before the dropout: the random draws keep their order
        self.dropout = keras.layers.Dropout(dropout_rate, dtype=self.dtype_policy, name="dropout")

    def make_projections(self):
        for name in ("query", "key", "value"):
            setattr(self, name, keras.layers.Dense(
                self.hidden_size, kernel_initializer=truncated_normal(self.initializer_range),
                dtype=self.dtype_policy, name=name))

    def build(self, input_shape):
        for layer in (self.query, self.key, self.value):
            layer.build(input_shape)
        self.built = True

    def split_heads(self, x, layout):
        """[B, S, N * D] (or [T, N * D] packed) -> [B, N, S, D]."""
        x = x if layout is None else layout.to_padded(x)
        batch, _ = _batch_and_length(x, layout)
        # -1, not S: tf2onnx folds an explicit S wrongly once q, k and v differ.
        x = ops.reshape(x, (batch, -1, self.num_heads, self.head_size))
        return ops.transpose(x, (0, 2, 1, 3))

    def heads(self, x, layout):
        """The query (scaled by 1 / sqrt(head_size)), key and value heads [B, N, S, D] of x."""
        scale = ops.cast(1.0 / math.sqrt(self.head_size), x.dtype)
        q, k, v = self.query(x) * scale, self.key(x), self.value(x)
        return tuple(self.split_heads(t, layout) for t in (q, k, v))

    def fused_heads(self, x, layout, batch):
        """heads() as three [1, B, N, S, D] slices of one [3, B, N, S, D] tensor: one matmul,
        one reshape, one transpose."""
        scale = 1.0 / math.sqrt(self.head_size)
        kernel = ops.concatenate([self.query.kernel * scale, self.key.kernel,
                                  self.value.kernel], axis=-1)                    # [H, 3H]
        bias = ops.concatenate([self.query.bias * scale, self.key.bias, self.value.bias])
        qkv = ops.matmul(x, kernel) + bias
        qkv = qkv if layout is None else layout.to_padded(qkv)                     # [B, S, 3H]
        qkv = ops.reshape(qkv, (batch, -1, 3, self.num_heads, self.head_size))
        return ops.split(ops.transpose(qkv, (2, 0, 3, 1, 4)), 3, axis=0)

    def call(self, x, bias, training=None, layout=None, first_query_only=False):
        """x [B, S, H], or [T, H] with `layout` (a RealTokens of the real tokens): then the
        projections run on the T tokens and only the attention itself on the padded layout.
        first_query_only (inference): the context of position 0 alone, [B, H]."""
        if self.fused_projections and not training:
            return self._fused_call(x, bias, layout, first_query_only)
        q, k, v = self.heads(x, layout)                                         # [B, N, S, D]
        batch, seq = _batch_and_length(q, layout, length_axis=2)
        if first_query_only:
            probs = attention_probs(q[:, :, :1], k, bias, softmax_dtype=self.softmax_dtype)
            return ops.reshape(ops.matmul(probs, v), (batch, self.hidden_size))  # [B, N*1*D]
        if training and self.dropout_rate > 0:
            seed = self.dropout.seed_generator.next()
            context = recomputed_attention(q, k, v, bias, self.dropout_rate, seed)
        else:
            probs = attention_probs(q, k, bias, softmax_dtype=self.softmax_dtype)
            context = ops.matmul(probs, v)                                       # [B, N, S, D]
        context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)),
                              (batch, seq, self.hidden_size))
        return layout.to_rows(context) if layout is not None else context

    def _fused_call(self, x, bias, layout, first_query_only):
        """call() at inference with fused_heads(), every tensor one rank higher."""
        batch, seq = _batch_and_length(x, layout)
        q, k, v = self.fused_heads(x, layout, batch)                         # [1, B, N, S, D]
        if first_query_only:
            q = q[:, :, :, :1]                                               # [1, B, N, 1, D]
        probs = attention_probs(q, k, bias, softmax_dtype=self.softmax_dtype)
        context = ops.matmul(probs, v)                                       # [1, B, N, S, D]
        if first_query_only:
            return ops.reshape(context, (batch, self.hidden_size))
        context = ops.reshape(ops.transpose(context, (0, 1, 3, 2, 4)),
                              (batch, seq, self.hidden_size))
        return layout.to_rows(context) if layout is not None else context

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_heads=self.num_heads,
                      initializer_range=self.initializer_range, dropout_rate=self.dropout_rate)
        return config
