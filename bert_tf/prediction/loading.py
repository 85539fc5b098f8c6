"""The model to predict with: a SavedModel exported by bert_tf, or a checkpoint built in memory
into the same serving module (bert_tf.jobs.checkpoint_predictor, from what this module reads of
the checkpoint), so both give their predictions from the same code.

`--model` may be
  * a SavedModel version folder (holding saved_model.pb), or an export_dir of numbered
    versions (the highest is used): its task, labels, casing and lengths come from
    assets.extra/export_info.json, written at export;
  * a checkpoint of any format bert_tf reads (a runner's output_dir or its best/ folder,
    a TF1 prefix, a native prefix, a HuggingFace folder), with bert_config.json / config.json
    and vocab.txt beside it unless given. Its task is read from the head it holds (a TF1 or
    native checkpoint; a HuggingFace config's `architectures`); the model is built as
    export_savedmodel.py builds it (bert_tf.jobs.export) and wrapped in the serving module
    bert_tf.serving.export would save (bert_tf.serving.module), whose signature functions are
    then called in this process. Its labels, unless --labels gives them, come from the
    label_list.txt run_classifier and run_ner write to output_dir and best/, else from a
    HuggingFace config's id2label.

A checkpoint of run_classifier --multi_label holds a plain classifier head: it is taken as
multi_label with --task=multi_label, or when the eval_results.txt beside it records a
`threshold` (only multi-label evaluations write one).
"""

import dataclasses
import json
import logging
import os

from bert_tf import fileio, kinds, names
from bert_tf.names import EXPORT_INFO, POOLING_MODES
from bert_tf.options import option
from bert_tf.prediction.inputs import InputError

logger = logging.getLogger("bert_tf")

# HuggingFace architectures -> task
_HF_ARCHITECTURES = {"BertForSequenceClassification": "classifier",
                     "BertForTokenClassification": "tagger",
                     "BertForQuestionAnswering": "squad",
                     "BertForMultipleChoice": "multiple_choice",
                     "BertForPreTraining": "pretraining", "BertForMaskedLM": "pretraining",
                     "BertModel": "encoder"}


# --------------------------------------------------------------------------- settings
@dataclasses.dataclass
class CheckpointSettings:
    """The flags that apply to checkpoints only (a SavedModel fixed them at export). None: not
    given."""

    task_name: str = option(
        None, "Checkpoints: a GLUE/XNLI task name (MRPC, SST-2, STS-B, ...): sets the task, the "
        "labels and whether the model reads pairs.")
    bert_config_file: str = option(
        None, "Checkpoints: the model's config (default: bert_config.json or config.json beside "
        "it).")
    vocab_file: str = option(None, "Checkpoints: the model's vocab.txt (default: the one beside "
                             "it).")
    do_lower_case: bool = option(None, "Checkpoints: whether the model is uncased (default: the "
                                 "run's, else true).")
    labels: list = option(
        None, "Checkpoints: label names in class-id order (classifier, NER; default: "
        "label_list.txt beside the checkpoint, as run_ner writes it, or a HuggingFace config's "
        "id2label).")
    max_seq_length: int = option(
        None, "Checkpoints: sequence length (default: the run's, else 128; SQuAD 384, as "
        "run_squad).")
    max_query_length: int = option(
        None, "SQuAD checkpoints: question WordPieces kept (default: the run's, else 64).")
    max_answer_length: int = option(
        None, "SQuAD checkpoints: longest answer in WordPieces (default: the run's, else 30).")
    window_pooling: str = option(
        None, "Classifier, regression, multi_label and embedding checkpoints with --doc_stride: "
        "how the windows' logits (embeddings) combine (default: the run's run_classifier "
        "--window_pooling, else mean).", choices=("mean", "max"))
    max_windows: int = option(
        None, "Classifier, regression, multi_label and embedding checkpoints with --doc_stride: "
        "at most this many windows per text, from its start (default: the run's, else 0: all).")
    pooling: str = option(
        None, "Embedding checkpoints: mean, cls, max or mean_sqrt_len pooling of the last "
        "layer's token vectors (default: the sentence-transformers folder's "
        "1_Pooling/config.json, else mean).", choices=POOLING_MODES)
    normalize: bool = option(
        None, "Embedding checkpoints: L2-normalise the embeddings (default: whether the "
        "sentence-transformers folder's modules.json lists a Normalize module, else no).")
    multi_label_threshold: float = option(
        None, "multi_label checkpoints: a label is selected when its probability is >= this "
        "(default: the threshold in the eval_results.txt beside the checkpoint, as "
        "run_classifier --multi_label tunes it, else 0.5).")

    def given(self):
        """Names of the settings given, as flags."""
        return [f"--{f.name}" for f in dataclasses.fields(self)
                if getattr(self, f.name) not in (None, [], ())]


