"""BertEncoder: embeddings -> L Transformer blocks -> pooler, as one Keras model."""

from typing import Any, Mapping

import keras
from keras import ops

from bert_tf.config import BertConfig
from bert_tf.model.attention import attention_bias
from bert_tf.model.embeddings import BertEmbeddings
from bert_tf.model.initializers import truncated_normal
from bert_tf.model.token_layout import FlatTokens, RealTokens
from bert_tf.model.transformer import TransformerBlock


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPooler(keras.layers.Layer):
    """tanh(Dense(h_[CLS])): [B, S, H] -> [B, H]."""

    def __init__(self, hidden_size: int, initializer_range: float = 0.02, **kwargs) -> None:
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            hidden_size, activation="tanh", dtype=self.dtype_policy, name="dense",
            kernel_initializer=truncated_normal(initializer_range))

    def build(self, input_shape):
        self.dense.build((input_shape[0], self.hidden_size))
        self.built = True

    def call(self, sequence_output):
        return self.dense(sequence_output[:, 0, :])

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.hidden_size)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range)
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEncoder(keras.Model):
    """The BERT encoder.

    Called with a dict of int `input_ids` [B, S] and optional `input_mask` (1 = token, 0 = padding;
    default all ones) and `segment_ids` (default zeros). Returns a dict:
      sequence_output  [B, S, H]   last block's output
      pooled_output    [B, H]      tanh(Dense(sequence_output[:, 0]))
      encoder_outputs  list of L   [B, S, H], one per block
      embedding_output [B, S, H]   after embedding LayerNorm (and dropout when training)
    Any batch size and any S <= max_position_embeddings; dropout only when training.

    Args:
      config: the model's sizes (a BertConfig, or its dict as get_config stores it).
      skip_padding: at inference with an `input_mask`, run the blocks' per-token layers on the
        real tokens only (bert_tf.model.token_layout): faster on batches of mixed lengths, the same
        outputs at real tokens and zeros at padding. For serving graphs; not under XLA.
      flat_tokens: at inference with an `input_mask`, run the blocks' per-token layers on
        [B*S, H] rows (bert_tf.model.token_layout.FlatTokens): the same outputs, in the form
        LiteRT's converter lowers best (bert_tf.serving.portable). Ignored with skip_padding.
      pooled_only: at inference, the last block computes position 0 ([CLS]) alone, attending
        to every position: the same pooled_output for about 1/L less work, with
        sequence_output (and the last encoder_outputs entry) [B, 1, H]. For models that read
        only the pooled output (classifier exports).
      **kwargs: keras.Model arguments, e.g. `name` or `dtype` (a mixed-precision policy).
    """

    def __init__(self, config: BertConfig | dict, skip_padding: bool = False,
                 flat_tokens: bool = False, pooled_only: bool = False, **kwargs) -> None:
        kwargs.setdefault("name", "bert_encoder")
        super().__init__(**kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        self.config = config
        self.skip_padding = bool(skip_padding)
        self.flat_tokens = bool(flat_tokens)
        self.pooled_only = bool(pooled_only)
        policy = self.dtype_policy
        self.embeddings = BertEmbeddings(
            vocab_size=config.vocab_size, hidden_size=config.hidden_size,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size, initializer_range=config.initializer_range,
            dropout_rate=config.hidden_dropout_prob, layer_norm_eps=config.layer_norm_eps,
            dtype=policy, name="embeddings")
        # Blocks are attributes layer_0 ... layer_{L-1} (not a list): tf.train.Checkpoint does not
        # track Keras' list wrappers, so a list would silently drop them from native checkpoints.
        for i in range(config.num_hidden_layers):
            setattr(self, f"layer_{i}", TransformerBlock(
                hidden_size=config.hidden_size, num_heads=config.num_attention_heads,
                intermediate_size=config.intermediate_size, activation=config.hidden_act,
                dropout_rate=config.hidden_dropout_prob,
                attention_dropout_rate=config.attention_probs_dropout_prob,
                initializer_range=config.initializer_range, layer_norm_eps=config.layer_norm_eps,
                dtype=policy, name=f"layer_{i}"))
        self.pooler = BertPooler(config.hidden_size, config.initializer_range, dtype=policy,
                                 name="pooler")
        self._build_weights()

    def _build_weights(self):
        hidden_shape = (None, None, self.config.hidden_size)
        self.embeddings.build((None, None))
        for block in self.blocks:
            block.build(hidden_shape)
        self.pooler.build(hidden_shape)
        self.built = True

    def call(self, inputs: Mapping[str, Any], training: bool | None = None) -> dict[str, Any]:
        input_ids = inputs["input_ids"]
        seq_len = input_ids.shape[1]
        if seq_len is not None and seq_len > self.config.max_position_embeddings:
            raise ValueError(f"sequence length {seq_len} exceeds max_position_embeddings "
                             f"({self.config.max_position_embeddings})")
        input_mask = inputs.get("input_mask")
        layout = None
        if not training and input_mask is not None:
            if self.skip_padding:
                layout = RealTokens(input_mask)
            elif self.flat_tokens:
                layout = FlatTokens(input_mask)
        if input_mask is None:
            input_mask = ops.ones_like(input_ids)
        segment_ids = inputs.get("segment_ids")
        if segment_ids is None:
            segment_ids = ops.zeros_like(input_ids)
        embedding_output = self.embeddings(input_ids, segment_ids, training=training)
        bias = attention_bias(input_mask, embedding_output.dtype)
        x = embedding_output if layout is None else layout.to_rows(embedding_output)
        encoder_outputs = []
        last = len(self.blocks) - 1 if self.pooled_only and not training else None
        for i, block in enumerate(self.blocks):
            x = block(x, bias, training=training, layout=layout, first_only=i == last)
            encoder_outputs.append(x if layout is None or i == last else layout.to_padded(x))
        x = encoder_outputs[-1]
        return {
            "sequence_output": x,
            "pooled_output": self.pooler(x),
            "encoder_outputs": encoder_outputs,
            "embedding_output": embedding_output,
        }

    @property
    def blocks(self) -> list:
        """The L Transformer blocks, in order."""
        return [getattr(self, f"layer_{i}") for i in range(self.config.num_hidden_layers)]

    @property
    def word_embeddings(self) -> keras.Variable:
        """The [V, H] token embedding matrix (tied to the masked-LM output layer)."""
        return self.embeddings.word_embeddings

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name,
                "skip_padding": self.skip_padding, "flat_tokens": self.flat_tokens,
                "pooled_only": self.pooled_only,
                "dtype": keras.saving.serialize_keras_object(self.dtype_policy)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "dtype" in config and isinstance(config["dtype"], dict):
            config["dtype"] = keras.saving.deserialize_keras_object(config["dtype"])
        return cls(**config)
