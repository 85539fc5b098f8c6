"""Serving heads: what each kind of model's signatures take and return.

A ServingHead turns raw strings into BERT features (in-graph tokenization, exactly
FullTokenizer's) and model outputs into the outputs clients read. It is a tf.Module so the
SavedModel tracks its tokenizer (vocabulary asset, id -> token table) and the model.
make_head builds the head of a bert_tf.kinds kind from the kind's `serving` piece.

Heads: classifier, regression, tagger, encoder here; squad, multiple_choice, multi_label,
fill_mask and embedding in their own modules. All outputs are float32, int32, int64, bool or
string; offsets are byte offsets into the UTF-8 request strings, [start, end), -1 where a
position has no text ([CLS], [SEP], padding).
"""


import tensorflow as tf

from bert_tf import kinds
from bert_tf.serving.options import HeadOptions
from bert_tf.tokenization import packing, vocab as _vocab


class _Untracked:
    """Holds a value on a tf.Module without adding it to the SavedModel's object graph."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _float32(x):
    return tf.cast(x, tf.float32)


def _strings(values):
    return tf.constant([str(v) for v in values], tf.string)


def _run(predict, features, sequence_outputs=True):
    """predict(features), with the sequence length of the features (when static) restored on
    [B, S, ...] outputs (sequence_outputs: every output of rank >= 2 is per token): a shared
    model function traced for any length loses it."""
    seq = features["input_ids"].shape[1]
    out = predict(features)
    if seq is None or not sequence_outputs:
        return out
    return {k: tf.ensure_shape(v, [v.shape[0], seq] + v.shape[2:])
            if v.shape.rank >= 2 and v.shape[1] is None else v for k, v in out.items()}


class ServingHead(tf.Module):
    """Base class. Subclasses set `kind` and `text_names` and implement build(), encode() and
    outputs(); text_outputs() defaults to outputs(). Features are int [B, S] unless a head
    says otherwise (feature_shape, example_shape, text_specs)."""

    kind = None
    text_names = ("text_a",)
    sequence_outputs = True     # model outputs of rank >= 2 are [B, S, ...]

    def __init__(self, model, seq_length, name=None):
        # "<kind>_task": the module's name in exported SavedModels, kept.
        super().__init__(name=name or f"{self.kind}_task")
        self._model = _Untracked(model)
        # The SavedModel saves the tf.Variables that the traced functions read, and nothing
        # else. A Keras 3 keras.Variable saves as a *copy* of its tf.Variable: TensorFlow's
        # session loader (tensorflow_model_server's) would restore the copies and leave the
        # variables the signatures read uninitialised, and the file would hold every weight
        # twice. So the Keras model stays out of the object graph.
        self.model_variables = [v.value for v in model.variables]
        self.seq_length = int(seq_length)

    @property
    def model(self):
        """The Keras model this head serves."""
        return self._model.value

    def predict(self, features):
        """The model's outputs on int32 features, in float32."""
        outputs = self.model(dict(features), training=False)
        return {k: _float32(v) for k, v in outputs.items() if k != "encoder_outputs"}

    def text_specs(self):
        """TensorSpecs of serving_default's inputs, in text_names order."""
        return [tf.TensorSpec([None], tf.string, name=n) for n in self.text_names]

    def feature_shape(self):
        """Shape of each int feature of serve_features (and of the model function)."""
        return [None, None]

    def example_shape(self):
        """FixedLenFeature shape of each int64 feature of serve_examples' tf.Examples."""
        return [self.seq_length]

    @classmethod
    def build(cls, model, vocab_tokens, lower_case, seq_length, options):
        """The head for `model` with the HeadOptions it reads (make_head checked the model)."""
        raise NotImplementedError

    def encode(self, texts):
        """texts: tuple of tf.string [B] in text_names order -> (features, extras)."""
        raise NotImplementedError

    def outputs(self, predictions, features):
        raise NotImplementedError

    def text_outputs(self, predictions, features, extras, texts):
        return self.outputs(predictions, features)

    def serve_text(self, texts, predict=None):
        """Raw text -> text outputs; `predict` (default self.predict) runs the model."""
        features, extras = self.encode(texts)
        predictions = _run(predict or self.predict, features, self.sequence_outputs)
        return self.text_outputs(predictions, features, extras, texts)

    def serve_features(self, features, predict=None):
        return self.outputs(_run(predict or self.predict, features, self.sequence_outputs),
                            features)

    def warmup_texts(self):
        """{input name: list of strings} for the warm-up requests: a short and a long row."""
        short = "Warm-up request: is this a sentence?"
        long = " ".join(["warm-up"] * self.seq_length)
        return {name: [short, long] for name in self.text_names}

    def info(self):
        """JSON-able description written to assets.extra/export_info.json."""
        return {"task": self.kind, "seq_length": self.seq_length,
                "text_inputs": list(self.text_names)}


