"""Task models: the encoder composed with heads. Each is called with a dict of int tensors and
returns a dict of float32 tensors; the encoder is reachable as `.encoder`."""

from typing import Any, Mapping

import keras
from keras import ops

from bert_tf.config import BertConfig
from bert_tf.model.encoder import BertEncoder
from bert_tf.model.heads import DenseHead, MaskedLMHead
from bert_tf.model.sentence_pooling import SentencePooling


class _TaskModel(keras.Model):
    """Shared plumbing: holds the encoder, serialises it inside get_config."""

    def __init__(self, encoder: BertEncoder, **kwargs) -> None:
        super().__init__(**kwargs)
        self.encoder = encoder

    @property
    def config(self) -> BertConfig:
        """The encoder's BertConfig."""
        return self.encoder.config

    def _task_config(self):
        return {}

    def get_config(self):
        config = {"encoder": keras.saving.serialize_keras_object(self.encoder), "name": self.name}
        config.update(self._task_config())
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPretrainer(_TaskModel):
    """Masked LM + next-sentence prediction. Extra input: `masked_lm_positions` [B, P].
    Outputs: `mlm_logits` [B, P, V], `nsp_logits` [B, 2]."""

    def __init__(self, encoder: BertEncoder, **kwargs) -> None:
        kwargs.setdefault("name", "bert_pretrainer")
        super().__init__(encoder, **kwargs)
        cfg = encoder.config
        self.mlm_head = MaskedLMHead(cfg.vocab_size, cfg.hidden_size, cfg.hidden_act,
                                     cfg.initializer_range, cfg.layer_norm_eps,
                                     dtype=encoder.dtype_policy, name="mlm_head")
        self.nsp_head = DenseHead(2, 0.0, cfg.initializer_range, dtype=encoder.dtype_policy,
                                  name="nsp_head")
        self.mlm_head.build()
        self.nsp_head.build((None, cfg.hidden_size))
        self.built = True

    def call(self, inputs: Mapping[str, Any], training: bool | None = None) -> dict[str, Any]:
        out = self.encoder(inputs, training=training)
        return {
            "mlm_logits": self.mlm_head(out["sequence_output"], inputs["masked_lm_positions"],
                                        self.encoder.word_embeddings),
            "nsp_logits": self.nsp_head(out["pooled_output"]),
        }


