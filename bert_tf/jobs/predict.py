"""bert_tf.predict's job: rows in, one JSON object per row out, from a SavedModel
(bert_tf.prediction.loading) or a checkpoint (bert_tf.jobs.checkpoint_predictor) through the
task's serving signatures (bert_tf.prediction.runners).

Every row is checked before the model runs, so a bad row stops the run before any output is
written; --output_file is written once, atomically (temporary name, then rename).
"""

import dataclasses
import json
import logging
import os
import time

from bert_tf import fileio, kinds
from bert_tf.options import option
from bert_tf.prediction import inputs as _inputs
from bert_tf.prediction import loading, runners
from bert_tf.prediction.inputs import InputError

logger = logging.getLogger("bert_tf")


@dataclasses.dataclass(kw_only=True)
class PredictOptions:
    """What to predict with and on; every field but checkpoint (its own flags) is a flag of
    bert_tf.predict."""

    model: str = option(
        None, "A SavedModel version folder, an export_dir of numbered versions (the highest is "
        "used), or a checkpoint: a runner's output_dir or best/, a TF1 prefix, a native prefix, "
        "a HuggingFace folder.", required=True)
    task: str = option(
        None, "What the model does; only for a checkpoint whose head does not say (a SavedModel "
        "knows its task), and multi_label for a run_classifier --multi_label checkpoint (its "
        "head is a classifier's; taken as multi_label without this flag when the "
        "eval_results.txt beside it records a threshold).", choices=kinds.PREDICTED)
    text: list = option(
        None, "A text to predict (repeat for several): classifier, regression, NER (words split "
        "on whitespace); SQuAD: the question; multiple choice: the context.", multi=True)
    text_pair: list = option(
        None, "The second text of each --text, by position (sentence-pair classifiers; SQuAD: "
        "the context).", multi=True)
    question: list = option(None, "SQuAD: a question (with --context).", multi=True)
    context: list = option(
        None, "SQuAD: the passage of each --question; multiple choice: the first sentence the "
        "--choices continue.", multi=True)
    choices: list = option(None, "Multiple choice: one choice (repeat for each, in order).",
                           multi=True)
    input_file: str = option(
        None, "Rows to predict instead of the text flags: JSON lines (fields text, text_pair, "
        "question, context, choices, id) or TSV/CSV with a header naming those fields (choices "
        "as columns choice_0, choice_1, ...).")
    output_file: str = option(      # None: returned only (the runner prints them)
        None, "Write the predictions here as JSON lines (atomically); default: stdout.")
    batch_size: int = option(32, "Rows per model call (NER: windows per call).")
    beam_pipeline_options: str = option(
        None, "Run as an Apache Beam pipeline (RunInference) with these comma-separated "
        "key=value pipeline options, e.g. runner=FnApiRunner,direct_num_workers=2,"
        "direct_running_mode=multi_processing: --input_file to --output_file, the same JSON "
        "lines; rows the model cannot take go to <output_file>.refused.jsonl. A SavedModel "
        "only; needs pip install 'bert_tf[beam]' (docs/scale.md).")
    doc_stride: int = option(
        None, "Distance in WordPieces between the starts of a long text's windows. NER: windows "
        "of whole words (default 64, as run_ner). SQuAD checkpoints: a long context's windows "
        "(default 128). Classifier, regression, multi_label and embedding checkpoints: read the "
        "first text in windows and combine their logits (embeddings) (--window_pooling), as "
        "run_classifier --doc_stride "
        "(default: the run's, else truncate). Checkpoints default to the run's value in the "
        "run_options.json beside them. A SavedModel fixed it at export (except NER's).")
    version_2_with_negative: bool = option(
        False, "SQuAD 2.0 model: answer \"\" when null_score - score > "
        "--null_score_diff_threshold, as run_squad.")
    null_score_diff_threshold: float = option(
        0.0, "SQuAD 2.0: the threshold of --version_2_with_negative.")
    checkpoint: loading.CheckpointSettings = dataclasses.field(
        default_factory=loading.CheckpointSettings)

    def validate(self):
        if not self.model:
            raise InputError("--model is required (a SavedModel, an export_dir or a checkpoint)")
        if self.task is not None and self.task not in kinds.PREDICTED:
            raise InputError(f"--task must be one of {', '.join(kinds.PREDICTED)}, got "
                             f"{self.task!r}")
        if self.batch_size < 1:
            raise InputError(f"--batch_size must be >= 1, got {self.batch_size}")
        if self.doc_stride is not None and self.doc_stride < 1:
            raise InputError(f"--doc_stride must be >= 1, got {self.doc_stride}")
        settings = self.checkpoint
        if settings.window_pooling not in (None, "mean", "max"):
            raise InputError(f"--window_pooling must be mean or max, got "
                             f"{settings.window_pooling!r}")
        if settings.max_windows is not None and settings.max_windows < 0:
            raise InputError(f"--max_windows must be >= 0 (0: all), got {settings.max_windows}")
        threshold = settings.multi_label_threshold
        if threshold is not None and not 0.0 < threshold < 1.0:
            raise InputError(f"--multi_label_threshold must be in (0, 1), got {threshold}")


