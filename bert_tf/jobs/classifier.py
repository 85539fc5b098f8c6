"""run_classifier: fine-tune, evaluate and predict sentence(-pair) classification/regression.

Data come from the task's files (GLUE, XNLI, generic TSV/CSV/JSONL) or tensorflow-datasets;
texts are tokenized in the tf.data pipeline (bert_tf.data.classification.pipeline). Training
follows google-research/bert: num_train_steps = int(examples / batch * epochs), linear warm-up
over warmup_proportion of them, AdamW; evaluation gathers every prediction and computes the
task's GLUE metrics, per-class precision/recall/F1 and macro F1 (confusion_matrix.tsv beside
eval_results.txt); prediction writes test_results.tsv and the GLUE submission file with
exactly one line per test row. Classification (and multi-label) runs record their label list in
class-id order in output_dir/label_list.txt and best/label_list.txt, where bert_tf.predict
finds it beside the checkpoints. --teacher_checkpoint distils a fine-tuned run into this one
(bert_tf.jobs.distillation). ClassifierTask is its task object for
bert_tf.jobs.driver.run_task, which runs every stage.
"""

import dataclasses
import logging
import os

import numpy as np

from bert_tf import contract as _contract
from bert_tf.jobs.checks import check_vocab_size
from bert_tf.jobs.distillation import DistillationOptions
from bert_tf.jobs.results import record_eval, save_label_list
from bert_tf.jobs.driver import Evaluation, FinetuneTask, TrainingData, run_task
from bert_tf.jobs.finetune import FinetuneOptions, cross_entropy, predict_logits, softmax
from bert_tf.metrics.results import write_confusion_matrix
from bert_tf.options import non_defaults, option
from bert_tf.training.class_weights import ClassWeightOptions

logger = logging.getLogger("bert_tf")

@dataclasses.dataclass(kw_only=True)
class ClassifierOptions(FinetuneOptions, DistillationOptions, ClassWeightOptions):
    task_name: str = option(
        None, "The task: cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli, ax, xnli, or "
        "generic (your own files; see the column flags).", required=True)
    data_dir: str = option(None, "The input data dir: the task's .tsv (or other) files.")
    tfds_name: str = option(
        None, "Read the task from tensorflow-datasets instead of --data_dir, e.g. glue/mrpc "
        "(--task_name is then implied).")
    tfds_data_dir: str = option(None, "tensorflow-datasets data folder (TFDS default).")
    tfds_download: bool = option(False, "Let tensorflow-datasets download the data.")
    skip_bad_rows: bool = option(
        False, "Skip malformed rows (missing columns, unknown labels, empty text) and count "
        "them, instead of stopping with the file and line.")
    processor_options: dict = dataclasses.field(default_factory=dict)   # ProcessorOptions'
    pad_to_max_length: bool = option(
        False, "Pad every batch to max_seq_length (fixed shapes, as on TPU). Default: pad each "
        "batch to its longest sequence, rounded up to 16.")
    feature_cache_dir: str = option(
        None, "Tokenize once into TFRecord files here and reuse them (large tasks).")
    doc_stride: int = option(
        0, "Long texts: instead of truncating, cut the first text into windows of "
        "max_seq_length whose starts are this many WordPieces apart (a second text is kept in "
        "every window, at most half of it); an example's window logits are combined "
        "(--window_pooling) in training, eval, predict and the export. 0: truncate.")
    window_pooling: str = option("mean", "How window logits combine: mean or max.",
                                 choices=("mean", "max"))
    max_windows: int = option(
        0, "With --doc_stride: at most this many windows per example, from its start (0: all; "
        "bounds the memory of a batch).")
    multi_label: bool = option(
        False, "generic: multi-label classification: the label column holds a set of labels "
        "joined by --label_separator (an empty cell: no label); one sigmoid output per label, "
        "binary cross-entropy loss, micro/macro F1 (see bert_tf/jobs/multilabel.py).")
    label_separator: str = option(",", "--multi_label: the separator between labels in a cell.")
    multi_label_threshold: float = option(
        _contract.MULTI_LABEL_THRESHOLD, "--multi_label: a label is predicted when its "
        "probability is >= this (the "
        "tie-break for --tune_threshold).")
    tune_threshold: bool = option(
        True, "--multi_label: after each evaluation, choose the global threshold (0.05..0.95) "
        "with the best micro F1 on dev, report it in eval_results.txt and use it to predict "
        "and export.")

    serving_kind = "classifier"          # "regression" for regression tasks

    def validate_inputs(self):
        if not self.tfds_name and not self.data_dir:
            raise ValueError("--data_dir is required (or --tfds_name to read the task from "
                             "tensorflow-datasets)")
        if not self.tfds_name and not self.task_name:
            raise ValueError("--task_name is required (a GLUE task, xnli or generic)")
        self.validate_class_weights()
        from bert_tf.tokenization.windows import check_window_options
        check_window_options(self.doc_stride, self.window_pooling, self.max_windows,
                             self.max_seq_length,
                             non_defaults(self, ("window_pooling", "max_windows")))
        if self.doc_stride:
            if self.jit_compile:
                raise ValueError("--doc_stride with --jit_compile: every batch has its own "
                                 "number of windows, so XLA would compile the model again for "
                                 "nearly every batch; leave out --jit_compile")
            if self.feature_cache_dir:
                raise ValueError("--feature_cache_dir stores truncated features: it cannot be "
                                 "used with --doc_stride windows")
            if self.gradient_accumulation_steps > 1:
                raise ValueError("--gradient_accumulation_steps splits batches of windows "
                                 "unevenly: it cannot be used with --doc_stride")
        from bert_tf.jobs.multilabel import validate_options
        validate_options(self)
        self.validate_distillation()