@keras.saving.register_keras_serializable(package="bert_tf")
class BertClassifier(_TaskModel):
    """Sequence classification (num_classes >= 2) or regression (num_classes == 1) on the pooled
    output with dropout. Output: `logits` [B, num_classes].

    Long texts: with `window_pooling` ("mean" or "max") and inputs holding int32
    `window_example` [N] (the windows of bert_tf.tokenization.windows, [N, S] features), the N
    window logits are combined into one row per text, B = max(window_example) + 1 (float32).

    Args:
      encoder: the BertEncoder whose pooled output is classified.
      num_classes: outputs of the head (1: regression).
      dropout_rate: dropout on the pooled output while training.
      window_pooling: None, or "mean" / "max" to combine the logits of a text's windows.
      layer_cls: also output `layer_cls` [B, L, H], the [CLS] vector of every block's output
        (what a distilled student matches to its teacher's, --distill_hidden_weight); one row
        per input row, so not with window_pooling.
    """

    def __init__(self, encoder: BertEncoder, num_classes: int, dropout_rate: float = 0.1,
                 window_pooling: str | None = None, layer_cls: bool = False, **kwargs) -> None:
        kwargs.setdefault("name", "bert_classifier")
        super().__init__(encoder, **kwargs)
        if layer_cls and window_pooling:
            raise ValueError("BertClassifier: layer_cls gives one row per window; it cannot be "
                             "combined with window_pooling")
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.window_pooling = window_pooling
        self.layer_cls = layer_cls
        self.classifier = DenseHead(num_classes, dropout_rate, encoder.config.initializer_range,
                                    dtype=encoder.dtype_policy, name="classifier")
        self.classifier.build((None, encoder.config.hidden_size))
        self.built = True

    def call(self, inputs: Mapping[str, Any], training: bool | None = None) -> dict[str, Any]:
        encoded = self.encoder(inputs, training=training)
        logits = self.classifier(encoded["pooled_output"], training=training)
        if self.window_pooling and "window_example" in inputs:
            from bert_tf.model.window_pooling import combine_windows
            logits = combine_windows(logits, inputs["window_example"],
                                     pooling=self.window_pooling)
        if not self.layer_cls:
            return {"logits": logits}
        cls = ops.stack([x[:, 0, :] for x in encoded["encoder_outputs"]], axis=1)
        return {"logits": logits, "layer_cls": ops.cast(cls, "float32")}  # [B, L, H]

    def _task_config(self):
        config = {"num_classes": self.num_classes, "dropout_rate": self.dropout_rate,
                  "window_pooling": self.window_pooling}
        if self.layer_cls:
            config["layer_cls"] = True
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSpanLabeler(_TaskModel):
    """Start/end logits on every token (SQuAD). Outputs: `start_logits`, `end_logits` [B, S]."""

    def __init__(self, encoder: BertEncoder, **kwargs) -> None:
        kwargs.setdefault("name", "bert_span_labeler")
        super().__init__(encoder, **kwargs)
        self.span_head = DenseHead(2, 0.0, encoder.config.initializer_range,
                                   dtype=encoder.dtype_policy, name="span_head")
        self.span_head.build((None, None, encoder.config.hidden_size))
        self.built = True

    def call(self, inputs: Mapping[str, Any], training: bool | None = None) -> dict[str, Any]:
        logits = self.span_head(self.encoder(inputs, training=training)["sequence_output"])
        return {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenClassifier(_TaskModel):
    """Per-token labels (NER). Output: `logits` [B, S, num_classes]."""

    def __init__(self, encoder: BertEncoder, num_classes: int, dropout_rate: float = 0.1,
                 **kwargs) -> None:
        kwargs.setdefault("name", "bert_token_classifier")
        super().__init__(encoder, **kwargs)
        self.num_classes = num_classes
        self.dropout_rate = dropout_rate
        self.tagger = DenseHead(num_classes, dropout_rate, encoder.config.initializer_range,
                                dtype=encoder.dtype_policy, name="tagger")
        self.tagger.build((None, None, encoder.config.hidden_size))
        self.built = True

    def call(self, inputs: Mapping[str, Any], training: bool | None = None) -> dict[str, Any]:
        sequence = self.encoder(inputs, training=training)["sequence_output"]
        return {"logits": self.tagger(sequence, training=training)}

    def _task_config(self):
        return {"num_classes": self.num_classes, "dropout_rate": self.dropout_rate}


@keras.saving.register_keras_serializable(package="bert_tf")
class BertMultipleChoice(_TaskModel):
    """Scores each of C (text, choice) encodings with one shared vector on the pooled output.
    Inputs are [B, C, S]; output `logits` [B, C]."""

    def __init__(self, encoder: BertEncoder, dropout_rate: float = 0.1, **kwargs) -> None:
        kwargs.setdefault("name", "bert_multiple_choice")
        super().__init__(encoder, **kwargs)
        self.dropout_rate = dropout_rate
        self.scorer = DenseHead(1, dropout_rate, encoder.config.initializer_range,
                                dtype=encoder.dtype_policy, name="scorer")
        self.scorer.build((None, encoder.config.hidden_size))
        self.built = True

    def call(self, inputs: Mapping[str, Any], training: bool | None = None) -> dict[str, Any]:
        ids = inputs["input_ids"]
        batch, choices, seq = ops.shape(ids)[0], ops.shape(ids)[1], ops.shape(ids)[2]
        flat = {k: ops.reshape(v, (batch * choices, seq)) for k, v in inputs.items()
                if k in ("input_ids", "input_mask", "segment_ids")}
        pooled = self.encoder(flat, training=training)["pooled_output"]
        scores = self.scorer(pooled, training=training)                          # [B*C, 1]
        return {"logits": ops.reshape(scores, (batch, choices))}

    def _task_config(self):
        return {"dropout_rate": self.dropout_rate}


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEmbedder(_TaskModel):
    """A sentence embedding: the encoder's last-layer token vectors pooled by SentencePooling
    (the input mask's tokens). Output: `embedding` [B, H] float32.

    Long texts: with inputs holding int32 `window_example` [N] (the windows of
    bert_tf.tokenization.windows), a text's embedding is the mean of its windows' embeddings
    (normalised again when `normalize`), B = max(window_example) + 1.

    Args:
      encoder: the BertEncoder whose sequence output is pooled.
      pooling: one of bert_tf.names.POOLING_MODES.
      normalize: L2-normalise the embeddings (sentence-transformers' Normalize module).
    """

    def __init__(self, encoder: BertEncoder, pooling: str = "mean", normalize: bool = False,
                 **kwargs) -> None:
        kwargs.setdefault("name", "bert_embedder")
        super().__init__(encoder, **kwargs)
        self.pooling = SentencePooling(pooling, normalize, dtype=encoder.dtype_policy,
                                       name="pooling")
        self.built = True

    @property
    def pooling_mode(self) -> str:
        return self.pooling.mode

    @property
    def normalize(self) -> bool:
        return self.pooling.normalize

    def call(self, inputs: Mapping[str, Any], training: bool | None = None) -> dict[str, Any]:
        sequence = self.encoder(inputs, training=training)["sequence_output"]
        embedding = self.pooling(sequence, inputs.get("input_mask"))
        if "window_example" in inputs:
            from bert_tf.model.window_pooling import combine_windows
            embedding = combine_windows(embedding, inputs["window_example"])
            if self.normalize:
                embedding = ops.normalize(embedding, axis=-1)
        return {"embedding": embedding}

    def _task_config(self):
        return {"pooling": self.pooling_mode, "normalize": self.normalize}


__all__ = ["BertEncoder", "BertPretrainer", "BertClassifier", "BertSpanLabeler",
           "BertTokenClassifier", "BertMultipleChoice", "BertEmbedder"]
