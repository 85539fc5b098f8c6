"""run_classifier: fine-tune, evaluate and predict sentence(-pair) classification/regression.

Data come from the task's files (GLUE, XNLI, generic TSV/CSV/JSONL) or tensorflow-datasets;
texts are tokenized in the tf.data pipeline (bert_tf.data.classification.pipeline). Training
follows google-research/bert: num_train_steps = int(examples / batch * epochs), linear warm-up
over warmup_proportion of them, AdamW; evaluation gathers every prediction and computes the
task's GLUE metrics; prediction writes test_results.tsv and the GLUE submission file with
exactly one line per test row.
"""

import dataclasses
import json
import logging
import math
import os
import time

import numpy as np

from bert_tf import fileio
from bert_tf.config import BertConfig
from bert_tf.jobs.common import (init_from_checkpoint, make_optimizer, make_trainer,
                                 write_eval_summary)
from bert_tf.metrics.results import read_eval_results, write_eval_results

logger = logging.getLogger("bert_tf")

BEST_DIR = "best"
HISTORY_FILE = "eval_history.jsonl"


@dataclasses.dataclass
class ClassifierOptions:
    config: BertConfig
    task_name: str
    output_dir: str
    data_dir: str = None
    vocab_file: str = None
    init_checkpoint: str = None
    do_lower_case: bool = True
    max_seq_length: int = 128
    do_train: bool = False
    do_eval: bool = False
    do_predict: bool = False
    train_batch_size: int = 32
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    learning_rate: float = 5e-5
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    tfds_name: str = None
    tfds_data_dir: str = None
    tfds_download: bool = False
    skip_bad_rows: bool = False
    processor_options: dict = dataclasses.field(default_factory=dict)
    eval_every_steps: int = 0
    keep_best_metric: str = None
    early_stopping_patience: int = 0
    load_best_at_end: bool = True
    pad_to_max_length: bool = False
    feature_cache_dir: str = None
    mixed_precision: str = None
    jit_compile: bool = False
    seed: int = 12345

    def validate(self):
        from bert_tf.tokenization import validate_case_matches_checkpoint
        if not (self.do_train or self.do_eval or self.do_predict):
            raise ValueError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
        if self.max_seq_length > self.config.max_position_embeddings:
            raise ValueError(
                f"Cannot use sequence length {self.max_seq_length} because the BERT model was "
                f"only trained up to sequence length {self.config.max_position_embeddings}")
        validate_case_matches_checkpoint(self.do_lower_case, self.init_checkpoint)
        if not self.output_dir:
            raise ValueError("--output_dir is required")
        if not self.tfds_name and not self.data_dir:
            raise ValueError("--data_dir is required (or --tfds_name to read the task from "
                             "tensorflow-datasets)")
        if not self.tfds_name and not self.task_name:
            raise ValueError("--task_name is required (a GLUE task, xnli or generic)")
        if not self.vocab_file:
            raise ValueError("--vocab_file is required (or an --init_checkpoint folder holding "
                             "vocab.txt)")
        if not fileio.exists(self.vocab_file):
            raise FileNotFoundError(f"--vocab_file {self.vocab_file} does not exist")
        for name in ("train_batch_size", "eval_batch_size", "predict_batch_size",
                     "iterations_per_loop"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} must be >= 1, got {getattr(self, name)}")
        if self.eval_every_steps < 0 or self.early_stopping_patience < 0:
            raise ValueError("--eval_every_steps and --early_stopping_patience must be >= 0")
        if self.eval_every_steps and not self.do_train:
            raise ValueError("--eval_every_steps evaluates during training: it needs --do_train")
        if (self.keep_best_metric or self.early_stopping_patience) and not self.eval_every_steps:
            raise ValueError("--keep_best_metric and --early_stopping_patience need "
                             "--eval_every_steps > 0 (they act on the periodic evaluations)")
        if not 0.0 <= self.warmup_proportion <= 1.0:
            raise ValueError(f"--warmup_proportion must be in [0, 1], got "
                             f"{self.warmup_proportion}")


def default_vocab_file(init_checkpoint):
    """vocab.txt beside --init_checkpoint (a folder or a checkpoint prefix), if there is one."""
    if not init_checkpoint:
        return None
    path = os.fspath(init_checkpoint)
    folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    candidate = os.path.join(folder, "vocab.txt")
    return candidate if os.path.exists(candidate) else None


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


