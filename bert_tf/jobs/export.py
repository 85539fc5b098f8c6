"""export_savedmodel.py's job: checkpoint + config + vocabulary + InferenceContract -> a
versioned SavedModel (or a LiteRT, MediaPipe or ONNX export).

The checkpoint may be any format bert_tf reads (google-research TF1 prefix, HuggingFace
folder, native / trainer checkpoint); it must hold its kind's head (only "encoder" and
"embedding" export a bare encoder; "fill_mask" needs the masked-LM head of a pre-training
checkpoint). The model's contract is the one its run recorded beside it (bert_tf.contract),
under the flags given; GLUE/XNLI task names give the labels, regression and text pairs.
"""

import dataclasses
import logging
import os

from bert_tf import contract as _contract
from bert_tf import kinds
from bert_tf.config import BertConfig
from bert_tf.jobs.options import EXPORT_HELP, ModelOptions
from bert_tf.kinds import SERVED, WINDOWED
from bert_tf.names import POOLING_MODES
from bert_tf.options import field_default, option, option_like
from bert_tf.serving.options import EXPORT_PRECISIONS, FORMATS, ExportSettings

logger = logging.getLogger("bert_tf")


@dataclasses.dataclass(kw_only=True)
class ExportOptions:
    """What to export; every field but config is a flag of export_savedmodel.py."""

    export_dir: str = option(
        None, "Folder of numbered versions (TF Serving's --model_base_path); the export "
        "becomes its next version.", required=True)
    init_checkpoint: str = option_like(ModelOptions, "init_checkpoint", required=True)
    task: str = option(None, "What the model does (optional with --task_name).", choices=SERVED)
    task_name: str = option(None, "A GLUE/XNLI task name (MRPC, STS-B, ...): sets --task, "
                            "--labels and --text_pair.")
    config: BertConfig = None        # default: bert_config.json / config.json beside the ckpt
    labels: list = option(None, "Label strings in class-id order (classifier, tagger, "
                          "multi_label).")
    multi_label_threshold: float = option(
        None, "multi_label: a label is selected when its probability is >= this (default: the "
        "tuned threshold in the eval_results.txt beside --init_checkpoint, as run_classifier "
        "--multi_label writes it, else 0.5).")
    text_pair: bool = option(None, "serving_default takes text_a and text_b (default: from "
                             "--task_name, else single text).")
    vocab_file: str = option(None, "The model's vocab.txt (default: vocab.txt beside "
                             "--init_checkpoint).")
    do_lower_case: bool = option(True, "Whether the model is uncased.")
    max_seq_length: int = option(_contract.MAX_SEQ_LENGTH, "Sequence length of the raw-text and "
                                 "tf.Example signatures.")
    max_query_length: int = option(_contract.MAX_QUERY_LENGTH, "SQuAD: question tokens kept.")
    max_answer_length: int = option(_contract.MAX_ANSWER_LENGTH,
                                    "SQuAD: longest answer, in WordPieces.")
    doc_stride: int = option(
        None, "SQuAD: distance between the starts of a long context's windows (default 128). "
        "Classifier, regression, multi_label, embedding: read a long first text in windows of "
        "--max_seq_length whose starts are this many WordPieces apart and combine their logits "
        "(embedding: their embeddings) (--window_pooling), as run_classifier --doc_stride "
        "(default: truncate).")
    window_pooling: str = option(
        "mean", "With --doc_stride (classifier, regression, multi_label, embedding): how the "
        "windows' logits (embeddings) combine.", choices=_contract.WINDOW_POOLINGS)
    max_windows: int = option(
        0, "With --doc_stride (classifier, regression, multi_label, embedding): at most this "
        "many windows per text, from its start (0: all).")
    num_choices: int = option(_contract.NUM_CHOICES,
                              "multiple_choice: endings per request row (SWAG: 4).")
    pooling: str = option(
        None, "embedding: how the last layer's token vectors become the text's embedding: mean "
        "or max over its tokens, cls (the first token's), mean_sqrt_len (their sum over the "
        "square root of their count) (default: the sentence-transformers folder's "
        "1_Pooling/config.json, else mean).", choices=POOLING_MODES)
    normalize: bool = option(
        None, "embedding: L2-normalise the embeddings (default: whether the "
        "sentence-transformers folder's modules.json lists a Normalize module, else no).")
    top_k: int = option(_contract.TOP_K, "fill_mask: predictions per [MASK].")
    include_special_tokens: bool = option(
        False, "fill_mask: also rank [PAD], [CLS], [SEP], [MASK], [UNK] and [unusedN].")
    version: int = option(None, "Version number (default: the next free one).")
    warmup: bool = option(True, "Write assets.extra/tf_serving_warmup_requests.")
    format: str = option("saved_model", EXPORT_HELP["format"], choices=FORMATS)
    precision: str = option(None, EXPORT_HELP["precision"], choices=EXPORT_PRECISIONS)
    jit_compile: bool = option(False, EXPORT_HELP["jit_compile"])
    int8_smoothing: float = option(ExportSettings.int8_smoothing, EXPORT_HELP["int8_smoothing"])
    calibration_file: str = option(None, EXPORT_HELP["calibration_file"])
    text_signatures: bool = option(
        True, "Include serving_default (raw text; needs two TensorFlow Text ops, present in "
        "stock tensorflow_model_server). --notext_signatures exports only core-TensorFlow "
        "signatures.")

    def resolve(self, given=None):
        """The checked Plan of these options (bert_tf.jobs.export.plan)."""
        return plan(self, given)

    def export_settings(self):
        """How the export is written (bert_tf.serving.options.ExportSettings)."""
        return ExportSettings(format=self.format, precision=self.precision,
                              jit_compile=self.jit_compile, version=self.version,
                              warmup=self.warmup, text_signatures=self.text_signatures,
                              int8_smoothing=self.int8_smoothing,
                              calibration_file=self.calibration_file)


