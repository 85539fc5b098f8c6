"""One fine-tuning driver for every task. A FinetuneTask says what is particular to its task:
how its data is read, which model and loss it trains, how a model is evaluated, what it
predicts and how it is exported. run_task owns everything else, in one order for all tasks:
output_dir (with run_options.json when training), the training-step count, the trainer,
training with periodic evaluation (best checkpoint, early stopping, best weights at the end),
the final evaluation, prediction and export.

    class MyTask(FinetuneTask):
        kind = "classifier"
        ...
    result = run_task(MyTask(opts), strategy)   # {"train", "eval", "predict", "export"}
"""

import dataclasses
import json
import logging
import os

from bert_tf import fileio
from bert_tf.contract import FILE as CONTRACT_FILE
from bert_tf.jobs.options import start
from bert_tf.jobs.results import export_model, record_eval
from bert_tf.training.setup import build_trainer
from bert_tf.jobs.finetune import TrainingPlan, train_steps, train_with_evaluation
from bert_tf.options import option_values

logger = logging.getLogger("bert_tf")


@dataclasses.dataclass
class TrainingData:
    """A task's training input: the Trainer's dataset_fn, how many `unit`s one epoch has
    (google-research's step count is int(count / batch * epochs)), how the log names it, and
    the gold label ids the loss weighs (what --class_weights=auto counts; None when the task
    has no class weights)."""

    dataset_fn: object
    count: int
    unit: str = "examples"
    description: str = None
    label_ids: object = None

    def __post_init__(self):
        if self.description is None:
            self.description = f"{self.count} {self.unit}"


@dataclasses.dataclass
class Evaluation:
    """One evaluation of the model at `step`: its metrics and the task's artifact, whatever
    record_evaluation and predict need to write their files without predicting again (a
    confusion matrix, predictions), or None."""

    step: int
    metrics: dict
    artifact: object = None


class FinetuneTask:
    """What run_task asks of a task. `opts` is the job's FinetuneOptions subclass. Stages pass
    values: training_data's TrainingData goes to loss, load_eval_data's eval set to evaluate,
    record_evaluation and predict, an Evaluation to record_evaluation, decide, predict and
    export_options. The one state a task keeps on itself is what prepare() reads for every
    stage (the tokenizer, the labels): set there, only read afterwards."""

    kind = None              # a bert_tf.kinds name: messages, run_options.json
    default_metric = None    # what --keep_best_metric keeps when not given
    teacher = None           # prepare() reads --teacher_checkpoint's run (jobs.teachers.Teacher)

    def __init__(self, opts):
        self.opts = opts

    # -- before training
    def prepare(self):
        """Runs once, after output_dir exists: reads what every stage needs (the tokenizer,
        the labels). Returns the files best/ keeps beside the weights ({name: text})."""
        return {}

    def run_record(self):
        """What run_options.json records beside the task's kind and options ({key: JSON-able
        value}): the teacher of a distilled run."""
        return {} if self.teacher is None else {"teacher": self.teacher.record()}

    def teacher_outputs(self, key, compute):
        """compute()'s {name: array}, the teacher's outputs on the training data: computed
        once and kept in output_dir/teacher_targets.npz, read back by a resumed or repeated run
        while the teacher and `key` (JSON-able: what identifies the training rows) stay the
        same. The random seed is set again afterwards, so that the student starts as it would
        without the teacher."""
        import keras

        from bert_tf.jobs.teachers import TARGETS_FILE, cached_targets, teacher_identity
        targets = cached_targets(os.path.join(self.opts.output_dir, TARGETS_FILE),
                                 dict(key, teacher=teacher_identity(self.teacher),
                                      task=self.kind), compute)
        keras.utils.set_random_seed(self.opts.seed)
        return targets

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
        """Reads the evaluation data and returns it: the eval set that evaluate (periodic and
        final evaluations share it), record_evaluation and predict are given."""
        raise NotImplementedError

    def evaluate(self, trainer, step, eval_set):
        """The Evaluation of the model now in `trainer` on `eval_set`."""
        raise NotImplementedError

    def record_evaluation(self, trainer, evaluation, eval_set, summarized):
        """Writes the final evaluation's files and returns its metrics; `summarized`: the
        metrics are in TensorBoard already (a periodic evaluation of this step)."""
        return record_eval(self.opts, evaluation.step, dict(evaluation.metrics),
                           summary_keys=[] if summarized else None)

    # -- after training
    def decide(self, trained, evaluation):
        """What predict and export_options both apply to the model's outputs, decided once
        from `trained` (the finetune.Trained of the training stage) and the Evaluation of the
        model's step (or None); None by default."""
        return None

    def predict(self, trainer, evaluation, eval_set, decision):
        """--do_predict: writes the predictions and returns what run_task reports of them.
        `evaluation`: the Evaluation of the model's step, or None; `eval_set`: load_eval_data's,
        or None when it did not run; `decision`: decide()'s."""
        raise NotImplementedError

    def contract(self, decision=None):
        """The InferenceContract of the model this run trains (bert_tf.contract): what its
        export and bert_tf.predict feed it. `decision`: decide()'s, None before it is made."""
        return self.opts.contract()

    def decision_of(self, values):
        """What decide() would decide from an evaluation's `values` alone (best/ keeps the
        contract of its own evaluation); None by default."""
        return None