class Inputs:
    """Builds dataset_fns for the trainer from examples (tokenized in tf.data) or the
    feature cache."""

    def __init__(self, opts, data):
        from bert_tf.data.classification import pipeline
        self.opts, self.data, self.pipeline = opts, data, pipeline
        self.preprocessor = pipeline.make_preprocessor(opts.vocab_file, opts.do_lower_case,
                                                       opts.max_seq_length)

    def columns(self, examples):
        return self.pipeline.ExampleColumns(examples, self.data.labels, self.data.is_regression)

    def source(self, columns, name, in_memory=False):
        """What classifier_dataset reads: the feature-cache path with --feature_cache_dir,
        else features tokenized once into memory (in_memory: a set read many times), else the
        raw columns (tokenized on every pass)."""
        opts = self.opts
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


# --------------------------------------------------------------------------- prediction
def predict_logits(trainer, dataset_fn, num_examples, what="predict"):
    """Float64 logits [num_examples, units] in example order. Every example must come back
    exactly once (batches are never padded with fake examples)."""
    logits, seen = None, np.zeros(num_examples, bool)
    start = last_log = time.perf_counter()
    for outputs, features in trainer.predict(dataset_fn, feature_keys=("example_index",)):
        index = features["example_index"].astype(np.int64)
        batch_logits = outputs["logits"].astype(np.float64)
        if logits is None:
            logits = np.zeros((num_examples, batch_logits.shape[-1]), np.float64)
        if np.any(seen[index]) or len(np.unique(index)) != len(index):
            raise RuntimeError(f"{what}: example(s) predicted twice (index "
                               f"{int(index[seen[index]][0]) if np.any(seen[index]) else index})")
        logits[index] = batch_logits
        seen[index] = True
        now = time.perf_counter()
        if now - last_log > 30:
            done = int(seen.sum())
            rate = done / (now - start)
            logger.info("%s: %d/%d examples, %.1f examples/s, eta %.0f s", what, done,
                        num_examples, rate, (num_examples - done) / max(rate, 1e-9))
            last_log = now
    if not seen.all():
        raise RuntimeError(f"{what}: {int((~seen).sum())} of {num_examples} examples got no "
                           f"prediction (first: index {int(np.argmin(seen))})")
    logger.info("%s: %d examples in %.1f s", what, num_examples, time.perf_counter() - start)
    return logits


def softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=-1, keepdims=True)


def mean_loss(logits, labels, is_regression):
    """The training loss on gathered logits: MSE, or mean softmax cross-entropy."""
    if is_regression:
        return float(np.mean((logits[:, 0] - labels) ** 2))
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return float(-np.mean(log_probs[np.arange(len(labels)), labels]))


def evaluate(trainer, inputs, columns, source, metric_task, what="eval"):
    """compute_metrics of `metric_task` on every example, plus eval_loss (and google's `loss`)."""
    from bert_tf.metrics.classification import compute_metrics
    logits = predict_logits(trainer, inputs.dataset_fn(source, inputs.opts.eval_batch_size,
                                                       False), columns.num_examples, what)
    regression = inputs.data.is_regression
    values = compute_metrics(metric_task, logits[:, 0] if regression else logits,
                             columns.label_ids)
    values["eval_loss"] = mean_loss(logits, columns.label_ids, regression)
    values["loss"] = values["eval_loss"]
    return values