# The contract fields export_savedmodel.py's flags give, by flag name; --task is the kind and
# --doc_stride SQuAD's doc_stride or another kind's window_stride.
CONTRACT_FLAGS = ("task", "labels", "text_pair", "do_lower_case", "max_seq_length",
                  "max_query_length", "max_answer_length", "doc_stride", "window_pooling",
                  "max_windows", "num_choices", "pooling", "normalize", "top_k",
                  "include_special_tokens", "multi_label_threshold")


@dataclasses.dataclass(frozen=True)
class Plan:
    """A checked export: the model's contract, where its weights, config and vocabulary are,
    and how the export is written."""

    contract: _contract.InferenceContract
    init_checkpoint: str
    config: BertConfig
    vocab_file: str
    settings: ExportSettings


def given_flags(opts, given=None):
    """{field of the contract: value} of the contract flags given: `given` (flag names given on
    the command line), or for a caller of the Python API the fields not at their default."""
    fields = {f.name: f for f in dataclasses.fields(opts)}
    if given is None:
        given = [n for n in CONTRACT_FLAGS
                 if getattr(opts, n) != field_default(fields[n])]
    return {n: getattr(opts, n) for n in CONTRACT_FLAGS if n in given}


def plan(opts, given=None):
    """The Plan of `opts` (ExportOptions) with the flags in `given` (None: the non-default
    ones): the contract recorded beside --init_checkpoint under the flags given; raises
    ValueError naming the flag at fault."""
    from bert_tf.checkpoints import find_config
    if not opts.export_dir:
        raise ValueError("--export_dir is required")
    if not opts.init_checkpoint:
        raise ValueError("--init_checkpoint is required (the fine-tuned checkpoint)")
    settings = opts.export_settings()
    # A multiple-choice model's endings per row: the flag's default (SWAG's 4) where neither
    # the command line nor the run gives them.
    contract = contract_of_flags(opts.init_checkpoint, given_flags(opts, given), opts.task_name,
                                 unset={"num_choices": opts.num_choices})
    check_settings(settings, contract.kind)
    config = opts.config or find_config(opts.init_checkpoint)
    vocab_file = _vocab_file(opts)
    if contract.max_seq_length > config.max_position_embeddings:
        raise ValueError(f"Cannot use sequence length {contract.max_seq_length} because the "
                         f"BERT model was only trained up to sequence length "
                         f"{config.max_position_embeddings}")
    from bert_tf.tokenization import validate_case_matches_checkpoint
    validate_case_matches_checkpoint(contract.do_lower_case, opts.init_checkpoint)
    if settings.warmup and settings.format == "saved_model":
        from bert_tf.serving.warmup import require_serving_api
        require_serving_api("--warmup")
    return Plan(contract, opts.init_checkpoint, config, vocab_file, settings)


