"""Post-LN Transformer encoder block, as in BERT: x = LN(x + Attn(x)); x = LN(x + FFN(x))."""

import keras

from bert_tf.model.activations import get_activation
from bert_tf.model.attention import SelfAttention
from bert_tf.model.initializers import truncated_normal
from bert_tf.model.recompute import activation_then_dense


@keras.saving.register_keras_serializable(package="bert_tf")
class TransformerBlock(keras.layers.Layer):
    """One encoder layer; sub-layer names follow google-research's variable scopes.

    input_scale, attention_scale: None, or (on an int8 export copy,
    bert_tf.serving.portable.smoothing) the factors [H] by which the block's input and its
    attention LayerNorm's output come divided; the residual paths multiply them back."""

    input_scale = None
    attention_scale = None

    def __init__(self, hidden_size, num_heads, intermediate_size, activation="gelu_tanh",
                 dropout_rate=0.1, attention_dropout_rate=0.1, initializer_range=0.02,
                 layer_norm_eps=1e-12, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.activation = activation
        self.dropout_rate = dropout_rate
        self.attention_dropout_rate = attention_dropout_rate
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        policy = self.dtype_policy
        self.attention = SelfAttention(hidden_size, num_heads, initializer_range,
                                       attention_dropout_rate, dtype=policy, name="attention")
        self.attention_output = keras.layers.Dense(
            hidden_size, kernel_initializer=truncated_normal(initializer_range), dtype=policy,
            name="attention_output")
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype=policy, name="attention_layer_norm")
        self.intermediate = keras.layers.Dense(        # activation applied in call()
            intermediate_size, kernel_initializer=truncated_normal(initializer_range), dtype=policy,
            name="intermediate")
        self.intermediate_activation = get_activation(activation)
        self.output_dense = keras.layers.Dense(
            hidden_size, kernel_initializer=truncated_normal(initializer_range), dtype=policy,
            name="output_dense")
        self.output_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype=policy, name="output_layer_norm")
        self.dropout = keras.layers.Dropout(dropout_rate, dtype=policy, name="dropout")

    def build(self, input_shape):
        hidden_shape = tuple(input_shape[:-1]) + (self.hidden_size,)
        self.attention.build(input_shape)
        self.attention_output.build(hidden_shape)
        self.attention_layer_norm.build(hidden_shape)
        self.intermediate.build(hidden_shape)
        self.output_dense.build(tuple(input_shape[:-1]) + (self.intermediate_size,))
        self.output_layer_norm.build(hidden_shape)
        self.built = True

    def call(self, x, bias, training=None, layout=None, first_only=False):
        """x [B, S, H], or the real tokens [T, H] of a RealTokens `layout` (inference).
        first_only (inference): the output at position 0 alone, [B, 1, H], every position
        still attended to: all that a pooled output reads of the last block."""
        if first_only:
            return self._first_position(x, bias, layout)
        attn = self.attention_output(self.attention(x, bias, training=training,
                                                    layout=layout))
        x = self.attention_layer_norm(_restored(x, self.input_scale)
                                      + self.dropout(attn, training=training))
        h = self.intermediate(x)                                   # [B, S, I] pre-activation
        if training:
            dtype = h.dtype
            ffn = activation_then_dense(h, self.intermediate_activation,
                                        keras.ops.cast(self.output_dense.kernel, dtype),
                                        keras.ops.cast(self.output_dense.bias, dtype))
        else:
            ffn = self.output_dense(self.intermediate_activation(h))
        return self.output_layer_norm(_restored(x, self.attention_scale)
                                      + self.dropout(ffn, training=training))

    def _first_position(self, x, bias, layout):
        first = (x if layout is None else layout.to_padded(x))[:, 0]              # [B, H]
        attn = self.attention(x, bias, layout=layout, first_query_only=True)  # [B, H]
        x = self.attention_layer_norm(_restored(first, self.input_scale)
                                      + self.attention_output(attn))
        ffn = self.output_dense(self.intermediate_activation(self.intermediate(x)))
        return keras.ops.expand_dims(
            self.output_layer_norm(_restored(x, self.attention_scale) + ffn), 1)  # [B, 1, H]

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_heads=self.num_heads,
                      intermediate_size=self.intermediate_size, activation=self.activation,
                      dropout_rate=self.dropout_rate,
                      attention_dropout_rate=self.attention_dropout_rate,
                      initializer_range=self.initializer_range, layer_norm_eps=self.layer_norm_eps)
        return config


def _restored(x, scale):
    return x if scale is None else x * keras.ops.cast(scale, x.dtype)