# --------------------------------------------------------------------------- keeping the best
class BestKeeper:
    """Periodic evaluation during training: keeps the best weights in output_dir/best/ (a
    native checkpoint + bert_config.json + vocab.txt + eval_results.txt with the metric and
    its step), and says when to stop early. State survives a restart through best/ and
    eval_history.jsonl."""

    def __init__(self, opts, metric, evaluate_fn, model, resumed_step):
        self.opts, self.metric, self.evaluate_fn, self.model = opts, metric, evaluate_fn, model
        self.lower_is_better = metric.endswith("loss")
        self.best_dir = os.path.join(opts.output_dir, BEST_DIR)
        self.history_path = os.path.join(opts.output_dir, HISTORY_FILE)
        self.history = [h for h in self._read_history() if h["step"] <= resumed_step]
        self.best = None
        results = os.path.join(self.best_dir, "eval_results.txt")
        if fileio.exists(results):
            saved = read_eval_results(results)
            if saved.get("best_metric") == metric:
                self.best = float(saved[metric])
                logger.info("best so far: %s = %s at step %s", metric, self.best,
                            saved.get("global_step"))
        self.results = {}

    def _read_history(self):
        if not fileio.exists(self.history_path):
            return []
        with fileio.open_binary(self.history_path) as f:
            return [json.loads(line) for line in f.read().decode("utf-8").splitlines() if line]

    def _improves(self, value):
        if self.best is None:
            return True
        return value < self.best if self.lower_is_better else value > self.best

    def evaluations_without_improvement(self):
        count = 0
        for entry in reversed(self.history):
            if entry["improved"]:
                break
            count += 1
        return count

    def __call__(self, step, train_values):
        values = self.evaluate_fn(step)
        self.results[step] = values
        if self.metric not in values:
            raise ValueError(f"--keep_best_metric={self.metric} is not an eval metric of this "
                             f"task; choose one of {sorted(values)}")
        value = float(values[self.metric])
        improved = bool(np.isfinite(value) and self._improves(value))
        if improved:
            self._save_best(step, values)
        self.history.append({"step": step, "improved": improved,
                             **{k: float(v) for k, v in values.items()}})
        fileio.atomic_write_text(self.history_path,
                                 "".join(json.dumps(h) + "\n" for h in self.history))
        stale = self.evaluations_without_improvement()
        logger.info("eval at step %d: %s = %.4f (best %s)%s", step, self.metric, value,
                    "none" if self.best is None else f"{self.best:.4f}",
                    "" if improved else f", {stale} evaluation(s) without improvement")
        patience = self.opts.early_stopping_patience
        if patience and stale >= patience:
            logger.info("early stopping at step %d: %s has not improved for %d evaluations",
                        step, self.metric, stale)
            return True
        return False

    def _save_best(self, step, values):
        from bert_tf.checkpoints import save_weights
        with fileio.atomic_dir(self.best_dir) as tmp:
            save_weights(self.model, tmp, "native", vocab_file=self.opts.vocab_file)
            write_eval_results(os.path.join(tmp, "eval_results.txt"),
                               dict(values, global_step=step, best_metric=self.metric))
        self.best = float(values[self.metric])
        logger.info("new best %s = %.4f at step %d: saved in %s", self.metric, self.best, step,
                    self.best_dir)

    def best_step(self):
        results = os.path.join(self.best_dir, "eval_results.txt")
        return int(read_eval_results(results)["global_step"]) if fileio.exists(results) else None


# --------------------------------------------------------------------------- the job
def build_model(opts, num_labels):
    from bert_tf.model import BertClassifier, BertEncoder
    return BertClassifier(BertEncoder(opts.config), num_labels)


def num_train_steps(num_examples, opts):
    """google-research's int(examples / batch * epochs) and its warm-up steps."""
    steps = int(num_examples / opts.train_batch_size * opts.num_train_epochs)
    if steps < 1:
        raise ValueError(f"no training steps: {num_examples} examples / batch "
                         f"{opts.train_batch_size} x {opts.num_train_epochs} epochs < 1")
    return steps, int(steps * opts.warmup_proportion)


def _check_vocab_fits(opts, inputs):
    size = inputs.preprocessor.tokenizer.vocabulary_size()
    if size > opts.config.vocab_size:
        raise ValueError(f"--vocab_file {opts.vocab_file} has {size} tokens but the model's "
                         f"vocab_size is {opts.config.vocab_size}: wrong vocabulary for this "
                         f"model")


def _log_values(title, values):
    logger.info("***** %s *****", title)
    for key in sorted(values):
        logger.info("  %s = %s", key, values[key])


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