def contract_of_flags(init_checkpoint, given, task_name=None, unset=None):
    """The contract of the model at `init_checkpoint`: `given` ({flag: value} of the contract
    flags given) and --task_name over what its run recorded, and `unset` ({field: value}) for
    the fields still None; checked for its kind."""
    given = dict(given)
    kind = given.pop("task", None)
    if task_name:
        kind = _apply_task_name(task_name, kind, given)
    recorded = _contract.read(init_checkpoint)
    kind = kind or (recorded.kinds[0] if recorded else None)
    if kind not in SERVED:
        raise ValueError(f"--task must be one of {', '.join(SERVED)} (or give --task_name), got "
                         f"{kind!r}")
    fields = _contract_fields(kind, given)
    fields.update(_pooling_found(kind, init_checkpoint, recorded, fields))
    contract = _contract.resolve(recorded, kind, fields, {"kind": "--task",
                                                          "window_stride": "--doc_stride"})
    contract = contract.replace(**{name: value for name, value in (unset or {}).items()
                                   if name in contract.spec.settings
                                   and getattr(contract, name) is None})
    check_contract(contract, [f"--{n}" for n in given])
    return contract


# Flags that apply to some kinds only, and how their refusal reads.
_FOR_KINDS = (
    (("pooling", "normalize"), "{flags}: for --task=embedding, not {kind}"),
    (("window_pooling", "max_windows"), "--window_pooling and --max_windows apply to tasks "
                                        "{windowed} (with --doc_stride), not {kind}"),
    (("multi_label_threshold",), "--multi_label_threshold applies to --task=multi_label, not "
                                 "{kind}"),
)


def _contract_fields(kind, given):
    """The contract fields of the flags given for a `kind` model (--doc_stride is SQuAD's
    doc_stride, or the long-text windows' window_stride); ValueError for a flag that does not
    apply to the kind."""
    spec = kinds.get(kind)
    fields = {}
    for flag, value in given.items():
        name = flag
        if flag == "doc_stride" and "doc_stride" not in spec.settings:
            name = "window_stride"
        if name in ("do_lower_case", "max_seq_length") or name in spec.settings:
            fields[name] = value
            continue
        for group, message in _FOR_KINDS:
            if flag in group:
                flags = ", ".join(f"--{f}" for f in group if f in given)
                raise ValueError(message.format(flags=flags, kind=kind,
                                                windowed=", ".join(WINDOWED)))
        users = [k for k, s in kinds.KINDS.items() if name in s.settings and k in SERVED]
        raise ValueError(f"--{flag} applies to {', '.join(users)} models, not {kind}")
    return fields


def check_contract(contract, flags=()):
    """Raises ValueError (naming the flag) where the contract cannot be served: labels
    missing, counts out of range, windows that do not fit."""
    spec = contract.spec
    if spec.labelled and not contract.labels:
        raise ValueError(f"--task={contract.kind} needs --labels (comma-separated, in class-id "
                         "order) or --task_name")
    if "num_choices" in spec.settings and (contract.num_choices or 0) < 2:
        raise ValueError(f"--num_choices must be >= 2, got {contract.num_choices}")
    if "top_k" in spec.settings and contract.top_k < 1:
        raise ValueError(f"--top_k must be >= 1, got {contract.top_k}")
    if "doc_stride" in spec.settings and contract.doc_stride < 1:
        raise ValueError(f"--doc_stride must be >= 1, got {contract.doc_stride}")
    if spec.windows:
        from bert_tf.tokenization.windows import check_window_options
        check_window_options(contract.window_stride, contract.window_pooling,
                             contract.max_windows, contract.max_seq_length,
                             [f for f in flags if f in ("--window_pooling", "--max_windows")])
    if not 0.0 < contract.multi_label_threshold < 1.0:
        raise ValueError(f"--multi_label_threshold must be in (0, 1), got "
                         f"{contract.multi_label_threshold}")


def _pooling_found(kind, init_checkpoint, recorded, fields):
    """An embedding's pooling and normalisation that neither a flag nor the run gives: the
    sentence-transformers folder's (bert_tf.checkpoints.sentence_transformers), logged."""
    missing = [n for n in ("pooling", "normalize") if n in kinds.get(kind).settings
               and n not in fields and (recorded is None or n not in recorded.known)]
    if not missing:
        return {}
    from bert_tf.checkpoints.sentence_transformers import resolve_pooling
    path = os.fspath(init_checkpoint)
    pooling = resolve_pooling(path if os.path.isdir(path) else os.path.dirname(path))
    found = {"pooling": pooling.mode, "normalize": pooling.normalize}
    logger.info("embedding: %s pooling%s", pooling.mode,
                ", L2-normalised" if pooling.normalize else "")
    return {n: found[n] for n in missing}