def write_run_options(task):
    """Writes output_dir/run_options.json: the task's kind, every option of the run, as flags
    name them, and the task's run_record() (a record of the command). Returns {its name: its
    text} for best/."""
    from bert_tf.names import RUN_OPTIONS
    text = json.dumps(dict(task.run_record(), task=task.kind, options=option_values(task.opts)),
                      indent=2, sort_keys=True, default=str) + "\n"
    fileio.atomic_write_text(os.path.join(task.opts.output_dir, RUN_OPTIONS), text)
    return {RUN_OPTIONS: text}


def record_options(task):
    """Writes output_dir/run_options.json (write_run_options) and output_dir/inference.json
    (the model's contract, bert_tf.contract). Returns {name: text, or for the contract a
    function of an evaluation's values: its own threshold} for best/."""
    files = write_run_options(task)
    task.contract().write(task.opts.output_dir)
    return dict(files, **{
        CONTRACT_FILE: lambda values: task.contract(task.decision_of(values)).text()})


def training_plan(task):
    """(training data, steps, warm-up steps) of a prepared task: what run_task trains on, with
    the step counts the options give for its size; (None, 1, 0) without do_train."""
    if not task.opts.do_train:
        return None, 1, 0
    training = task.training_data()
    return (training, *train_steps(task.opts, training.count, training.unit))


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
    training, steps, warmup = training_plan(task)
    setup = build_trainer(opts, strategy, task.build_model, task.loss(training), steps, warmup)
    trainer = setup.trainer
    result = {"train": None, "eval": None, "predict": None, "export": None}

    periodic = bool(opts.do_train and opts.eval_every_steps)
    eval_set = task.load_eval_data() if task.needs_eval_data(periodic) else None
    evaluations = {}                 # step -> Evaluation: the latest and the best periodic ones

    def evaluate(step):
        evaluations[step] = task.evaluate(trainer, step, eval_set)
        return evaluations[step].metrics

    def keep_evaluations(steps):
        for step in [s for s in evaluations if s not in steps]:
            del evaluations[step]

    trained = train_with_evaluation(opts, setup, TrainingPlan(
        training.dataset_fn if training else None, steps, warmup,
        training.description if training else None, kind=task.kind, evaluate=evaluate,
        default_metric=task.default_metric, best_files=best_files,
        keep_evaluations=keep_evaluations))
    result["train"] = trained.train
    if trained.preempted:
        return result
    if trained.best_step is not None:
        result["best_step"] = trained.best_step

    # a periodic evaluation of the model's step is reused, with its artifact and the metrics
    # as TensorBoard has them
    step, metrics = trained.step, trained.evaluation()
    summarized = metrics is not None and step in evaluations
    evaluation = None
    if metrics is not None:
        evaluation = Evaluation(step, metrics, evaluations[step].artifact if summarized else None)
    if task.evaluates_at_end:
        if not summarized:
            evaluation = task.evaluate(trainer, step, eval_set)
        result["eval"] = task.record_evaluation(trainer, evaluation, eval_set, summarized)
        evaluation = dataclasses.replace(evaluation, metrics=result["eval"])
    decision = task.decide(trained, evaluation)
    if opts.do_predict:
        result["predict"] = task.predict(trainer, evaluation, eval_set, decision)
    contract = task.contract(decision)
    if opts.do_train:
        contract.write(opts.output_dir)
    result["export"] = export_model(opts, setup.model, contract)
    return result