def load(opts, rows):
    """The Predictor of opts.model; rows tell a checkpoint's classifier whether it reads pairs
    and its multiple-choice module how many choices a row has, where its run did not record
    it."""
    from bert_tf.prediction.portable import load_portable, portable_version
    version = loading.saved_model_version(opts.model)
    portable = portable_version(opts.model) if version is None else None
    if version is None and portable is None:
        return _load_checkpoint(opts, rows)
    what = "SavedModel" if portable is None else "export"
    version = version or portable
    given = opts.checkpoint.given()
    if given:
        raise InputError(f"{', '.join(given)}: for checkpoints only; the {what} "
                         f"{version} fixed {'it' if len(given) == 1 else 'them'} at export")
    predictor = (loading.load_saved_model(version) if portable is None
                 else load_portable(portable))
    if opts.task and opts.task != predictor.kind:
        raise InputError(f"--task={opts.task}, but the {what} {version} is a "
                         f"{predictor.kind} model")
    if opts.doc_stride is not None:
        check_saved_model_stride(predictor, version)
    _log_threshold(predictor)
    return predictor


def _load_checkpoint(opts, rows):
    # Imported here: the export job imports Keras, which bert_tf.predict's flags do not need.
    from bert_tf.jobs.checkpoint_predictor import (build_predictor, checkpoint_kind,
                                                   checkpoint_plan)
    checkpoint = checkpoint_kind(opts.model, opts.task, opts.checkpoint.task_name)
    kind = checkpoint.kind
    _check_checkpoint_options(opts, kind)
    spec = kinds.get(kind)
    # Rows are checked for the kind's fields before the (slow) build.
    checked = [runners.row_inputs(kind, row) for row in rows]
    text_pair = (any(pair is not None for _, pair in checked)
                 if spec.pairs and not opts.checkpoint.task_name else None)
    num_choices = len(checked[0][1]) if "num_choices" in spec.settings else None
    plan = checkpoint_plan(checkpoint, opts.checkpoint, opts.doc_stride, text_pair,
                           num_choices)
    predictor = build_predictor(plan)
    _log_threshold(predictor)
    return predictor


def check_saved_model_stride(predictor, version):
    """--doc_stride with a SavedModel: word windows (read here) only; the export fixed the
    others."""
    info, spec = predictor.info, kinds.get(predictor.kind)
    if "doc_stride" in spec.settings:
        raise InputError(f"--doc_stride: the SavedModel {version} fixed it at export "
                         f"({info.get('doc_stride')})")
    if spec.windows:
        if info.get("window_stride"):
            raise InputError(f"--doc_stride: the SavedModel {version} fixed its windows at "
                             f"export (window_stride {info['window_stride']}, window_pooling "
                             f"{info.get('window_pooling')}, max_windows "
                             f"{info.get('max_windows')})")
        raise InputError(f"--doc_stride: the SavedModel {version} truncates long texts (it was "
                         f"exported without --doc_stride): export it with --doc_stride, or "
                         f"predict from its checkpoint with --doc_stride")
    if not spec.word_windows:
        raise InputError(f"--doc_stride: a {_kind_name(predictor.kind)} model reads no "
                         f"windows")