# --------------------------------------------------------------------------- the predictor
class Predictor:
    """A model's serving signatures, however they were obtained.

    info: the export_info.json description (task, seq_length, text_inputs, labels,
    do_lower_case, num_choices, ...); vocab_file: its vocabulary; call(signature, inputs):
    runs a signature on {input name: array} and returns {output name: numpy array}."""

    def __init__(self, info, vocab_file, signatures, source, order=None):
        self.info = info
        self.kind = info["task"]
        self.vocab_file = vocab_file
        self.source = source
        self._signatures = signatures
        self._order = order          # in-memory functions: positional input names

    def call(self, signature, inputs):
        import tensorflow as tf
        if signature not in self._signatures:
            raise InputError(f"{self.source} has no {signature} signature (exported with "
                             f"--notext_signatures?): export it again with text signatures")
        function = self._signatures[signature]
        tensors = {k: tf.constant(v) for k, v in inputs.items()}
        if self._order is None:
            out = function(**tensors)
        else:
            out = function(*[tensors[k] for k in self._order[signature]])
        return {k: v.numpy() for k, v in out.items()}


# --------------------------------------------------------------------------- SavedModels
def version_folder(path, is_version):
    """`path` itself when is_version(path), else its highest numeric subfolder for which
    is_version holds (an export_dir of versions), else None. Local paths and URLs."""
    import tensorflow as tf
    path = str(path).rstrip("/") if fileio.is_url(path) else os.fspath(path)
    if is_version(path):
        return path
    if not fileio.isdir(path):
        return None
    versions = sorted((int(n.rstrip("/")) for n in tf.io.gfile.listdir(path)
                       if n.rstrip("/").isdigit()), reverse=True)
    for version in versions:
        candidate = os.path.join(path, str(version))
        if is_version(candidate):
            return candidate
    return None


def saved_model_version(path):
    """The SavedModel folder `path` names (itself, or its highest numeric version holding
    saved_model.pb), or None when it names none."""
    def holds_saved_model(folder):
        return fileio.exists(os.path.join(folder, "saved_model.pb"))
    return version_folder(path, holds_saved_model)


