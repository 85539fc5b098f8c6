"""export_savedmodel.py's job: checkpoint + config + vocabulary + task -> a versioned SavedModel.

The checkpoint may be any format bert_tf reads (google-research TF1 prefix, HuggingFace
folder, native / trainer checkpoint); it must hold the task's head (only "encoder" exports a
bare encoder; "fill_mask" needs the masked-LM head of a pre-training checkpoint). GLUE/XNLI
task names fill in the labels, regression and text pairs.
"""

import dataclasses
import logging
import os

from bert_tf import kinds
from bert_tf.config import BertConfig
from bert_tf.jobs.options import EXPORT_HELP, ModelOptions
from bert_tf.kinds import SERVED, WINDOWED
from bert_tf.names import POOLING_MODES
from bert_tf.options import option, option_like
from bert_tf.serving.options import ExportSettings

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
    max_seq_length: int = option(128, "Sequence length of the raw-text and tf.Example "
                                 "signatures.")
    max_query_length: int = option(64, "SQuAD: question tokens kept.")
    max_answer_length: int = option(30, "SQuAD: longest answer, in WordPieces.")
    doc_stride: int = option(
        None, "SQuAD: distance between the starts of a long context's windows (default 128). "
        "Classifier, regression, multi_label, embedding: read a long first text in windows of "
        "--max_seq_length whose starts are this many WordPieces apart and combine their logits "
        "(embedding: their embeddings) (--window_pooling), as run_classifier --doc_stride "
        "(default: truncate).")
    window_pooling: str = option(
        "mean", "With --doc_stride (classifier, regression, multi_label, embedding): how the "
        "windows' logits (embeddings) combine.", choices=("mean", "max"))
    max_windows: int = option(
        0, "With --doc_stride (classifier, regression, multi_label, embedding): at most this "
        "many windows per text, from its start (0: all).")
    num_choices: int = option(4, "multiple_choice: endings per request row (SWAG: 4).")
    pooling: str = option(
        None, "embedding: how the last layer's token vectors become the text's embedding: mean "
        "or max over its tokens, cls (the first token's), mean_sqrt_len (their sum over the "
        "square root of their count) (default: the sentence-transformers folder's "
        "1_Pooling/config.json, else mean).", choices=POOLING_MODES)
    normalize: bool = option(
        None, "embedding: L2-normalise the embeddings (default: whether the "
        "sentence-transformers folder's modules.json lists a Normalize module, else no).")
    top_k: int = option(5, "fill_mask: predictions per [MASK].")
    include_special_tokens: bool = option(
        False, "fill_mask: also rank [PAD], [CLS], [SEP], [MASK], [UNK] and [unusedN].")
    version: int = option(None, "Version number (default: the next free one).")
    warmup: bool = option(True, "Write assets.extra/tf_serving_warmup_requests.")
    format: str = option("saved_model", EXPORT_HELP["format"],
                         choices=("saved_model", "litert", "mediapipe", "onnx"))
    precision: str = option(None, EXPORT_HELP["precision"],
                            choices=("fp32", "bf16", "int8", "int8_bf16", "fp16"))
    jit_compile: bool = option(False, EXPORT_HELP["jit_compile"])
    int8_smoothing: float = option(
        ExportSettings.int8_smoothing, "--format=litert or mediapipe with --precision=int8: "
        "move activation outliers into the weights before quantizing (SmoothQuant, this alpha "
        "in [0, 1]; 0: quantize the weights as they are); see docs/serving.md.")
    calibration_file: str = option(
        None, "With --int8_smoothing: text whose activations set the smoothing, one text per "
        "line, the first 256 used (e.g. the training texts; default: sentences of the Python "
        "standard library's docstrings).")
    text_signatures: bool = option(
        True, "Include serving_default (raw text; needs two TensorFlow Text ops, present in "
        "stock tensorflow_model_server). --notext_signatures exports only core-TensorFlow "
        "signatures.")

    def resolve(self):
        """A copy with task, labels, text_pair, config and vocab_file filled in; raises
        ValueError naming the flag at fault."""
        from bert_tf.checkpoints import find_config
        from bert_tf.jobs.checks import default_vocab_file
        from bert_tf.tokenization import validate_case_matches_checkpoint
        opts = dataclasses.replace(self)
        if not opts.export_dir:
            raise ValueError("--export_dir is required")
        if not opts.init_checkpoint:
            raise ValueError("--init_checkpoint is required (the fine-tuned checkpoint)")
        if opts.task_name:
            _apply_task_name(opts)
        if opts.task not in SERVED:
            raise ValueError(f"--task must be one of {', '.join(SERVED)} (or give --task_name), "
                             f"got {opts.task!r}")
        if kinds.get(opts.task).labelled and not opts.labels:
            raise ValueError(f"--task={opts.task} needs --labels (comma-separated, in class-id "
                             "order) or --task_name")
        if opts.task == "multiple_choice" and (opts.num_choices or 0) < 2:
            raise ValueError(f"--num_choices must be >= 2, got {opts.num_choices}")
        if opts.task == "fill_mask" and (opts.top_k or 0) < 1:
            raise ValueError(f"--top_k must be >= 1, got {opts.top_k}")
        from bert_tf.serving.exporter import check_export_options
        check_export_options(opts.format, opts.task, opts.precision, opts.jit_compile,
                             ("--format", "--precision", "--jit_compile"))
        _check_smoothing(opts)
        if opts.task == "squad":
            opts.doc_stride = 128 if opts.doc_stride is None else opts.doc_stride
            if opts.doc_stride < 1:
                raise ValueError(f"--doc_stride must be >= 1, got {opts.doc_stride}")
        if opts.task in WINDOWED:
            _check_windows(opts)
        elif opts.window_pooling != "mean" or opts.max_windows:
            raise ValueError(f"--window_pooling and --max_windows apply to tasks "
                             f"{', '.join(WINDOWED)} (with --doc_stride), not {opts.task}")
        opts.text_pair = bool(opts.text_pair)
        _resolve_pooling(opts)
        if opts.multi_label_threshold is not None:
            if opts.task != "multi_label":
                raise ValueError(f"--multi_label_threshold applies to --task=multi_label, not "
                                 f"{opts.task}")
            if not 0.0 < opts.multi_label_threshold < 1.0:
                raise ValueError(f"--multi_label_threshold must be in (0, 1), got "
                                 f"{opts.multi_label_threshold}")
        if opts.task == "multi_label" and opts.multi_label_threshold is None:
            from bert_tf.metrics.results import saved_threshold
            opts.multi_label_threshold = saved_threshold(opts.init_checkpoint)
            if opts.multi_label_threshold is not None:
                logger.info("--multi_label_threshold=%g: the tuned threshold in the "
                            "eval_results.txt beside --init_checkpoint",
                            opts.multi_label_threshold)
            else:
                opts.multi_label_threshold = 0.5
        if opts.config is None:
            opts.config = find_config(opts.init_checkpoint)
        opts.vocab_file = opts.vocab_file or default_vocab_file(opts.init_checkpoint)
        if not opts.vocab_file:
            raise ValueError("--vocab_file is required (no vocab.txt beside --init_checkpoint)")
        if not os.path.exists(opts.vocab_file):
            raise ValueError(f"--vocab_file={opts.vocab_file} does not exist")
        if opts.max_seq_length > opts.config.max_position_embeddings:
            raise ValueError(f"Cannot use sequence length {opts.max_seq_length} because the BERT "
                             f"model was only trained up to sequence length "
                             f"{opts.config.max_position_embeddings}")
        validate_case_matches_checkpoint(opts.do_lower_case, opts.init_checkpoint)
        if opts.warmup and opts.format == "saved_model":
            from bert_tf.serving.warmup import require_serving_api
            require_serving_api("--warmup")
        return opts