def _vocab_file(opts):
    from bert_tf.jobs.checks import default_vocab_file
    vocab_file = opts.vocab_file or default_vocab_file(opts.init_checkpoint)
    if not vocab_file:
        raise ValueError("--vocab_file is required (no vocab.txt beside --init_checkpoint)")
    if not os.path.exists(vocab_file):
        raise ValueError(f"--vocab_file={vocab_file} does not exist")
    return vocab_file


def task_of_name(task_name):
    """The kind of a GLUE/XNLI task name: regression or classifier (ValueError for an unknown
    name)."""
    from bert_tf.data.classification.tasks import get_task_info
    return "regression" if get_task_info(task_name).is_regression else "classifier"


def _apply_task_name(task_name, kind, given):
    """The kind --task_name names (checked against --task), its labels and text pairs added to
    `given` (checked against --labels)."""
    from bert_tf.data.classification.tasks import (SINGLE_TEXT_TASKS, canonical_task_name,
                                                   get_task_info)
    info = get_task_info(task_name)
    named = task_of_name(task_name)
    if kind not in (None, named):
        raise ValueError(f"--task_name={task_name} is a {named} task, but --task={kind}")
    if given.get("labels") and list(given["labels"]) != list(info.labels):
        raise ValueError(f"--labels {list(given['labels'])} contradict --task_name="
                         f"{task_name} (labels {list(info.labels)})")
    if info.labels:
        given["labels"] = list(info.labels)
    given.setdefault("text_pair", canonical_task_name(task_name) not in SINGLE_TEXT_TASKS)
    return named


def load_model(plan_):
    """The model of the plan's kind with the checkpoint's weights; raises when the checkpoint
    lacks the kind's head (fill_mask: MissingHeadError, as predict_masked.py)."""
    from bert_tf.checkpoints import load_weights
    from bert_tf.model import BertEncoder
    spec = plan_.contract.spec
    if spec.loader:
        return kinds._resolve(spec.loader)(plan_.config, plan_.init_checkpoint)
    model = spec.build_model(BertEncoder(plan_.config), plan_.contract)
    report = load_weights(model, plan_.init_checkpoint,
                          require_heads=spec.head_layer is not None)
    logger.info("init_checkpoint: %s", report.summary())
    return model


def run(opts, given=None):
    """Plans the export (`given`: the flags given on the command line; None: the options not at
    their default), loads the checkpoint into its model and exports it; returns the version
    path."""
    from bert_tf.serving.exporter import export
    planned = plan(opts, given)
    contract = planned.contract
    return export(load_model(planned), contract.kind, opts.export_dir, planned.vocab_file,
                  contract.do_lower_case, contract.max_seq_length, contract, planned.settings)


def check_settings(settings, kind, prefix="--"):
    """Raises ValueError naming the flag (`prefix` + field name: --format, or the training
    runners' --export_format) where the ExportSettings do not fit together or the kind."""
    from bert_tf.serving.exporter import check_export_options
    flag = {f: f"{prefix}{f}" for f in ("format", "precision", "jit_compile", "int8_smoothing",
                                        "calibration_file")}
    check_export_options(settings.format, kind, settings.precision, settings.jit_compile,
                         (flag["format"], flag["precision"], flag["jit_compile"]))
    if not 0.0 <= settings.int8_smoothing <= 1.0:
        raise ValueError(f"{flag['int8_smoothing']} must be in [0, 1], got "
                         f"{settings.int8_smoothing}")
    if settings.calibration_file is None:
        return
    precision, fmt = settings.precision, settings.format
    if not (precision == "int8" and (
            fmt == "openvino" or fmt in ("litert", "mediapipe") and settings.int8_smoothing)):
        raise ValueError(f"{flag['calibration_file']} applies to {flag['precision']}=int8 with "
                         f"{flag['format']}=openvino, or litert or mediapipe with "
                         f"{flag['int8_smoothing']} > 0")
    if not os.path.isfile(settings.calibration_file):
        raise ValueError(f"{flag['calibration_file']} {settings.calibration_file}: no such file")