@dataclasses.dataclass(kw_only=True)
class ProcessorOptions:
    """The flags that configure the task's processor: XNLI's language and the generic task's
    files and columns. keyword_arguments() is ClassifierOptions.processor_options."""

    xnli_language: str = option("zh", "XNLI: the language to train and evaluate on.")
    text_a_column: str = option(
        None, "generic: column of the first text (header name, or 0-based position without "
        "--has_header; JSONL: key).")
    text_b_column: str = option(None, "generic: column of the second text, if any.")
    label_column: str = option(None, "generic: column of the label.")
    id_column: str = option(None, "generic: column of the row id (default: row number).")
    file_format: str = option("tsv", "generic: file format.", choices=("tsv", "csv", "jsonl"))
    has_header: bool = option(True, "generic: the first line names the columns.")
    labels: list = option(
        None, "generic: the label list in id order (default: sorted labels of train).")
    is_regression: bool = option(False, "generic: labels are numbers (MSE loss).")
    train_file: str = option(None, "generic: training file in data_dir (train.<fmt>).")
    dev_file: str = option(None, "generic: dev file in data_dir (dev.<fmt>).")
    test_file: str = option(None, "generic: test file in data_dir (test.<fmt>).")

    generic_only = ("text_a_column", "text_b_column", "label_column", "id_column", "labels",
                    "train_file", "dev_file", "test_file")

    def keyword_arguments(self, task_name):
        """The processor's keyword arguments for `task_name`; generic-only options given to
        another task are an error."""
        task = (task_name or "").strip().lower()
        if task == "generic":
            return dict(text_a_column=self.text_a_column, text_b_column=self.text_b_column,
                        label_column=self.label_column, id_column=self.id_column,
                        fmt=self.file_format, has_header=self.has_header, labels=self.labels,
                        is_regression=self.is_regression, train_file=self.train_file,
                        dev_file=self.dev_file, test_file=self.test_file)
        given = non_defaults(self, self.generic_only)
        if given:
            raise ValueError(f"{', '.join(given)} only apply to --task_name=generic")
        return dict(language=self.xnli_language) if task == "xnli" else {}


# --------------------------------------------------------------------------- data
def _metric_suffix(task):
    return "_mm" if task == "mnli-mm" else f"_{task}"


