"""A checkpoint as bert_tf.predict reads it: its kind (from --task / --task_name, else the head
it holds), its InferenceContract (what its run recorded beside it, under the flags given, as
export_savedmodel.py reads it: bert_tf.jobs.export), and the model built from them into the
serving module an export would save, whose signature functions then run in this process
(bert_tf.prediction.loading.Predictor)."""

import dataclasses
import logging
import os

from bert_tf import contract as _contract
from bert_tf import kinds, names
from bert_tf.contract import beside
from bert_tf.jobs.export import Plan, contract_of_flags, load_model, task_of_name
from bert_tf.names import LABELS_FILE
from bert_tf.prediction.inputs import InputError
from bert_tf.prediction.loading import Predictor, check_predictable, checkpoint_head, hf_labels

logger = logging.getLogger("bert_tf")


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A checkpoint to predict with: its path, the kind to read it as, and what its head and
    format say (checkpoint_head)."""

    path: str
    kind: str
    units: int
    format: str
    location: str

    @property
    def where(self):
        return f"--model {self.path} ({self.format} checkpoint)"

    @property
    def source(self):
        """Where its config, vocabulary and sentence-transformers files are."""
        return self.location if self.format == "hf" else self.path


def checkpoint_kind(path, kind=None, task_name=None):
    """The Checkpoint at `path` and the kind to read it as: --task_name's or --task (checked
    against the head it holds), else the kind its run recorded, else its head's. Raises
    InputError naming the flag to give."""
    found, units, fmt, location = _head(path)
    checkpoint = Checkpoint(os.fspath(path), None, units, fmt, location)
    kind = _kind(path, kind, task_name, found, units, checkpoint.where, checkpoint.source)
    return dataclasses.replace(checkpoint, kind=kind)


def checkpoint_plan(checkpoint, settings, doc_stride=None, text_pair=None, num_choices=None):
    """The Plan (bert_tf.jobs.export) for predicting with `checkpoint` (checkpoint_kind's): its
    config, vocabulary and contract. `settings` are the checkpoint flags
    (loading.CheckpointSettings); doc_stride: --doc_stride (SQuAD's windows, or the long-text
    windows of a windowed kind; None: the run's); text_pair, num_choices: what the rows need
    where the run did not record it. Raises InputError naming the flag to give."""
    kind, path = checkpoint.kind, checkpoint.path
    given = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
             if getattr(settings, f.name) is not None
             and f.name not in ("task_name", "bert_config_file", "vocab_file")}
    given["task"] = kind
    spec = kinds.get(kind)
    if doc_stride is not None and ("doc_stride" in spec.settings or spec.windows):
        given["doc_stride"] = doc_stride
    recorded = recorded_contract(path)
    known = recorded.known if recorded else frozenset()
    if "labels" in spec.settings and "labels" not in known and "labels" not in given:
        given.update(_labels(settings, checkpoint))
    if text_pair is not None and spec.pairs and "text_pair" not in known:
        given["text_pair"] = text_pair
    if num_choices and "num_choices" in spec.settings:
        given["num_choices"] = num_choices
    if "max_seq_length" not in given and "max_seq_length" not in known:
        given["max_seq_length"] = spec.max_seq_length or _contract.MAX_SEQ_LENGTH
    try:
        contract = contract_of_flags(path, given, settings.task_name)
    except ValueError as e:
        raise InputError(str(e)) from None
    config = _config(settings, checkpoint)
    if "max_seq_length" not in known and not settings.max_seq_length:
        contract = contract.replace(max_seq_length=min(contract.max_seq_length,
                                                       config.max_position_embeddings))
    return Plan(contract, path, config, _vocab_file(settings, checkpoint), None)


def recorded_contract(path):
    """bert_tf.contract.read(path), with a file that is not what bert_tf wrote reported as
    bad input."""
    try:
        return _contract.read(path)
    except ValueError as e:
        raise InputError(str(e)) from None


def _head(path):
    try:
        return checkpoint_head(path)
    except FileNotFoundError as e:
        raise InputError(f"--model {path}: not a SavedModel (no saved_model.pb, no numbered "
                         f"version holding one) and not a checkpoint ({e})") from None


def _kind(path, kind, task_name, found, units, where, source):
    """The kind to read the checkpoint as: --task_name's or --task, checked against the head
    the checkpoint holds; else the recorded kind; else the head's."""
    if task_name:
        named = task_of_name(task_name)
        if kind not in (None, named):
            raise InputError(f"--task_name={task_name} is a {named} task, but --task={kind}")
        kind = named
    if kind is not None:
        check_predictable(kind, "--task")
        model = kinds.get(kind).model
        heads = [k for k, spec in kinds.KINDS.items() if spec.head_layer and spec.model == model]
        if found not in (None, "encoder", *heads):
            flag = "--task_name" if task_name else "--task"
            raise InputError(f"{flag} makes it a {kind} model, but {where} holds a {found} head"
                             + (f" ({units} output{'s' if units != 1 else ''})"
                                if units else ""))
        return kind
    recorded = recorded_contract(path)
    # inference.json names the kind; a run before it did when it tuned a multi-label threshold.
    if recorded is not None and (len(recorded.kinds) == 1
                                 or "multi_label_threshold" in recorded.known):
        kind = recorded.kinds[0]
        logger.info("%s: a %s model (%s)", where, kind, recorded.path)
    else:
        kind = _kind_of_head(found, where, source)
    check_predictable(kind, where)
    return kind


def _kind_of_head(found, where, source):
    if found is None:
        raise InputError(f"{where}: cannot tell its task (its config.json names no BertFor... "
                         f"architecture): give --task (one of {', '.join(kinds.PREDICTED)})")
    if found == "encoder" and _sentence_transformers(source):
        return "embedding"
    if found == "encoder":
        raise InputError(f"{where} holds no task head, only an encoder: give --task if it is a "
                         f"fine-tuned model after all (--task=embedding for sentence "
                         f"embeddings); for per-token vectors use extract_features.py")
    return found


def _labels(settings, checkpoint):
    """{"labels": ...} for a labelled kind whose run recorded none: a HuggingFace config's
    id2label, or an InputError naming the flag to give."""
    kind, units, where = checkpoint.kind, checkpoint.units, checkpoint.where
    labels = (hf_labels(checkpoint.location, units) if checkpoint.format == "hf" else None)
    if labels:
        return {"labels": labels}
    if settings.task_name:
        return {}
    instead = {"classifier": f" or --task_name, or put run_classifier's {LABELS_FILE} beside "
                             f"it",
               "multi_label": f" (the run's --labels, else the sorted label set of its "
                              f"training file), or put run_classifier's {LABELS_FILE} beside "
                              f"it",
               "tagger": f" or put run_ner's {LABELS_FILE} beside it"}.get(kind, "")
    raise InputError(f"{where}: give --labels ({units or 'its'} label names in class-id "
                     f"order, comma-separated){instead}: the checkpoint does not record them")


def _config(settings, checkpoint):
    from bert_tf.config import BertConfig
    source, where = checkpoint.source, checkpoint.where
    if settings.bert_config_file:
        return BertConfig.from_json_file(settings.bert_config_file)
    from bert_tf.checkpoints import find_config
    try:
        return find_config(source)
    except FileNotFoundError:
        raise InputError(f"{where}: no bert_config.json or config.json beside it: give "
                         f"--bert_config_file") from None


def _vocab_file(settings, checkpoint):
    source, where = checkpoint.source, checkpoint.where
    vocab_file = settings.vocab_file or beside(source, names.VOCAB_ASSET)
    if not vocab_file:
        raise InputError(f"{where}: no vocab.txt beside it: give --vocab_file")
    return vocab_file


def _sentence_transformers(location):
    """Whether `location` (a folder, or a file in one) is a sentence-transformers model."""
    from bert_tf.checkpoints.sentence_transformers import MODULES_FILE
    folder = location if os.path.isdir(location) else os.path.dirname(location)
    return os.path.isfile(os.path.join(folder, MODULES_FILE))


def build_predictor(plan):
    """Predictor of the checkpoint of `plan` (checkpoint_plan's): the model with its weights,
    wrapped in the serving module an export would save; its signature functions run in this
    process."""
    from bert_tf.serving.exporter import length_buckets_of
    from bert_tf.serving.heads import make_head
    from bert_tf.serving.module import ServingModule
    from bert_tf.tokenization import vocab as _vocab
    contract = plan.contract
    vocab = _vocab.Vocabulary.from_file(plan.vocab_file)
    if len(vocab) > plan.config.vocab_size:
        raise InputError(f"--vocab_file {plan.vocab_file}: {len(vocab)} tokens, more than the "
                         f"model's vocab_size ({plan.config.vocab_size}): wrong vocabulary for "
                         f"this model")
    head = make_head(contract.kind, load_model(plan), vocab.id_to_token, contract.do_lower_case,
                     contract.max_seq_length, contract)
    # The length buckets bert_tf.serving.export uses with XLA.
    module = ServingModule(head, plan.config, length_buckets_of(contract, plan.config, True))
    signatures = module.signatures(text=True)
    info = dict(head.info(), do_lower_case=bool(contract.do_lower_case),
                signatures=sorted(signatures))
    if contract.spec.word_windows and contract.window_stride:
        info["window_stride"] = contract.window_stride      # bert_tf.predict's word windows
    order = {names.SERVING_DEFAULT: [spec.name for spec in head.text_specs()],
             names.SERVE_FEATURES: list(names.FEATURE_KEYS)}
    predictor = Predictor(info, plan.vocab_file, signatures,
                          f"checkpoint {plan.init_checkpoint}", order)
    predictor._module = module       # keeps the model and tokenizer tables alive
    return predictor