def with_recorded_settings(opts, given):
    """opts with the input settings not `given` (flag names) taken from the run_options.json
    beside opts.init_checkpoint (a fine-tuning run's output_dir or best/) when that run
    trained the task exported, logged."""
    from bert_tf.checkpoints.run_options import (SETTINGS, WINDOW_SETTINGS, read_run_options,
                                                 settings_from_run)
    if not opts.init_checkpoint:
        return opts
    task = opts.task
    if task is None and opts.task_name:
        try:
            task = task_of_name(opts.task_name)
        except ValueError:
            return opts                     # resolve() names the bad --task_name
    names = SETTINGS + WINDOW_SETTINGS + ("doc_stride",)
    record = read_run_options(opts.init_checkpoint)
    taken = settings_from_run(record, {name: getattr(opts, name) for name in names
                                       if name in given}, task)
    return dataclasses.replace(opts, **taken)


def _check_windows(opts):
    """Long-text windows of a classifier, regression or multi_label export: run_classifier's
    rules for --doc_stride, --window_pooling and --max_windows (0 / None: truncate)."""
    from bert_tf.tokenization.windows import check_window_options
    opts.doc_stride, opts.max_windows = opts.doc_stride or 0, opts.max_windows or 0
    given = [flag for flag, set_ in (("--window_pooling", opts.window_pooling != "mean"),
                                     ("--max_windows", bool(opts.max_windows))) if set_]
    check_window_options(opts.doc_stride, opts.window_pooling, opts.max_windows,
                         opts.max_seq_length, given)


def _resolve_pooling(opts):
    """An embedding export's --pooling and --normalize: as given, else the
    sentence-transformers folder's (bert_tf.checkpoints.sentence_transformers)."""
    if opts.task != "embedding":
        given = [f"--{name}" for name in ("pooling", "normalize")
                 if getattr(opts, name) is not None]
        if given:
            raise ValueError(f"{', '.join(given)}: for --task=embedding, not {opts.task}")
        return
    from bert_tf.checkpoints.sentence_transformers import resolve_pooling
    path = opts.init_checkpoint
    pooling = resolve_pooling(path if os.path.isdir(path) else os.path.dirname(path),
                              opts.pooling, opts.normalize)
    opts.pooling, opts.normalize = pooling.mode, pooling.normalize
    logger.info("embedding: %s pooling%s", pooling.mode,
                ", L2-normalised" if pooling.normalize else "")