class TaskData:
    """Examples, labels and task facts of --task_name (files) or --tfds_name. Companion tasks
    (MNLI's mismatched sets, the AX diagnostic) are read from the same source."""

    def __init__(self, opts):
        from bert_tf.data.classification import (GenericProcessor, get_processor,
                                                 get_task_info, task_for_tfds_name)
        self.opts = opts
        self.processor = None
        if opts.tfds_name:
            self.task = task_for_tfds_name(opts.tfds_name)
            self.info = get_task_info(self.task)
            self.labels = list(self.info.labels)
        else:
            if opts.multi_label:
                from bert_tf.jobs.multilabel import make_processor
                self.processor = make_processor(opts)
            else:
                self.processor = get_processor(opts.task_name, skip_bad_rows=opts.skip_bad_rows,
                                               **opts.processor_options)
            if isinstance(self.processor, GenericProcessor):
                self.labels = self.processor.get_labels(opts.data_dir)
            else:
                self.labels = self.processor.get_labels()
            self.info = self.processor.info
            self.task = self.info.name

    @property
    def is_regression(self):
        return self.info.is_regression

    @property
    def num_labels(self):
        return 1 if self.is_regression else len(self.labels)

    def examples(self, split, task=None):
        """InputExamples of `split` ("train", "dev", "test") of the task or a companion."""
        from bert_tf.data.classification import get_processor, load_tfds_examples
        opts = self.opts
        if opts.tfds_name:
            return load_tfds_examples(task or opts.tfds_name, split, data_dir=opts.tfds_data_dir,
                                      download=opts.tfds_download,
                                      skip_bad_rows=opts.skip_bad_rows)
        processor = self.processor if task is None else get_processor(
            task, skip_bad_rows=opts.skip_bad_rows)
        examples = processor.get_examples(opts.data_dir, split)
        stats = processor.last_read
        logger.info("%s: %d %s examples%s", stats.path, stats.num_examples, split,
                    f" ({stats.num_skipped} bad rows skipped)" if stats.num_skipped else "")
        return examples

    def companions(self):
        return self.info.companions

    @property
    def text_pair(self):
        """Whether examples hold two texts: the generic task's text_b column, else every task
        but GLUE's single-sentence ones."""
        from bert_tf.data.classification import GenericProcessor
        from bert_tf.data.classification.tasks import SINGLE_TEXT_TASKS
        if isinstance(self.processor, GenericProcessor):
            return self.processor.text_b_column is not None
        return self.task not in SINGLE_TEXT_TASKS


class Inputs:
    """Builds dataset_fns for the trainer from examples (tokenized in tf.data) or the
    feature cache."""

    def __init__(self, opts, data):
        from bert_tf.data.classification import pipeline
        self.opts, self.data, self.pipeline = opts, data, pipeline
        self.preprocessor = pipeline.make_preprocessor(opts.vocab_file, opts.do_lower_case,
                                                       opts.max_seq_length, opts.doc_stride,
                                                       opts.max_windows)

    def columns(self, examples):
        if self.opts.multi_label:        # multi-hot float32 label_ids [N, K]
            from bert_tf.data.classification.multilabel import MultiLabelColumns
            return MultiLabelColumns(examples, self.data.labels)
        return self.pipeline.ExampleColumns(examples, self.data.labels, self.data.is_regression)

    def source(self, columns, name, in_memory=False):
        """What classifier_dataset reads: the feature-cache path with --feature_cache_dir,
        else features tokenized once into memory (in_memory: a set read many times), else the
        raw columns (tokenized on every pass)."""
        opts = self.opts
        if opts.doc_stride:              # windows are cut on every pass, from the raw texts
            return columns
        if not opts.feature_cache_dir:
            if in_memory:
                return self.pipeline.tokenize_in_memory(columns, self.preprocessor)
            return columns
        return self.pipeline.feature_cache(columns, self.preprocessor, opts.feature_cache_dir,
                                           f"{name}_seq{opts.max_seq_length}", opts.vocab_file,
                                           opts.do_lower_case, opts.max_seq_length)

    def dataset_fn(self, source, global_batch_size, is_training):
        opts = self.opts

        def fn(input_context):
            batch = input_context.get_per_replica_batch_size(global_batch_size)
            return self.pipeline.classifier_dataset(
                source, batch, is_training=is_training, max_seq_length=opts.max_seq_length,
                preprocessor=self.preprocessor, is_regression=self.data.is_regression,
                seed=opts.seed, input_context=input_context,
                pad_to_max_length=opts.pad_to_max_length)
        return fn


# --------------------------------------------------------------------------- evaluation
def mean_loss(logits, labels, is_regression):
    """The training loss on gathered logits: MSE, or mean softmax cross-entropy."""
    if is_regression:
        return float(np.mean((logits[:, 0] - labels) ** 2))
    return cross_entropy(logits, labels)