def _tokenizer(vocab_tokens, lower_case):
    from bert_tf.tokenization.layers import BertTokenizerLayer
    return BertTokenizerLayer(vocab_tokens, lower_case=lower_case, name="tokenizer")


def tokenize_together(tokenizer, texts, with_offsets=False):
    """Tokenizes one or more tf.string [B] tensors with a single tokenizer call (one copy of
    the tokenizer graph, one op launch). Returns, per text, {"token_ids", and with offsets
    "start_offsets", "end_offsets"} of ragged [B, None]."""
    batch = tf.shape(texts[0], out_type=tf.int64)[0]
    checks = [tf.debugging.assert_equal(tf.shape(t, out_type=tf.int64)[0], batch,
                                        message="all text inputs need the same batch size")
              for t in texts[1:]]
    with tf.control_dependencies(checks):
        joined = tf.concat(texts, axis=0) if len(texts) > 1 else texts[0]
    out = tokenizer.tokenize(joined, with_offsets=True) if with_offsets else {
        "token_ids": tokenizer.tokenize(joined, with_offsets=False)}
    return [{k: v[i * batch:(i + 1) * batch] for k, v in out.items()}
            for i in range(len(texts))]


class _TextHead(ServingHead):
    """One text or a pair, packed like run_classifier: [CLS] A [SEP] (B [SEP]), the longer
    text losing its last token while the pair is too long."""

    def __init__(self, model, vocab_tokens, lower_case, seq_length, text_pair=False,
                 with_offsets=False, name=None):
        super().__init__(model, seq_length, name=name)
        self.text_names = ("text_a", "text_b") if text_pair else ("text_a",)
        self.with_offsets = bool(with_offsets)
        self.tokenizer = _tokenizer(vocab_tokens, lower_case)
        special = self.tokenizer.special_ids()
        self.cls_id, self.sep_id = special[_vocab.CLS], special[_vocab.SEP]

    def encode(self, texts):
        pieces = tokenize_together(self.tokenizer, texts, self.with_offsets)
        extras = (tuple((p["start_offsets"] for p in pieces)),
                  tuple((p["end_offsets"] for p in pieces))) if self.with_offsets else ()
        features, packed = packing.pack([p["token_ids"] for p in pieces], self.seq_length,
                                        self.cls_id, self.sep_id, extras)
        return features, dict(zip(("start_offsets", "end_offsets"), packed))


class _WindowedTextHead(_TextHead):
    """A text head whose raw-text signature can read long first texts in windows
    (bert_tf.tokenization.windows) and combine the windows' `windowed_output` per row (mean or
    max), as run_classifier --doc_stride does; serve_features takes one row per example."""

    windowed_output = "logits"

    def __init__(self, model, vocab_tokens, lower_case, seq_length, text_pair=False,
                 window_stride=0, window_pooling="mean", max_windows=0):
        super().__init__(model, vocab_tokens, lower_case, seq_length, text_pair)
        self.window_stride, self.max_windows = int(window_stride), int(max_windows)
        self.window_pooling = window_pooling

    def encode(self, texts):
        if not self.window_stride:
            return super().encode(texts)
        from bert_tf.tokenization.windows import pack_windows
        pieces = tokenize_together(self.tokenizer, texts)
        features, window_example = pack_windows([p["token_ids"] for p in pieces],
                                                self.seq_length, self.window_stride,
                                                self.cls_id, self.sep_id, self.max_windows)
        return features, {"window_example": window_example,
                          "num_examples": tf.shape(texts[0])[0]}

    def text_outputs(self, predictions, features, extras, texts):
        if self.window_stride:
            from bert_tf.model.window_pooling import combine_windows
            key = self.windowed_output
            predictions = dict(predictions, **{key: combine_windows(
                predictions[key], extras["window_example"], extras["num_examples"],
                self.window_pooling)})
        return self.outputs(predictions, features)

    def info(self):
        info = super().info()
        if self.window_stride:
            info.update(window_stride=self.window_stride, window_pooling=self.window_pooling,
                        max_windows=self.max_windows)
        return info


class ClassifierHead(_WindowedTextHead):
    """BertClassifier with num_classes >= 2 -> probabilities, logits, label_id, label."""

    kind = "classifier"

    def __init__(self, model, vocab_tokens, lower_case, seq_length, labels, text_pair=False,
                 **windows):
        super().__init__(model, vocab_tokens, lower_case, seq_length, text_pair, **windows)
        self.labels = [str(label) for label in labels]

    @classmethod
    def build(cls, model, vocab_tokens, lower_case, seq_length, options):
        if model.num_classes == 1:
            raise ValueError("a BertClassifier with num_classes=1 is a regression model: "
                             "use task 'regression'")
        return cls(model, vocab_tokens, lower_case, seq_length,
                   _check_labels(options.labels, model.num_classes, cls.kind),
                   options.text_pair, **options.windows())

    def outputs(self, predictions, features):
        logits = predictions["logits"]
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"probabilities": tf.nn.softmax(logits), "logits": logits,
                "label_id": label_id, "label": tf.gather(_strings(self.labels), label_id)}

    def info(self):
        return dict(super().info(), labels=self.labels)