def task_of_name(task_name):
    """The serving task of a GLUE/XNLI task name: regression or classifier (ValueError for an
    unknown name)."""
    from bert_tf.data.classification.tasks import get_task_info
    return "regression" if get_task_info(task_name).is_regression else "classifier"


def _apply_task_name(opts):
    from bert_tf.data.classification.tasks import (SINGLE_TEXT_TASKS, canonical_task_name,
                                                   get_task_info)
    info = get_task_info(opts.task_name)
    kind = task_of_name(opts.task_name)
    if opts.task not in (None, kind):
        raise ValueError(f"--task_name={opts.task_name} is a {kind} task, but --task={opts.task}")
    if opts.labels and list(opts.labels) != list(info.labels):
        raise ValueError(f"--labels {list(opts.labels)} contradict --task_name="
                         f"{opts.task_name} (labels {list(info.labels)})")
    opts.task = kind
    opts.labels = list(info.labels) or None
    if opts.text_pair is None:
        opts.text_pair = canonical_task_name(opts.task_name) not in SINGLE_TEXT_TASKS


def build_model(opts):
    """The task model of opts (resolved), before its weights are loaded (fill_mask: see
    load_model): the model class of its kind, with one unit per label (a regression: one)."""
    from bert_tf.model import BertEncoder
    kind = kinds.get(opts.task)
    encoder = BertEncoder(opts.config)
    if opts.task == "encoder":
        return encoder
    if opts.task == "embedding":
        return kind.load("model")(encoder, opts.pooling, opts.normalize)
    model_class = kind.load("model")
    if opts.task == "regression":
        return model_class(encoder, 1)
    if kind.labelled:
        return model_class(encoder, len(opts.labels))
    return model_class(encoder)


def load_model(opts):
    """The task model of opts (resolved) with the checkpoint's weights; raises when the
    checkpoint lacks the task's head (fill_mask: MissingHeadError, as predict_masked.py)."""
    from bert_tf.checkpoints import load_weights
    if opts.task == "fill_mask":
        from bert_tf.jobs.fill_mask import load_masked_lm
        return load_masked_lm(opts.config, opts.init_checkpoint)   # the NSP head is optional
    model = build_model(opts)
    report = load_weights(model, opts.init_checkpoint,
                          require_heads=opts.task not in ("encoder", "embedding"))
    logger.info("init_checkpoint: %s", report.summary())
    return model


def head_options(opts):
    """The serving head's options (bert_tf.serving.options.HeadOptions) of resolved `opts`:
    the one place the export runner, its --export_dir callers and checkpoint prediction build
    them."""
    from bert_tf.serving.options import HeadOptions
    windows = ({} if opts.task not in WINDOWED or not opts.doc_stride else dict(
        window_stride=opts.doc_stride, window_pooling=opts.window_pooling,
        max_windows=opts.max_windows))
    return HeadOptions(
        labels=opts.labels, text_pair=opts.text_pair, max_query_length=opts.max_query_length,
        max_answer_length=opts.max_answer_length,
        doc_stride=opts.doc_stride if opts.task == "squad" else 128,
        num_choices=opts.num_choices if opts.task == "multiple_choice" else None,
        top_k=opts.top_k, include_special_tokens=opts.include_special_tokens,
        multi_label_threshold=opts.multi_label_threshold or 0.5, **windows)


def run(opts):
    """Loads the checkpoint into the task model and exports it; returns the version path."""
    from bert_tf.serving.exporter import export
    opts = opts.resolve()
    model = load_model(opts)
    return export(model, opts.task, opts.export_dir, opts.vocab_file, opts.do_lower_case,
                  opts.max_seq_length, head_options(opts),
                  ExportSettings(format=opts.format, precision=opts.precision,
                                 jit_compile=opts.jit_compile,
                                 version=opts.version, warmup=opts.warmup,
                                 text_signatures=opts.text_signatures,
                                 int8_smoothing=opts.int8_smoothing,
                                 calibration_file=opts.calibration_file))


def _check_smoothing(opts):
    if not 0.0 <= opts.int8_smoothing <= 1.0:
        raise ValueError(f"--int8_smoothing must be in [0, 1], got {opts.int8_smoothing}")
    if opts.calibration_file is None:
        return
    if opts.format not in ("litert", "mediapipe") or opts.precision != "int8" or not (
            opts.int8_smoothing):
        raise ValueError("--calibration_file applies to --precision=int8 with --format=litert "
                         "or mediapipe (and --int8_smoothing > 0)")
    if not os.path.isfile(opts.calibration_file):
        raise ValueError(f"--calibration_file {opts.calibration_file}: no such file")