def evaluate(trainer, inputs, columns, source, metric_task, what="eval"):
    """compute_metrics of `metric_task` on every example (classification: with the per-class
    metrics, prediction_majority_share and collapsed, 1 when the predictions collapsed to one
    class, with a warning), plus eval_loss (and google's `loss`). Returns (values, the confusion
    matrix, or None for regression)."""
    if inputs.opts.multi_label:
        from bert_tf.jobs import multilabel
        return multilabel.evaluate(trainer, inputs, columns, source, what), None
    from bert_tf.metrics.classification import (compute_metrics, confusion_matrix,
                                                majority_prediction, per_class_metrics)
    logits = predict_logits(trainer, inputs.dataset_fn(source, inputs.opts.eval_batch_size,
                                                       False), columns.num_examples, what)
    data = inputs.data
    if data.is_regression:
        values, confusion = compute_metrics(metric_task, logits[:, 0], columns.label_ids), None
    else:
        values = compute_metrics(metric_task, logits, columns.label_ids)
        confusion = confusion_matrix(logits, columns.label_ids, data.num_labels)
        values.update(per_class_metrics(confusion, data.labels))
        majority = majority_prediction(confusion)
        values.update(prediction_majority_share=majority.share,
                      collapsed=int(majority.collapsed))
        if majority.collapsed:
            logger.warning("%s: predictions collapsed to one class: %.1f%% are %r (gold: %.1f%%)",
                           what, 100 * majority.share, data.labels[majority.class_id],
                           100 * majority.gold_share)
    values["eval_loss"] = mean_loss(logits, columns.label_ids, data.is_regression)
    values["loss"] = values["eval_loss"]
    return values, confusion


def write_confusion(output_dir, confusion, labels, suffix=""):
    """output_dir/confusion_matrix<suffix>.tsv (rows gold, columns predicted)."""
    path = write_confusion_matrix(os.path.join(output_dir, f"confusion_matrix{suffix}.tsv"),
                                  confusion, labels)
    logger.info("confusion matrix (rows gold, columns predicted): %s", path)


# --------------------------------------------------------------------------- the job
def build_model(opts, num_labels, layer_cls=False):
    from bert_tf.model import BertClassifier, BertEncoder
    return BertClassifier(BertEncoder(opts.config), num_labels,
                          window_pooling=opts.window_pooling if opts.doc_stride else None,
                          layer_cls=layer_cls)


def class_weights(opts, data, label_ids):
    """The loss weights of --class_weights (None without it, or without training: they only
    weigh the training loss), logged; "auto" counts the training `label_ids`."""
    if not opts.class_weights:
        return None
    if data.is_regression:
        raise ValueError("--class_weights applies to classification, not regression")
    if not opts.do_train:
        return None
    from bert_tf.training.class_weights import describe, resolve_class_weights
    weights = resolve_class_weights(opts.class_weights, data.labels, label_ids)
    logger.info("class weights: %s", describe(weights, data.labels))
    return weights


def _companions_with(data, split):
    """(task, examples) of the companion tasks that have `split` (missing files: skipped)."""
    found = []
    for companion in data.companions():
        if companion == "ax" and split != "test":
            continue
        try:
            found.append((companion, data.examples(split, task=companion)))
        except (FileNotFoundError, ValueError) as e:
            logger.warning("skipping %s %s set: %s", companion, split, e)
    return found


@dataclasses.dataclass
class EvalSet:
    """The dev set: its columns and what the input pipeline reads of them (Inputs.source)."""

    columns: object
    source: object


