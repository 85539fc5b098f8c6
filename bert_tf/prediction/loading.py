"""The model to predict with: a SavedModel exported by bert_tf, or a checkpoint built in memory
into the same serving module, so both give their predictions from the same code.

`--model` may be
  * a SavedModel version folder (holding saved_model.pb), or an export_dir of numbered
    versions (the highest is used): its task, labels, casing and lengths come from
    assets.extra/export_info.json, written at export;
  * a checkpoint of any format bert_tf reads (a runner's output_dir or its best/ folder,
    a TF1 prefix, a native prefix, a HuggingFace folder), with bert_config.json / config.json
    and vocab.txt beside it unless given. Its task is read from the head it holds (a TF1 or
    native checkpoint; a HuggingFace config's `architectures`); the model is built as
    export_savedmodel.py builds it (bert_tf.serving.job) and wrapped in the serving module
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
from bert_tf.checkpoints.run_options import beside as _beside
from bert_tf.metrics.results import saved_threshold
from bert_tf.names import EXPORT_INFO, LABELS_FILE
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

    task_name: str = None            # a GLUE/XNLI name: labels, regression and pairs from it
    bert_config_file: str = None
    vocab_file: str = None
    do_lower_case: bool = None       # default True
    labels: list = None
    max_seq_length: int = None       # default 384 for SQuAD (run_squad), else 128
    max_query_length: int = None     # default 64
    max_answer_length: int = None    # default 30
    window_pooling: str = None       # with --doc_stride windows (classifier, regression,
    max_windows: int = None          # multi_label): default mean, 0 (all windows)
    multi_label_threshold: float = None   # multi_label: default the `threshold` of the
                                          # eval_results.txt beside the checkpoint, else 0.5

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
        self.task = info["task"]
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
def saved_model_version(path):
    """The SavedModel folder `path` names (itself, or its highest numeric version holding
    saved_model.pb), or None when it names none."""
    import tensorflow as tf
    path = str(path).rstrip("/") if fileio.is_url(path) else os.fspath(path)
    if fileio.exists(os.path.join(path, "saved_model.pb")):
        return path
    if not fileio.isdir(path):
        return None
    versions = sorted((int(n.rstrip("/")) for n in tf.io.gfile.listdir(path)
                       if n.rstrip("/").isdigit()), reverse=True)
    for version in versions:
        candidate = os.path.join(path, str(version))
        if fileio.exists(os.path.join(candidate, "saved_model.pb")):
            return candidate
    return None


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
    _check_predictable(info.get("task"), f"--model {path}")
    logger.info("loading SavedModel %s (%s)", path, info["task"])
    loaded = tf.saved_model.load(path)
    signatures = dict(loaded.signatures)
    predictor = Predictor(info, os.path.join(path, "assets", names.VOCAB_ASSET), signatures,
                          f"SavedModel {path}")
    predictor._loaded = loaded          # keeps the functions' captured resources alive
    return predictor


def _check_predictable(task, where):
    if task in kinds.PREDICTED:
        return
    tool = kinds.KINDS[task].other_tool if task in kinds.KINDS else None
    if tool:
        raise InputError(f"{where} is a {task} model: use {tool} for it "
                         f"(bert_tf.predict serves {', '.join(kinds.PREDICTED)})")
    raise InputError(f"{where}: bert_tf.predict has no predictions for task {task!r} (it "
                     f"serves {', '.join(kinds.PREDICTED)})")


# --------------------------------------------------------------------------- checkpoints
def _head_of_names(shapes):
    """(task, output units) from google variable names -> shapes, or (None, None)."""
    for prefix, task in (("cls/squad/", "squad"), ("cls/token_classifier/", "tagger"),
                         ("cls/multiple_choice/", "multiple_choice"), ("", "classifier")):
        shape = shapes.get(f"{prefix}output_weights")
        if shape is not None:
            return task, int(shape[0])
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
        task, units = native_head_kind(location)
        task = task or "encoder"
    elif fmt == "tf1":
        task, units = _head_of_names(dict(tf.train.list_variables(location)))
        task = task or "encoder"
    else:
        task, units = _hf_head(location)
    if task == "classifier" and units == 1:
        task = "regression"
    return task, units, fmt, location


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


def _hf_labels(location, units):
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


def resolve_checkpoint(path, task, settings):
    """export_savedmodel.py's ExportOptions for the checkpoint at `path`, with the task (from
    --task / --task_name, else the checkpoint's head), config, vocabulary and labels found
    (build_predictor resolves them); raises InputError naming the flag to give when something
    cannot be found."""
    from bert_tf.config import BertConfig
    from bert_tf.serving.job import ExportOptions
    try:
        found, units, fmt, location = checkpoint_head(path)
    except FileNotFoundError as e:
        raise InputError(f"--model {path}: not a SavedModel (no saved_model.pb, no numbered "
                         f"version holding one) and not a checkpoint ({e})") from None
    where = f"--model {path} ({fmt} checkpoint)"
    if settings.task_name:
        from bert_tf.serving.job import task_of_name
        named = task_of_name(settings.task_name)
        if task not in (None, named):
            raise InputError(f"--task_name={settings.task_name} is a {named} task, but "
                             f"--task={task}")
        task = named
    if task is None:
        if found is None:
            raise InputError(f"{where}: cannot tell its task (its config.json names no "
                             f"BertFor... architecture): give --task (one of "
                             f"{', '.join(kinds.PREDICTED)})")
        if found == "encoder":
            raise InputError(f"{where} holds no task head, only an encoder: give --task if it "
                             f"is a fine-tuned model after all; for embeddings use "
                             f"extract_features.py")
        _check_predictable(found, where)
        task = found
        if task in ("classifier", "regression") and _multi_label_run(path):
            logger.info("%s: multi_label (the eval_results.txt beside it records a tuned "
                        "threshold, as run_classifier --multi_label writes it)", where)
            task = "multi_label"
    else:
        _check_predictable(task, "--task")
        heads = ("classifier", "regression") if task == "multi_label" else (task,)
        if found not in (None, "encoder") + heads:
            flag = "--task_name" if settings.task_name else "--task"
            raise InputError(f"{flag} makes it a {task} model, but {where} holds a {found} head"
                             + (f" ({units} output{'s' if units != 1 else ''})"
                                if units else ""))

    if settings.bert_config_file:
        config = BertConfig.from_json_file(settings.bert_config_file)
    else:
        from bert_tf.checkpoints import find_config
        try:
            config = find_config(location if fmt == "hf" else path)
        except FileNotFoundError:
            raise InputError(f"{where}: no bert_config.json or config.json beside it: give "
                             f"--bert_config_file") from None
    vocab_file = settings.vocab_file or _beside(location if fmt == "hf" else path,
                                                names.VOCAB_ASSET)
    if not vocab_file:
        raise InputError(f"{where}: no vocab.txt beside it: give --vocab_file")
    labels = settings.labels
    labelled = kinds.get(task).labelled
    if labelled and not labels and not settings.task_name:
        saved = _beside(path, LABELS_FILE)
        if saved:
            from bert_tf.data.classification.writers import read_label_list
            labels = read_label_list(saved)
            logger.info("labels from %s: %s", saved, " ".join(labels))
        elif fmt == "hf":
            labels = _hf_labels(location, units)
        if not labels:
            instead = {"classifier": f" or --task_name, or put run_classifier's {LABELS_FILE} "
                                     f"beside it",
                       "multi_label": f" (the run's --labels, else the sorted label set of its "
                                      f"training file), or put run_classifier's {LABELS_FILE} "
                                      f"beside it",
                       "tagger": f" or put run_ner's {LABELS_FILE} beside it"}[task]
            raise InputError(f"{where}: give --labels ({units or 'its'} label names in class-id "
                             f"order, comma-separated){instead}: the checkpoint does not "
                             f"record them")
    if labels and units and labelled and len(labels) != units:
        raise InputError(f"--labels: {len(labels)} labels {list(labels)}, but {where} has "
                         f"{units} classes")
    max_seq_length = settings.max_seq_length
    if max_seq_length is None:
        max_seq_length = min(384 if task == "squad" else 128, config.max_position_embeddings)
    opts = ExportOptions(
        export_dir="(in memory)", init_checkpoint=os.fspath(path), task=task,
        task_name=settings.task_name, config=config, vocab_file=vocab_file,
        do_lower_case=True if settings.do_lower_case is None else settings.do_lower_case,
        max_seq_length=max_seq_length, labels=list(labels) if labels else None,
        max_query_length=64 if settings.max_query_length is None else settings.max_query_length,
        max_answer_length=(30 if settings.max_answer_length is None
                           else settings.max_answer_length),
        window_pooling=settings.window_pooling or "mean", max_windows=settings.max_windows or 0,
        multi_label_threshold=settings.multi_label_threshold, warmup=False)
    return opts


def _multi_label_run(path):
    """Whether the eval_results.txt beside checkpoint `path` records a multi-label threshold."""
    try:
        return saved_threshold(os.fspath(path)) is not None
    except ValueError:                  # an eval_results.txt that does not parse
        return False


def build_predictor(opts, text_pair=None, num_choices=None, doc_stride=None):
    """Predictor of the checkpoint of `opts` (resolve_checkpoint's): the task model with its
    weights, wrapped in the serving module an export would save; its signature functions run
    in this process. text_pair: the classifier/regression/multi_label model takes pairs
    (default: from --task_name, else no); num_choices: endings per multiple-choice row;
    doc_stride: SQuAD's context windows (default 128), or a classifier's, regression's or
    multi_label's long-text windows (default none: truncate), as export_savedmodel.py's."""
    from bert_tf.serving.job import load_model, window_options
    from bert_tf.serving.module import ServingModule
    from bert_tf.serving.padding import length_buckets
    from bert_tf.serving.heads import make_head
    from bert_tf.tokenization import vocab as _vocab
    if opts.task_name is None or text_pair is not None:
        opts = dataclasses.replace(opts, text_pair=bool(text_pair))
    opts = dataclasses.replace(
        opts, doc_stride=doc_stride if opts.task in ("squad",) + kinds.WINDOWED else None,
        num_choices=num_choices or opts.num_choices).resolve()
    vocab = _vocab.Vocabulary.from_file(opts.vocab_file)
    if len(vocab) > opts.config.vocab_size:
        raise InputError(f"--vocab_file {opts.vocab_file}: {len(vocab)} tokens, more than the "
                         f"model's vocab_size ({opts.config.vocab_size}): wrong vocabulary for "
                         f"this model")
    model = load_model(opts)
    head = make_head(opts.task, model, vocab.id_to_token, opts.do_lower_case,
                     opts.max_seq_length, labels=opts.labels, text_pair=opts.text_pair,
                     max_query_length=opts.max_query_length,
                     max_answer_length=opts.max_answer_length,
                     doc_stride=opts.doc_stride if opts.task == "squad" else 128,
                     num_choices=opts.num_choices if opts.task == "multiple_choice" else None,
                     multi_label_threshold=opts.multi_label_threshold or 0.5,
                     **window_options(opts))
    # The length buckets bert_tf.serving.export uses.
    buckets = sorted(set(length_buckets(opts.max_seq_length))
                     | set(length_buckets(opts.config.max_position_embeddings)))
    module = ServingModule(head, opts.config, buckets)
    signatures = module.signatures(text=True)
    info = dict(head.info(), do_lower_case=bool(opts.do_lower_case),
                signatures=sorted(signatures))
    order = {names.SERVING_DEFAULT: [spec.name for spec in head.text_specs()],
             names.SERVE_FEATURES: list(names.FEATURE_KEYS)}
    predictor = Predictor(info, opts.vocab_file, signatures,
                          f"checkpoint {opts.init_checkpoint}", order)
    predictor._module = module       # keeps the model and tokenizer tables alive
    return predictor