def _kind_name(kind):
    return kind.replace("_", "-")


def _check_checkpoint_options(opts, kind):
    """The window and threshold flags against the checkpoint's kind (before the build)."""
    settings, spec = opts.checkpoint, kinds.get(kind)
    windows = [f"--{name}" for name in ("window_pooling", "max_windows")
               if getattr(settings, name) is not None]
    if windows and not spec.windows:
        raise InputError(f"{', '.join(windows)}: for {', '.join(kinds.WINDOWED)} "
                         f"checkpoints read with --doc_stride windows, not a {kind} model")
    if windows and not (opts.doc_stride or _recorded_stride(opts.model)):
        raise InputError(f"{', '.join(windows)}: apply to --doc_stride windows; give "
                         f"--doc_stride (the run's run_classifier --doc_stride)")
    if opts.doc_stride is not None and not (spec.windows or spec.word_windows
                                            or "doc_stride" in spec.settings):
        raise InputError(f"--doc_stride: a {_kind_name(kind)} model reads no windows")
    if settings.multi_label_threshold is not None and (
            "multi_label_threshold" not in spec.settings):
        raise InputError(f"--multi_label_threshold: for multi_label models, not a {kind} model"
                         + (" (give --task=multi_label for a run_classifier --multi_label "
                            "checkpoint)" if spec.labelled and spec.windows else ""))


def _recorded_stride(path):
    """The long-text window stride the run beside checkpoint `path` recorded, or 0."""
    from bert_tf.jobs.checkpoint_predictor import recorded_contract
    recorded = recorded_contract(path)
    known = recorded is not None and "window_stride" in recorded.known
    return recorded.contract.window_stride if known else 0


def _log_threshold(predictor):
    if "multi_label_threshold" in kinds.get(predictor.kind).settings:
        logger.info("multi-label threshold %g: a label is selected when its probability is "
                    ">= it", predictor.info["threshold"])


def output_object(row, result):
    """The JSON object of a row: its "index" (and "id" when it has one), then the result."""
    head = {"index": row.index}
    if row.id is not None:
        head["id"] = row.id
    return dict(head, **result)


def predict(opts, rows, predictor):
    """One dict per row, in row order (with "index", and "id" when the row has one)."""
    runner = kinds.get(predictor.kind).load("prediction")(predictor, opts)
    checked = []
    for row in rows:
        inputs = runners.row_inputs(predictor.kind, row)
        runner.check(row, inputs)
        checked.append((row, inputs))
    results, started = [], time.perf_counter()
    for start in range(0, len(checked), opts.batch_size):
        batch = checked[start:start + opts.batch_size]
        for (row, _), result in zip(batch, runner.predict(batch)):
            results.append(output_object(row, result))
    logger.info("predicted %d row(s) in %.1f s with %s", len(rows),
                time.perf_counter() - started, predictor.source)
    return results


def json_lines(results):
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in results)


def run(opts):
    """Reads the rows, loads the model, predicts; writes opts.output_file when given. Returns
    the results (one dict per row)."""
    opts.validate()
    rows = _inputs.read_rows(opts.input_file, opts.text, opts.text_pair, opts.question,
                             opts.context, opts.choices)
    if opts.output_file and fileio.isdir(opts.output_file):
        raise InputError(f"--output_file {opts.output_file} is a folder")
    predictor = load(opts, rows)
    results = predict(opts, rows, predictor)
    if opts.output_file:
        fileio.atomic_write_text(os.fspath(opts.output_file), json_lines(results))
        logger.info("wrote %d prediction(s) to %s", len(results), opts.output_file)
    return results