class ClassifierTask(FinetuneTask):
    """Sentence(-pair) classification, regression and multi-label classification: the task's
    GLUE metrics (per-class metrics and confusion_matrix.tsv for classification), companion
    tasks' dev and test sets, test_results.tsv and the GLUE submission file. prepare() reads the
    task's data and input pipeline (self.data, self.inputs) and the --teacher_checkpoint run
    (self.teacher, or None)."""

    kind = "classifier"
    teacher_cls_layers = None          # and the teacher blocks --distill_hidden_weight matches

    def prepare(self):
        opts = self.opts
        self.data = data = TaskData(opts)
        self.inputs = Inputs(opts, data)
        check_vocab_size(self.inputs.preprocessor.tokenizer.vocabulary_size(), opts)
        logger.info("task %s: %s", data.task, "regression" if data.is_regression
                    else f"{data.num_labels} labels {data.labels}")
        if opts.teacher_checkpoint:
            from bert_tf.jobs.distillation import hidden_matching
            from bert_tf.jobs.teachers import read_teacher
            if data.is_regression and non_defaults(opts, ("distill_temperature",)):
                raise ValueError("--distill_temperature applies to classification: a "
                                 "regression student learns the teacher's score itself")
            self.teacher = read_teacher(opts.teacher_checkpoint, data.labels,
                                        data.is_regression, data.task)
            if opts.distill_hidden_weight:
                self.teacher_cls_layers = hidden_matching(self.teacher, opts.config)
        if data.is_regression:
            return {}
        from bert_tf.metrics.classification import metric_labels
        renamed = {label: name for label, name in zip(data.labels, metric_labels(data.labels))
                   if label != name}
        if renamed:
            logger.info("labels as they appear in metric names: %s", renamed)
        return save_label_list(opts.output_dir, data.labels)

    @property
    def default_metric(self):
        return self.data.info.primary_metric

    def training_data(self):
        inputs, opts = self.inputs, self.opts
        examples = self.data.examples("train")
        labelled = len(examples)
        if self.teacher is not None:
            from bert_tf.jobs.distillation import student_examples
            examples, labelled = student_examples(
                examples, opts, self.teacher, 0.0 if self.data.is_regression
                else self.data.labels[0], self.data.examples("dev")
                if opts.distill_cross_pairs and opts.do_eval else ())
        columns = inputs.columns(examples)
        source = inputs.source(columns, f"{self.data.task}_train")
        dataset_fn = inputs.dataset_fn(source, self.opts.train_batch_size, True)
        if self.teacher is not None:
            dataset_fn = self.with_teacher(dataset_fn, columns, labelled)
        return TrainingData(dataset_fn, columns.num_examples,
                            label_ids=columns.label_ids[:labelled])

    def with_teacher(self, dataset_fn, columns, labelled):
        """dataset_fn with the teacher's logits of each example (teacher_outputs), and when the
        first `labelled` examples are followed by a transfer set, each example's
        label_weight."""
        from bert_tf.data.classification.augmentation import label_weights
        from bert_tf.jobs.teachers import teacher_targets, with_teacher_targets
        targets = self.teacher_outputs(
            {"examples": columns.fingerprint(), "cls_layers": self.teacher_cls_layers},
            lambda: teacher_targets(self.teacher, columns, self.opts.eval_batch_size,
                                    self.teacher_cls_layers))
        if labelled < columns.num_examples:
            targets["label_weight"] = label_weights(labelled, columns.num_examples)
        return with_teacher_targets(dataset_fn, targets)

    def loss(self, training):
        from bert_tf.objectives.classification import ClassificationObjective
        label_ids = None if training is None else training.label_ids
        weights = class_weights(self.opts, self.data, label_ids)
        if self.teacher is not None:
            from bert_tf.objectives.distillation import DistillationObjective
            return DistillationObjective(self.data.is_regression, self.opts.distill_temperature,
                                         self.opts.distill_alpha, weights,
                                         hidden_weight=self.opts.distill_hidden_weight)
        return ClassificationObjective(self.data.is_regression, weights,
                                       multi_label=self.opts.multi_label)

    def build_model(self):
        return build_model(self.opts, self.data.num_labels,
                           layer_cls=self.teacher_cls_layers is not None)

    def load_eval_data(self):
        columns = self.inputs.columns(self.data.examples("dev"))
        return EvalSet(columns, self.inputs.source(columns, f"{self.data.task}_dev",
                                                   in_memory=bool(self.opts.eval_every_steps)))

    def evaluate(self, trainer, step, eval_set):
        values, confusion = evaluate(trainer, self.inputs, eval_set.columns, eval_set.source,
                                     self.data.info.metric_task, what=f"eval@{step}")
        return Evaluation(step, values, confusion)

    def record_evaluation(self, trainer, evaluation, eval_set, summarized):
        """The task's metrics plus its companions' (suffixed), confusion matrices."""
        from bert_tf.data.classification import get_task_info
        opts, data, inputs = self.opts, self.data, self.inputs
        confusion = evaluation.artifact     # the recorded step's (the best one's, if kept)
        if confusion is not None:
            write_confusion(opts.output_dir, confusion, data.labels)
        extra = {}
        for companion, examples in _companions_with(data, "dev"):
            columns = inputs.columns(examples)
            values_of, confusion_of = evaluate(trainer, inputs, columns,
                                               inputs.source(columns, f"{companion}_dev"),
                                               get_task_info(companion).metric_task,
                                               what=f"eval {companion}")
            if confusion_of is not None:
                write_confusion(opts.output_dir, confusion_of, data.labels,
                                _metric_suffix(companion))
            extra.update({f"{k}{_metric_suffix(companion)}": v for k, v in values_of.items()})
        return record_eval(opts, evaluation.step, dict(evaluation.metrics, **extra),
                           summary_keys=list(extra) if summarized else None)

    def decide(self, trained, evaluation):
        """--multi_label: the one threshold predict and export use (from the evaluation of the
        model's step, else best/ when the model holds its weights, else the flag); None
        otherwise."""
        if not self.opts.multi_label:
            return None
        from bert_tf.jobs import multilabel
        best_dir = trained.keeper.best_dir if trained.loaded_best and trained.keeper else None
        return multilabel.decision_threshold(
            self.opts, None if evaluation is None else evaluation.metrics, best_dir=best_dir)

    def predict(self, trainer, evaluation, eval_set, threshold):
        if self.opts.multi_label:
            from bert_tf.jobs import multilabel
            return multilabel.predict(trainer, self.inputs, self.data, threshold)
        return predict_tasks(trainer, self.inputs, self.data)

    def decision_of(self, values):
        if not self.opts.multi_label:
            return None
        from bert_tf.jobs import multilabel
        return multilabel.decision_threshold(self.opts, values)

    def contract(self, threshold=None):
        opts, data = self.opts, self.data
        kind = ("multi_label" if opts.multi_label
                else "regression" if data.is_regression else "classifier")
        return opts.contract(
            kind=kind, labels=None if data.is_regression else data.labels,
            text_pair=data.text_pair, window_stride=opts.doc_stride,
            window_pooling=opts.window_pooling, max_windows=opts.max_windows,
            multi_label_threshold=opts.multi_label_threshold if threshold is None else threshold)