def run(opts, strategy):
    """Trains, evaluates and/or predicts. Returns {"train", "eval", "predict"} (values or
    None; "predict" maps output file kinds to paths)."""
    from bert_tf.tasks.classification import ClassificationTask

    if not opts.vocab_file:
        opts.vocab_file = default_vocab_file(opts.init_checkpoint)
        if opts.vocab_file:
            logger.info("vocab_file: %s (beside --init_checkpoint)", opts.vocab_file)
    opts.validate()
    os.makedirs(opts.output_dir, exist_ok=True)
    opts.config.to_json_file(os.path.join(opts.output_dir, "bert_config.json"))
    data = TaskData(opts)
    inputs = Inputs(opts, data)
    _check_vocab_fits(opts, inputs)
    logger.info("task %s: %s", data.task, "regression" if data.is_regression
                else f"{data.num_labels} labels {data.labels}")

    train_columns = None
    steps, warmup = 1, 0
    if opts.do_train:
        train_columns = inputs.columns(data.examples("train"))
        steps, warmup = num_train_steps(train_columns.num_examples, opts)
    eval_columns = None
    if opts.do_eval or opts.eval_every_steps:
        eval_columns = inputs.columns(data.examples("dev"))

    with strategy.scope():
        model = build_model(opts, data.num_labels)
        report = init_from_checkpoint(model, opts.init_checkpoint)
        optimizer = make_optimizer(opts.learning_rate, steps, warmup,
                                   mixed_precision=opts.mixed_precision)
    steps_per_loop = opts.iterations_per_loop
    if opts.eval_every_steps:
        steps_per_loop = math.gcd(steps_per_loop, opts.eval_every_steps)
    trainer = make_trainer(model, optimizer, ClassificationTask(data.is_regression), strategy,
                           opts.output_dir, iterations_per_loop=steps_per_loop,
                           save_checkpoints_steps=opts.save_checkpoints_steps,
                           jit_compile=opts.jit_compile)
    result = {"train": None, "eval": None, "predict": None}
    evaluated = {}   # step -> eval values of the model at that step

    eval_source = None
    if eval_columns is not None:
        eval_source = inputs.source(eval_columns, f"{data.task}_dev",
                                    in_memory=bool(opts.eval_every_steps))

    def evaluate_main(step):
        values = evaluate(trainer, inputs, eval_columns, eval_source, data.info.metric_task,
                          what=f"eval@{step}")
        values["global_step"] = step
        write_eval_summary(opts.output_dir, step, values)
        return values

    if opts.do_train:
        logger.info("***** Running training: %d examples, batch %d, %d steps (%d warm-up) "
                    "*****", train_columns.num_examples, opts.train_batch_size, steps, warmup)
        train_fn = inputs.dataset_fn(inputs.source(train_columns, f"{data.task}_train"),
                                     opts.train_batch_size, True)
        keeper, after_loop = None, None
        if opts.eval_every_steps:
            resumed = trainer.step if trainer.restore() else 0
            metric = opts.keep_best_metric or data.info.primary_metric
            keeper = BestKeeper(opts, metric, evaluate_main, model, resumed)
            every = opts.eval_every_steps

            def after_loop(step, values):
                if step % every and step < steps:
                    return False
                return keeper(step, values)
        result["train"] = trainer.train(train_fn, steps, opts.train_batch_size,
                                        after_loop=after_loop)
        if result["train"]["preempted"]:
            return result
        if keeper is not None:
            evaluated.update(keeper.results)
            best_step = keeper.best_step()
            if opts.load_best_at_end and best_step is not None and best_step != trainer.step:
                from bert_tf.checkpoints import load_weights
                load_weights(model, keeper.best_dir)
                logger.info("loaded the best weights (step %d, %s = %s) for eval/predict",
                            best_step, keeper.metric, keeper.best)
                result["best_step"] = best_step
    elif trainer.restore() is None:
        if report is None:
            raise ValueError(f"nothing to evaluate or predict with: {opts.output_dir} has no "
                             f"checkpoint and no --init_checkpoint was given")
        if report.missing:
            logger.warning("the classifier head is freshly initialised (%s has none): "
                           "eval/predict results are those of an untrained head",
                           opts.init_checkpoint)
    step = result.get("best_step", trainer.step)

    if opts.do_eval:
        values = dict(evaluated[step]) if step in evaluated else evaluate_main(step)
        for companion, examples in _companions_with(data, "dev"):
            from bert_tf.data.classification import get_task_info
            columns = inputs.columns(examples)
            extra = evaluate(trainer, inputs, columns,
                             inputs.source(columns, f"{companion}_dev"),
                             get_task_info(companion).metric_task, what=f"eval {companion}")
            extra = {f"{k}{_metric_suffix(companion)}": v for k, v in extra.items()}
            write_eval_summary(opts.output_dir, step, extra)
            values.update(extra)
        values["global_step"] = step
        path = write_eval_results(os.path.join(opts.output_dir, "eval_results.txt"), values)
        _log_values(f"Eval results ({path})", values)
        result["eval"] = values

    if opts.do_predict:
        result["predict"] = predict_tasks(trainer, inputs, data)
    return result


def _write_predictions(path, indices, cells):
    fileio.atomic_write_text(path, "index\tprediction\n" + "".join(
        f"{i}\t{c}\n" for i, c in zip(indices, cells)))
    return path


def predict_tasks(trainer, inputs, data):
    """Predicts the test set of the task and its companions; writes test_results[_<task>].tsv
    and the GLUE submission file (or test_predictions.tsv outside GLUE). Returns the paths."""
    from bert_tf.data.classification import (get_task_info, write_glue_submission,
                                             write_test_results)
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
            paths["test_predictions.tsv"] = _write_predictions(
                os.path.join(opts.output_dir, "test_predictions.tsv"), indices, cells)
        logger.info("predictions of %d %s test examples: %s", columns.num_examples, info.name,
                    ", ".join(p for k, p in paths.items()))
    return paths
