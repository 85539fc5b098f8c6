"""export_savedmodel.py's job: checkpoint + config + vocabulary + task -> a versioned SavedModel.

The checkpoint may be any format bert_tf reads (google-research TF1 prefix, HuggingFace
folder, native / trainer checkpoint); it must hold the task's head (only "encoder" exports a
bare encoder; "fill_mask" needs the masked-LM head of a pre-training checkpoint). GLUE/XNLI
task names fill in the labels, regression and text pairs.
"""

import dataclasses
import logging
import os

from bert_tf.config import BertConfig
from bert_tf.kinds import SERVED, WINDOWED

logger = logging.getLogger("bert_tf")

# GLUE tasks with one text per example; every other named task classifies pairs.
SINGLE_TEXT_TASKS = ("cola", "sst-2")


@dataclasses.dataclass
class ExportOptions:
    export_dir: str
    init_checkpoint: str
    task: str = None                 # one of bert_tf.kinds.SERVED
    task_name: str = None            # a GLUE/XNLI name: labels, regression and pairs from it
    config: BertConfig = None        # default: bert_config.json / config.json beside the ckpt
    vocab_file: str = None           # default: vocab.txt beside the checkpoint
    do_lower_case: bool = True
    max_seq_length: int = 128
    labels: list = None
    text_pair: bool = None           # default: from task_name, else False
    max_query_length: int = 64
    max_answer_length: int = 30
    doc_stride: int = None           # squad: distance between the starts of context windows
                                     # (default 128); classifier, regression, multi_label:
                                     # long first texts read in windows this far apart, as
                                     # run_classifier --doc_stride (default 0: truncate)
    window_pooling: str = "mean"     # with windows: how their logits combine (mean, max)
    max_windows: int = 0             # with windows: at most this many per text (0: all)
    num_choices: int = 4             # multiple_choice: endings per request row
    top_k: int = 5                   # fill_mask: predictions per [MASK]
    include_special_tokens: bool = False   # fill_mask: may rank [PAD], [CLS], ...
    version: int = None
    warmup: bool = True
    text_signatures: bool = True
    precision: str = None            # "fp32" / "bf16" (bert_tf.serving.export's precision)
    jit_compile: bool = False        # XLA (server: --xla_cpu_compilation_enabled=true)
    multi_label_threshold: float = None   # multi_label: default the tuned "threshold" of the
                                          # eval_results.txt beside the checkpoint, else 0.5

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
        if opts.task in ("classifier", "tagger", "multi_label") and not opts.labels:
            raise ValueError(f"--task={opts.task} needs --labels (comma-separated, in class-id "
                             "order) or --task_name")
        if opts.task == "multiple_choice" and (opts.num_choices or 0) < 2:
            raise ValueError(f"--num_choices must be >= 2, got {opts.num_choices}")
        if opts.task == "fill_mask" and (opts.top_k or 0) < 1:
            raise ValueError(f"--top_k must be >= 1, got {opts.top_k}")
        from bert_tf.serving.exporter import check_compute_options
        check_compute_options(opts.task, opts.precision, opts.jit_compile,
                              ("--precision", "--jit_compile"))
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
        if opts.warmup:
            from bert_tf.serving.warmup import require_serving_api
            require_serving_api("--warmup")
        return opts


def _check_windows(opts):
    """Long-text windows of a classifier, regression or multi_label export: run_classifier's
    rules for --doc_stride, --window_pooling and --max_windows (0 / None: truncate)."""
    from bert_tf.tokenization.windows import check_window_options
    opts.doc_stride, opts.max_windows = opts.doc_stride or 0, opts.max_windows or 0
    given = [flag for flag, set_ in (("--window_pooling", opts.window_pooling != "mean"),
                                     ("--max_windows", bool(opts.max_windows))) if set_]
    check_window_options(opts.doc_stride, opts.window_pooling, opts.max_windows,
                         opts.max_seq_length, given)


def task_of_name(task_name):
    """The serving task of a GLUE/XNLI task name: regression or classifier (ValueError for an
    unknown name)."""
    from bert_tf.data.classification.tasks import get_task_info
    return "regression" if get_task_info(task_name).is_regression else "classifier"


def _apply_task_name(opts):
    from bert_tf.data.classification.tasks import canonical_task_name, get_task_info
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
    load_model)."""
    from bert_tf.model import (BertClassifier, BertEncoder, BertMultipleChoice,
                               BertSpanLabeler, BertTokenClassifier)
    encoder = BertEncoder(opts.config)
    if opts.task == "encoder":
        return encoder
    if opts.task == "squad":
        return BertSpanLabeler(encoder)
    if opts.task == "tagger":
        return BertTokenClassifier(encoder, len(opts.labels))
    if opts.task == "multiple_choice":
        return BertMultipleChoice(encoder)
    return BertClassifier(encoder, 1 if opts.task == "regression" else len(opts.labels))


def load_model(opts):
    """The task model of opts (resolved) with the checkpoint's weights; raises when the
    checkpoint lacks the task's head (fill_mask: MissingHeadError, as predict_masked.py)."""
    from bert_tf.checkpoints import load_weights
    if opts.task == "fill_mask":
        from bert_tf.jobs.fill_mask import load_masked_lm
        return load_masked_lm(opts.config, opts.init_checkpoint)   # the NSP head is optional
    model = build_model(opts)
    report = load_weights(model, opts.init_checkpoint, require_heads=opts.task != "encoder")
    logger.info("init_checkpoint: %s", report.summary())
    return model


def window_options(opts):
    """make_head's / export()'s window arguments of opts (resolved): none but for a
    classifier, regression or multi_label task read in windows."""
    if opts.task not in WINDOWED or not opts.doc_stride:
        return {}
    return dict(window_stride=opts.doc_stride, window_pooling=opts.window_pooling,
                max_windows=opts.max_windows)


def run(opts):
    """Loads the checkpoint into the task model and exports it; returns the version path."""
    from bert_tf.serving.exporter import export
    opts = opts.resolve()
    model = load_model(opts)
    return export(model, opts.task, opts.export_dir, opts.vocab_file, opts.do_lower_case,
                  opts.max_seq_length, labels=opts.labels, text_pair=opts.text_pair,
                  max_query_length=opts.max_query_length,
                  max_answer_length=opts.max_answer_length,
                  doc_stride=opts.doc_stride if opts.task == "squad" else 128,
                  num_choices=opts.num_choices if opts.task == "multiple_choice" else None,
                  top_k=opts.top_k, include_special_tokens=opts.include_special_tokens,
                  version=opts.version, warmup=opts.warmup,
                  text_signatures=opts.text_signatures, precision=opts.precision,
                  jit_compile=opts.jit_compile, **window_options(opts),
                  multi_label_threshold=opts.multi_label_threshold or 0.5)
