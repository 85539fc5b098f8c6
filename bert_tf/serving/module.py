"""The tf.Module that becomes the SavedModel: three signatures around one ServingHead.

serving_default  raw strings [batch] named as the head says (text_a[, text_b]; question,
                 context; text; context [batch] + endings [batch, num_choices]) -> the head's
                 text outputs.
serve_features   int32 input_ids, input_mask, segment_ids [batch, seq] (multiple choice:
                 [batch, num_choices, seq]) -> the head's outputs; core TensorFlow ops only.
serve_examples   serialized tf.Example [batch] with int64 input_ids, input_mask, segment_ids
                 of length seq_length (run_classifier / run_squad records; multiple choice:
                 num_choices * seq_length) -> as serve_features (+ unique_ids for SQuAD).
Feature inputs are checked in the graph (shapes agree, 1 <= seq <= max_position_embeddings,
ids inside the vocabulary and type vocabulary, mask 0/1): a bad request fails with an
InvalidArgument error naming the input, never a crash.
"""

from typing import Mapping, Sequence

import tensorflow as tf

from bert_tf import names
from bert_tf.config import BertConfig
from bert_tf.serving import padding


def check_features(features: Mapping[str, tf.Tensor], config: BertConfig
                   ) -> dict[str, tf.Tensor]:
    """Asserts (in the graph) that client features (any int dtype) fit the model; returns them
    as int32 (checked before the cast, so int64 values cannot wrap into range)."""
    ids, mask, segments = (features[k] for k in names.FEATURE_KEYS)
    seq = tf.shape(ids)[-1]

    def limit(value):
        return tf.constant(value, ids.dtype)

    checks = [
        tf.debugging.assert_equal(tf.shape(mask), tf.shape(ids),
                                  message="input_mask must have the shape of input_ids"),
        tf.debugging.assert_equal(tf.shape(segments), tf.shape(ids),
                                  message="segment_ids must have the shape of input_ids"),
        tf.debugging.assert_positive(seq, message="input_ids: sequence length must be >= 1"),
        tf.debugging.assert_less_equal(
            seq, config.max_position_embeddings,
            message=f"input_ids: sequence length exceeds max_position_embeddings "
                    f"({config.max_position_embeddings})"),
        tf.debugging.assert_non_negative(ids, message="input_ids must be >= 0"),
        tf.debugging.assert_less(ids, limit(config.vocab_size),
                                 message=f"input_ids must be < vocab_size ({config.vocab_size})"),
        tf.debugging.assert_non_negative(segments, message="segment_ids must be >= 0"),
        tf.debugging.assert_less(
            segments, limit(config.type_vocab_size),
            message=f"segment_ids must be < type_vocab_size ({config.type_vocab_size})"),
        tf.debugging.assert_equal(tf.reduce_all((mask == 0) | (mask == 1)), True,
                                  message="input_mask must hold only 0 and 1"),
    ]
    # tf.cast of an int32 tensor returns that same tensor and makes no op, so the identity is
    # what carries the control dependency: without it the embedding gather could run first.
    with tf.control_dependencies(checks):
        return {k: tf.identity(tf.cast(features[k], tf.int32)) for k in names.FEATURE_KEYS}


def checked_inputs(values: Sequence[tf.Tensor], specs: Sequence[tf.TensorSpec]
                   ) -> list[tf.Tensor]:
    """values with their shapes checked at run time against the signature's TensorSpecs: a
    model server feeds request tensors of any shape, and a wrong rank would otherwise fail
    deep inside the graph ("Shape of tensor text_a [2,1] is not compatible with expected
    shape [?]" instead)."""
    return [tf.ensure_shape(v, spec.shape, name=f"check_{spec.name}")
            for v, spec in zip(values, specs)]


class ServingModule(tf.Module):
    """Holds a ServingHead and builds its signature functions.

    The model runs on each request cut to a bucket length, or with no buckets to its longest
    row (bert_tf.serving.padding); with jit_compile its function is XLA-compiled
    (tensorflow_model_server then needs --xla_cpu_compilation_enabled=true)."""

    def __init__(self, head, config, length_buckets, jit_compile=False):
        super().__init__(name="bert_serving")
        self.task = head    # keeps the name `task`: a path in the SavedModel's object graph
        self._config = config
        self._length_buckets = list(length_buckets)
        self._jit_compile = bool(jit_compile)

    def signatures(self, text: bool = True) -> dict[str, tf.types.experimental.ConcreteFunction]:
        """{signature name: concrete function} for tf.saved_model.save.

        The signatures share one traced model function (the SavedModel stores the encoder graph
        once). No function is an attribute of the module: tf.saved_model.save would trace it a
        second time."""
        shape = self.task.feature_shape()
        specs = {k: tf.TensorSpec(shape, tf.int32, name=k) for k in names.FEATURE_KEYS}
        model_fn = tf.function(self.task.predict, input_signature=[specs], autograph=False,
                               jit_compile=self._jit_compile)
        predict = tf.function(
            padding.bucketed(model_fn, self._length_buckets, pad_batch=self._jit_compile,
                             per_token_outputs=self.task.sequence_outputs),
            input_signature=[specs], autograph=False)
        out = {names.SERVE_FEATURES: self._features_function(predict).get_concrete_function(),
               names.SERVE_EXAMPLES: self._examples_function(predict).get_concrete_function()}
        if text:
            out[names.SERVING_DEFAULT] = self._text_function(predict).get_concrete_function()
        return out

    def _text_function(self, predict):
        specs = self.task.text_specs()

        @tf.function(input_signature=specs, autograph=False)
        def serve_text(*texts):
            return self.task.serve_text(tuple(checked_inputs(texts, specs)), predict)

        return serve_text

    def _features_function(self, predict):
        shape = self.task.feature_shape()
        specs = [tf.TensorSpec(shape, tf.int32, name=k) for k in names.FEATURE_KEYS]

        @tf.function(input_signature=specs, autograph=False)
        def serve_features(input_ids, input_mask, segment_ids):
            inputs = checked_inputs((input_ids, input_mask, segment_ids), specs)
            features = check_features(dict(zip(names.FEATURE_KEYS, inputs)), self._config)
            return self.task.serve_features(features, predict)

        return serve_features

    def _examples_function(self, predict):
        spec = {k: tf.io.FixedLenFeature(self.task.example_shape(), tf.int64)
                for k in names.FEATURE_KEYS}
        squad = self.task.kind == "squad"
        if squad:
            spec[names.UNIQUE_IDS] = tf.io.FixedLenFeature([], tf.int64, default_value=0)

        specs = [tf.TensorSpec([None], tf.string, name=names.EXAMPLES_KEY)]

        @tf.function(input_signature=specs, autograph=False)
        def serve_examples(examples):
            parsed = tf.io.parse_example(checked_inputs([examples], specs)[0], spec)
            features = check_features(parsed, self._config)
            out = self.task.serve_features(features, predict)
            if squad:
                out[names.UNIQUE_IDS] = parsed[names.UNIQUE_IDS]
            return out

        return serve_examples
