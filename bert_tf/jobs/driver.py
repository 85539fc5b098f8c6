"""One fine-tuning driver for every task. A FinetuneTask says what is particular to its task:
how its data is read, which model and loss it trains, how a model is evaluated, what it
predicts and how it is exported. run_task owns everything else, in one order for all tasks:
output_dir (with run_options.json when training), the training-step count, the trainer,
training with periodic evaluation (best checkpoint, early stopping, best weights at the end),
the final evaluation, prediction and export.

    class MyTask(FinetuneTask):
        head = "classifier"
        ...
    result = run_task(MyTask(opts), strategy)   # {"train", "eval", "predict", "export"}
"""

import dataclasses
import json
import logging
import os

from bert_tf import fileio
from bert_tf.jobs.options import start
from bert_tf.jobs.results import export_model, record_eval
from bert_tf.training.setup import build_trainer
from bert_tf.jobs.finetune import train_steps, train_with_evaluation
from bert_tf.options import option_values

logger = logging.getLogger("bert_tf")


@dataclasses.dataclass
class TrainingData:
    """A task's training input: the Trainer's dataset_fn, how many `unit`s one epoch has
    (google-research's step count is int(count / batch * epochs)), and how the log names it."""

    dataset_fn: object
    count: int
    unit: str = "examples"
    description: str = None

    def __post_init__(self):
        if self.description is None:
            self.description = f"{self.count} {self.unit}"


class FinetuneTask:
    """What run_task asks of a task. `opts` is the job's FinetuneOptions subclass."""

    head = None              # its kind (a bert_tf.kinds name): messages, run_options.json
    default_metric = None    # what --keep_best_metric keeps when not given

    def __init__(self, opts):
        self.opts = opts

    # -- before training
    def prepare(self):
        """Runs once, after output_dir exists: reads what every stage needs (the tokenizer,
        the labels). Returns the files best/ keeps beside the weights ({name: text})."""
        return {}

    def training_data(self):
        """The TrainingData of --do_train."""
        raise NotImplementedError

    def loss(self, training):
        """The bert_tf.objectives Objective (loss and training metrics) the Trainer optimises;
        `training` is the TrainingData, None without --do_train."""
        raise NotImplementedError

    def build_model(self):
        """A fresh task model (called under the strategy's scope)."""
        raise NotImplementedError

    # -- evaluation
    @property
    def evaluates_at_end(self):
        """Whether the run ends with an evaluation (default: --do_eval)."""
        return self.opts.do_eval

    def needs_eval_data(self, periodic):
        """Whether load_eval_data must run: `periodic` is true with --eval_every_steps."""
        return self.evaluates_at_end or periodic

    def load_eval_data(self):
        """Reads the evaluation data (once: periodic and final evaluations share it)."""
        raise NotImplementedError

    def evaluate(self, trainer, step):
        """(metrics, artifact) of the model now in `trainer`: the artifact is whatever
        record_evaluation and predict need to write their files without predicting again (a
        confusion matrix, predictions), or None."""
        raise NotImplementedError

    def record_evaluation(self, trainer, step, values, artifact, summarized):
        """Writes the final evaluation's files and returns its metrics; `summarized`: the
        values are in TensorBoard already (a periodic evaluation of this step)."""
        return record_eval(self.opts, step, values, summary_keys=[] if summarized else None)

    # -- after training
    def predict(self, trainer, trained, evaluation, artifact):
        """--do_predict: writes the predictions and returns what run_task reports of them.
        `trained`: the finetune.Trained of the training stage; `evaluation` and `artifact`:
        the metrics and artifact of the evaluation of the model's step, or None."""
        raise NotImplementedError

    def export_options(self, trained, evaluation):
        """Keyword arguments of bert_tf.jobs.results.export_model (serving kind and its
        options) for --export_dir; `evaluation`: the metrics of the model's step or None."""
        return {}


def record_options(task):
    """Writes output_dir/run_options.json (the task's head and every option of the run, as
    flags name them: what bert_tf.predict reads a checkpoint's input settings from, and a
    record of the command). Returns {its name: its text} for best/."""
    from bert_tf.names import RUN_OPTIONS
    text = json.dumps({"task": task.head, "options": option_values(task.opts)}, indent=2,
                      sort_keys=True, default=str) + "\n"
    fileio.atomic_write_text(os.path.join(task.opts.output_dir, RUN_OPTIONS), text)
    return {RUN_OPTIONS: text}


def run_task(task, strategy):
    """Trains, evaluates, predicts and/or exports as the options of `task` say. Returns
    {"train", "eval", "predict", "export"} (each None when not run) and "best_step" with
    periodic evaluation. A preempted training run returns before evaluating; rerun the same
    command to resume."""
    opts = task.opts
    start(opts)
    best_files = dict(task.prepare())
    if opts.do_train:
        best_files.update(record_options(task))
    training, steps, warmup = None, 1, 0
    if opts.do_train:
        training = task.training_data()
        steps, warmup = train_steps(opts, training.count, training.unit)
    setup = build_trainer(opts, strategy, task.build_model, task.loss(training), steps, warmup)
    trainer = setup.trainer
    result = {"train": None, "eval": None, "predict": None, "export": None}

    periodic = bool(opts.do_train and opts.eval_every_steps)
    if task.needs_eval_data(periodic):
        task.load_eval_data()
    artifacts = {}                          # step -> the artifact of that step's evaluation

    def evaluate(step):
        values, artifacts[step] = task.evaluate(trainer, step)
        return values

    trained = train_with_evaluation(
        opts, setup, training.dataset_fn if training else None, steps, warmup,
        training.description if training else None, task.head, evaluate, task.default_metric,
        artifacts=artifacts, best_files=best_files)
    result["train"] = trained.train
    if trained.preempted:
        return result
    if trained.best_step is not None:
        result["best_step"] = trained.best_step

    step = trained.step
    values = trained.evaluation()           # a periodic evaluation of this step is reused,
    summarized = values is not None and step in artifacts   # with its artifact
    if task.evaluates_at_end:
        if not summarized:
            values = evaluate(step)
        result["eval"] = task.record_evaluation(trainer, step, values, artifacts[step],
                                                summarized)
    evaluation = result["eval"] or values
    if opts.do_predict:
        result["predict"] = task.predict(trainer, trained, evaluation, artifacts.get(step))
    result["export"] = export_model(opts, setup.model,
                                    **task.export_options(trained, evaluation))
    return result