def load_saved_model(path):
    """Predictor of the SavedModel folder `path` (a version folder)."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops of serving_default)
    info_path = os.path.join(path, names.ASSETS_EXTRA, EXPORT_INFO)
    if not fileio.exists(info_path):
        raise InputError(f"--model {path}: no {names.ASSETS_EXTRA}/{EXPORT_INFO}: not a "
                         f"SavedModel exported by bert_tf")
    with fileio.open_binary(info_path) as f:
        info = json.loads(f.read().decode("utf-8"))
    check_predictable(info.get("task"), f"--model {path}")
    logger.info("loading SavedModel %s (%s)", path, info["task"])
    loaded = tf.saved_model.load(path)
    signatures = dict(loaded.signatures)
    predictor = Predictor(info, os.path.join(path, "assets", names.VOCAB_ASSET), signatures,
                          f"SavedModel {path}")
    predictor._loaded = loaded          # keeps the functions' captured resources alive
    return predictor


def check_predictable(kind, where):
    if kind in kinds.PREDICTED:
        return
    tool = kinds.KINDS[kind].other_tool if kind in kinds.KINDS else None
    if tool:
        raise InputError(f"{where} is a {kind} model: use {tool} for it "
                         f"(bert_tf.predict serves {', '.join(kinds.PREDICTED)})")
    raise InputError(f"{where}: bert_tf.predict has no predictions for task {kind!r} (it "
                     f"serves {', '.join(kinds.PREDICTED)})")


# --------------------------------------------------------------------------- checkpoints
def _head_of_names(shapes):
    """(task, output units) from google variable names -> shapes, or (None, None)."""
    for prefix, kind in (("cls/squad/", "squad"), ("cls/token_classifier/", "tagger"),
                         ("cls/multiple_choice/", "multiple_choice"), ("", "classifier")):
        shape = shapes.get(f"{prefix}output_weights")
        if shape is not None:
            return kind, int(shape[0])
    if any(name.startswith("cls/predictions/") for name in shapes):
        return "pretraining", None
    return None, None


def checkpoint_head(path):
    """(task, output units, format, location) of the head a checkpoint holds: task is
    "classifier", "regression", "squad", "tagger", "multiple_choice", "pretraining",
    "encoder" (no head), or None when the format does not say (a HuggingFace folder without
    `architectures`)."""
    import tensorflow as tf

    from bert_tf.checkpoints import resolve
    fmt, location = resolve(path)
    units = None
    if fmt == "native":
        from bert_tf.checkpoints.native import native_head_kind
        kind, units = native_head_kind(location)
        kind = kind or "encoder"
    elif fmt == "tf1":
        kind, units = _head_of_names(dict(tf.train.list_variables(location)))
        kind = kind or "encoder"
    else:
        kind, units = _hf_head(location)
    if kind == "classifier" and units == 1:
        kind = "regression"
    return kind, units, fmt, location


def _hf_head(location):
    """(task, units) of a HuggingFace model.safetensors from its tensor names: qa_outputs is
    SQuAD, cls.predictions pre-training, no head a bare encoder; `classifier.*` serves three
    task models, told apart only by config.json's `architectures` (None when it does not
    say)."""
    from safetensors import safe_open

    from bert_tf.checkpoints.hf import WEIGHTS_FILE
    file = os.path.join(location, WEIGHTS_FILE) if os.path.isdir(location) else location
    with safe_open(file, framework="np") as f:
        shapes = {name.removeprefix("bert."): f.get_slice(name).get_shape()
                  for name in f.keys()}  # noqa: SIM118 (a safetensors handle, not a dict)
    if "qa_outputs.weight" in shapes:
        return "squad", 2
    if "classifier.weight" not in shapes:
        if any(name.startswith("cls.predictions.") for name in shapes):
            return "pretraining", None
        return "encoder", None
    units = int(shapes["classifier.weight"][0])
    config_path = os.path.join(os.path.dirname(file), "config.json")
    tasks = set()
    if os.path.exists(config_path):
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
        tasks = {_HF_ARCHITECTURES.get(a) for a in config.get("architectures") or ()}
    tasks &= {"classifier", "tagger", "multiple_choice"}
    return (tasks.pop() if len(tasks) == 1 else None), units


def hf_labels(location, units):
    """Label names of a HuggingFace config's id2label, unless they are the default LABEL_<i>."""
    folder = location if os.path.isdir(location) else os.path.dirname(location)
    path = os.path.join(folder, "config.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        id2label = json.load(f).get("id2label") or {}
    try:
        labels = [str(id2label[key]) for key in sorted(id2label, key=int)]
    except (KeyError, ValueError):
        return None
    if not labels or labels == [f"LABEL_{i}" for i in range(len(labels))]:
        return None
    return labels if units in (None, len(labels)) else None