def run(opts, strategy):
    """Trains, evaluates, predicts and/or exports (bert_tf.jobs.driver.run_task). Returns
    {"train", "eval", "predict", "export"} (values or None; "predict" maps output file kinds to
    paths)."""
    return run_task(ClassifierTask(opts), strategy)


def predict_tasks(trainer, inputs, data):
    """Predicts the test set of the task and its companions; writes test_results[_<task>].tsv
    and the GLUE submission file (or test_predictions.tsv outside GLUE). Returns the paths."""
    from bert_tf.data.classification import (get_task_info, write_glue_submission,
                                             write_test_results)
    from bert_tf.data.classification.writers import write_predictions
    opts = inputs.opts
    paths = {}
    tasks = [(None, data.examples("test"))] + _companions_with(data, "test")
    for task, examples in tasks:
        info = data.info if task is None else get_task_info(task)
        columns = inputs.columns(examples)
        source = inputs.source(columns, f"{info.name}_test")
        logits = predict_logits(trainer, inputs.dataset_fn(source, opts.predict_batch_size,
                                                           False),
                                columns.num_examples, what=f"predict {info.name}")
        scores = logits[:, 0] if data.is_regression else softmax(logits)
        name = "test_results.tsv" if task is None else f"test_results_{task}.tsv"
        paths[name] = write_test_results(os.path.join(opts.output_dir, name), scores,
                                         columns.num_examples)
        indices = [e.guid.split("-", 1)[1] for e in examples]
        if info.submission_file:
            paths[info.submission_file] = write_glue_submission(
                opts.output_dir, info.name, scores, num_examples=columns.num_examples,
                indices=indices)
        else:
            cells = ([f"{v:.6f}" for v in scores] if data.is_regression
                     else [data.labels[i] for i in scores.argmax(axis=-1)])
            paths["test_predictions.tsv"] = write_predictions(
                os.path.join(opts.output_dir, "test_predictions.tsv"), indices, cells)
        logger.info("predictions of %d %s test examples: %s", columns.num_examples, info.name,
                    ", ".join(p for k, p in paths.items()))
    return paths