class RegressionHead(_WindowedTextHead):
    """BertClassifier with num_classes == 1 -> score."""

    kind = "regression"

    @classmethod
    def build(cls, model, vocab_tokens, lower_case, seq_length, options):
        if model.num_classes != 1:
            raise ValueError(f"task 'regression' needs a BertClassifier with num_classes=1, "
                             f"got num_classes={model.num_classes} (use task 'classifier')")
        return cls(model, vocab_tokens, lower_case, seq_length, options.text_pair,
                   **options.windows())

    def outputs(self, predictions, features):
        return {"score": predictions["logits"][:, 0]}


class EncoderHead(_TextHead):
    """BertEncoder -> pooled_output, sequence_output (+ input_mask for raw text)."""

    kind = "encoder"

    @classmethod
    def build(cls, model, vocab_tokens, lower_case, seq_length, options):
        encoder = getattr(model, "encoder", model)          # a task model's, or the encoder
        return cls(encoder, vocab_tokens, lower_case, seq_length, options.text_pair)

    def outputs(self, predictions, features):
        return {"pooled_output": predictions["pooled_output"],
                "sequence_output": predictions["sequence_output"]}

    def text_outputs(self, predictions, features, extras, texts):
        return dict(self.outputs(predictions, features), input_mask=features["input_mask"])


class TaggerHead(_TextHead):
    """BertTokenClassifier -> per-WordPiece logits, probabilities, label_id, label; raw text
    adds each token's string and byte offsets (labels are "" where there is no text)."""

    kind = "tagger"

    def __init__(self, model, vocab_tokens, lower_case, seq_length, labels):
        super().__init__(model, vocab_tokens, lower_case, seq_length, text_pair=False,
                         with_offsets=True)
        self.labels = [str(label) for label in labels]

    @classmethod
    def build(cls, model, vocab_tokens, lower_case, seq_length, options):
        return cls(model, vocab_tokens, lower_case, seq_length,
                   _check_labels(options.labels, model.num_classes, cls.kind))

    def outputs(self, predictions, features):
        logits = predictions["logits"]
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"logits": logits, "probabilities": tf.nn.softmax(logits),
                "label_id": label_id, "label": tf.gather(_strings(self.labels), label_id)}

    def text_outputs(self, predictions, features, extras, texts):
        out = self.outputs(predictions, features)
        has_text = extras["start_offsets"] >= 0
        out["label"] = tf.where(has_text, out["label"], "")
        tokens = self.tokenizer.id_to_token(features["input_ids"])
        out["tokens"] = tf.where(features["input_mask"] > 0, tokens, "")
        out["token_start_offsets"] = extras["start_offsets"]
        out["token_end_offsets"] = extras["end_offsets"]
        return out

    def info(self):
        return dict(super().info(), labels=self.labels)


def make_head(kind, model, vocab_tokens, lower_case, seq_length, options=None):
    """The ServingHead of `kind` (a bert_tf.kinds name) for `model` with `options` (a
    HeadOptions; None: the defaults), checking that they fit together."""
    if kind not in kinds.SERVED:
        raise ValueError(f"unknown task {kind!r}: use one of {', '.join(kinds.SERVED)}")
    spec = kinds.get(kind)
    accepted = spec.model_classes()
    if not isinstance(model, accepted):
        hint = (" (the masked-LM head of a pre-training checkpoint; an encoder alone cannot "
                "fill masks)" if kind == "fill_mask" else "")
        raise ValueError(f"task {kind!r} needs a {_names(accepted)}{hint}, "
                         f"got {type(model).__name__}")
    options = options or HeadOptions()
    if options.num_choices is not None and kind != "multiple_choice":
        raise ValueError(f"num_choices applies to task 'multiple_choice' only, not {kind!r}")
    if options.window_stride and "window_stride" not in spec.settings:
        raise ValueError(f"window_stride applies to tasks {', '.join(kinds.WINDOWED)}, not "
                         f"{kind!r}")
    return spec.load("serving").build(model, vocab_tokens, lower_case, seq_length, options)


def _names(classes):
    return " or ".join(c.__name__ for c in classes)


def _check_labels(labels, num_classes, kind):
    if labels is None:
        raise ValueError(f"task {kind!r}: give the label list (one string per class, "
                         f"{num_classes} here), e.g. the processor's get_labels()")
    labels = [str(label) for label in labels]
    if len(labels) != num_classes:
        raise ValueError(f"task {kind!r}: {len(labels)} labels {labels} for a model with "
                         f"{num_classes} classes")
    if len(set(labels)) != len(labels):
        raise ValueError(f"task {kind!r}: labels must be distinct, got {labels}")
    return labels
