"""The kinds of model bert_tf trains, exports and predicts with, each under its one name, and
where its pieces live.

A kind's name is what `--task` of export_savedmodel.py and bert_tf.predict takes, what
export_info.json and run_options.json record, and what a checkpoint's head is called. Its
pieces are "module:attribute" strings, imported on first use (`Kind.load`), so this module
imports nothing of bert_tf and any layer may read it:

  model       the Keras task model class (bert_tf.model)
  finetune    the FinetuneTask of the runner that trains it (bert_tf.jobs; kinds with the same
              one are trained together: trained_together)
  serving     the serving head: raw text in, outputs out (bert_tf.serving)
  prediction  bert_tf.predict's runner: rows in, one JSON object per row out

A piece is None where a kind has none (fill_mask and encoder models are not trained as such;
pre-training models are not served).
"""

import dataclasses
import importlib

_MODEL = "bert_tf.model.task_models:"
# The encoder head serves any model: it reads the model's encoder.
_ALL_MODELS = ("bert_tf.model.encoder:BertEncoder",) + tuple(
    _MODEL + name for name in ("BertClassifier", "BertSpanLabeler", "BertTokenClassifier",
                               "BertMultipleChoice", "BertPretrainer", "BertEmbedder"))


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind of model: its name, its pieces ("module:attribute", None where it has none)
    and what the code asks about it."""

    name: str
    model: str
    finetune: str = None
    serving: str = None
    prediction: str = None
    serves: tuple = ()           # model classes its serving head takes (default: `model`)
    windows: bool = False        # reads long texts in windows (run_classifier --doc_stride)
    labelled: bool = False       # its outputs name labels: it needs the label list
    head_layer: str = None       # the model attribute holding its head (native checkpoints)
    other_tool: str = None       # where its predictions come from, if not bert_tf.predict
    # bert_tf.contract: the InferenceContract fields a model of this kind is used with, beside
    # its kind, sequence length and casing; its serving_default text inputs (and "text_b" when
    # `pairs` and the contract says so); its own default sequence length, if not the contract's.
    settings: tuple = ()
    texts: tuple = ("text_a",)
    pairs: bool = False
    max_seq_length: int = None
    # How its model is built around an encoder: the head's output units ("labels": one per
    # label, an int, or None) and the contract fields the model class also takes; `loader`
    # ("module:function"(config, checkpoint) -> model) where loading it is special.
    units: object = None
    model_settings: tuple = ()
    loader: str = None
    word_windows: bool = False   # bert_tf.predict reads its long texts in windows of words

    def build_model(self, encoder, contract):
        """This kind's model around `encoder`, for `contract` (a bert_tf.contract
        InferenceContract)."""
        model_class = self.load("model")
        if isinstance(encoder, model_class):
            return encoder                      # the encoder kind
        units = len(contract.labels) if self.units == "labels" else self.units
        args = ([units] if units else []) + [getattr(contract, n) for n in self.model_settings]
        return model_class(encoder, *args)

    def load(self, piece):
        """The object the `piece` string ("model", "serving", ...) names, or None."""
        return _resolve(getattr(self, piece))

    def model_classes(self):
        """The model classes the serving head takes."""
        return tuple(_resolve(path) for path in self.serves or (self.model,))


def _resolve(path):
    if path is None:
        return None
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _kinds(*kinds):
    return {kind.name: kind for kind in kinds}


_CLASSIFIER = dict(model=_MODEL + "BertClassifier",
                   finetune="bert_tf.jobs.classifier:ClassifierTask", windows=True,
                   head_layer="classifier", pairs=True, units="labels")
_WINDOWS = ("window_stride", "window_pooling", "max_windows")

KINDS = _kinds(
    Kind("classifier", serving="bert_tf.serving.heads:ClassifierHead",
         prediction="bert_tf.prediction.runners:ClassifierRunner", labelled=True,
         settings=("labels", "text_pair") + _WINDOWS, **_CLASSIFIER),
    Kind("regression", serving="bert_tf.serving.heads:RegressionHead",
         prediction="bert_tf.prediction.runners:RegressionRunner",
         settings=("text_pair",) + _WINDOWS, **dict(_CLASSIFIER, units=1)),
    Kind("squad", _MODEL + "BertSpanLabeler", "bert_tf.jobs.squad:SquadTask",
         "bert_tf.serving.squad:SquadHead", "bert_tf.prediction.runners:SquadRunner",
         head_layer="span_head", texts=("question", "context"), max_seq_length=384,
         settings=("max_query_length", "max_answer_length", "doc_stride")),
    Kind("tagger", _MODEL + "BertTokenClassifier", "bert_tf.jobs.ner:NerTask",
         "bert_tf.serving.heads:TaggerHead", "bert_tf.prediction.runners:TaggerRunner",
         head_layer="tagger", labelled=True, settings=("labels", "window_stride"),
         units="labels", word_windows=True),
    Kind("encoder", "bert_tf.model.encoder:BertEncoder",
         serving="bert_tf.serving.heads:EncoderHead", serves=_ALL_MODELS,
         other_tool="extract_features.py", pairs=True, settings=("text_pair",)),
    Kind("multiple_choice", _MODEL + "BertMultipleChoice", "bert_tf.jobs.swag:SwagTask",
         "bert_tf.serving.multiple_choice:MultipleChoiceHead",
         "bert_tf.prediction.runners:MultipleChoiceRunner", head_layer="scorer",
         texts=("context", "endings"), settings=("num_choices",)),
    Kind("fill_mask", _MODEL + "BertPretrainer",
         serving="bert_tf.serving.fill_mask:FillMaskHead", other_tool="predict_masked.py",
         texts=("text",), settings=("top_k", "include_special_tokens"),
         loader="bert_tf.jobs.fill_mask:load_masked_lm"),
    Kind("multi_label", serving="bert_tf.serving.multi_label:MultiLabelHead",
         prediction="bert_tf.prediction.runners:MultiLabelRunner", labelled=True,
         settings=("labels", "text_pair", "multi_label_threshold") + _WINDOWS, **_CLASSIFIER),
    Kind("pretraining", _MODEL + "BertPretrainer", head_layer="mlm_head",
         other_tool="predict_masked.py"),
    # Its pooling has no weights, so a checkpoint holds no head for it.
    Kind("embedding", _MODEL + "BertEmbedder", "bert_tf.jobs.embedding:EmbeddingTask",
         "bert_tf.serving.embedding:EmbeddingHead", "bert_tf.prediction.runners:EmbeddingRunner",
         windows=True, settings=("pooling", "normalize") + _WINDOWS,
         model_settings=("pooling", "normalize")),
)

# The kinds export_savedmodel.py exports (in --task's order), bert_tf.predict predicts with,
# and that read long texts in windows.
SERVED = tuple(name for name, kind in KINDS.items() if kind.serving)
PREDICTED = tuple(name for name, kind in KINDS.items() if kind.prediction)
WINDOWED = tuple(name for name, kind in KINDS.items() if kind.windows)


def get(name):
    """The Kind called `name`; ValueError listing the kinds when there is none."""
    if name not in KINDS:
        raise ValueError(f"unknown kind {name!r}: use one of {', '.join(KINDS)}")
    return KINDS[name]


def trained_together(a, b):
    """Whether kinds `a` and `b` are trained by the same runner (classifier, regression and
    multi_label models all by run_classifier)."""
    finetune = KINDS[a].finetune if a in KINDS else None
    return finetune is not None and finetune == (KINDS[b].finetune if b in KINDS else None)
