"""What the fine-tuning jobs (classifier, SQuAD, NER, SWAG) share beyond bert_tf.jobs.options:
their options and checks, google-research's training-step count, training (with periodic
evaluation and the best checkpoint) or else restoring the weights to evaluate with, and gathering
predictions in example order."""

import dataclasses
import logging
import time

import numpy as np

from bert_tf import fileio
from bert_tf.jobs.options import TrainingOptions
from bert_tf.jobs.results import write_eval_summary
from bert_tf.options import option
from bert_tf.training.best import BestKeeper, EvaluationOptions
from bert_tf.training.distribution import is_chief

logger = logging.getLogger("bert_tf")


@dataclasses.dataclass(kw_only=True)
class FinetuneOptions(TrainingOptions, EvaluationOptions):
    """google-research's fine-tuning flags, periodic evaluation (EvaluationOptions) and
    freezing. Subclasses check their input flags in validate_inputs()."""

    do_predict: bool = option(False, "Whether to run prediction on the test set.")
    predict_batch_size: int = option(8, "Total batch size for predict.")
    num_train_epochs: float = option(3.0, "Total number of training epochs to perform.")
    warmup_proportion: float = option(
        0.1, "Proportion of training to perform linear learning rate warmup for.")
    freeze_encoder: bool = option(
        False, "Train the task head only: every encoder weight stays as loaded.")
    freeze_layers: int = option(
        0, "Freeze the embeddings and the first N Transformer layers (0: none).")

    positive_fields = TrainingOptions.positive_fields + ("predict_batch_size",)

    def validate(self):
        if not (self.do_train or self.do_eval or self.do_predict):
            raise ValueError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
        if not self.output_dir:
            raise ValueError("--output_dir is required")
        self.validate_inputs()
        self.validate_model()
        self.validate_training()
        self.validate_evaluation()

    def validate_inputs(self):
        """Checks the task's input flags (data files, task name); subclasses implement it."""

    def validate_evaluation(self):
        """EvaluationOptions' checks and the freezing flags'."""
        super().validate_evaluation()
        if self.freeze_encoder and self.freeze_layers:
            raise ValueError("give --freeze_encoder (the whole encoder) or --freeze_layers=N "
                             "(embeddings and the first N layers), not both")
        if self.freeze_layers < 0:
            raise ValueError(f"--freeze_layers must be >= 0, got {self.freeze_layers}")
        if self.freeze_layers > self.config.num_hidden_layers:
            raise ValueError(f"--freeze_layers={self.freeze_layers} but the model has "
                             f"{self.config.num_hidden_layers} layers")

    def validate_training(self):
        super().validate_training()
        if self.do_train and self.num_train_epochs <= 0:
            raise ValueError(f"--num_train_epochs must be > 0, got {self.num_train_epochs}")
        if not 0.0 <= self.warmup_proportion <= 1.0:
            raise ValueError(f"--warmup_proportion must be in [0, 1], got "
                             f"{self.warmup_proportion}")


@dataclasses.dataclass(kw_only=True)
class FileFinetuneOptions(FinetuneOptions):
    """Fine-tuning on --train_file, --eval_file and --predict_file, each needed (and checked to
    exist) when its --do_ flag is set."""

    train_file: str = option(None, "The file to train on (--do_train).")
    eval_file: str = option(None, "The labelled file to evaluate on (--do_eval, "
                            "--eval_every_steps).")
    predict_file: str = option(None, "The file to predict (--do_predict).")
    do_eval: bool = option(False, "Whether to run eval on --eval_file.")

    def validate_inputs(self):
        for stage in ("train", "eval", "predict"):
            path = getattr(self, f"{stage}_file")
            if getattr(self, f"do_{stage}") and not path:
                raise ValueError(f"--{stage}_file is required with --do_{stage}")
            if getattr(self, f"do_{stage}") and not fileio.exists(path):
                raise FileNotFoundError(f"--{stage}_file {path} does not exist")
        if self.eval_every_steps and self.do_train:
            if not self.eval_file:
                raise ValueError("--eval_every_steps evaluates on --eval_file: give one")
            if not fileio.exists(self.eval_file):
                raise FileNotFoundError(f"--eval_file {self.eval_file} does not exist")


def train_steps(opts, num_examples, what="examples"):
    """google-research's (num_train_steps, num_warmup_steps): int(examples / batch * epochs)
    and warmup_proportion of them."""
    steps = int(num_examples / opts.train_batch_size * opts.num_train_epochs)
    if steps < 1:
        raise ValueError(f"no training steps: {num_examples} {what} / batch "
                         f"{opts.train_batch_size} x {opts.num_train_epochs} epochs < 1")
    return steps, int(steps * opts.warmup_proportion)


@dataclasses.dataclass
class TrainingPlan:
    """What train_with_evaluation runs. Without --do_train only `kind` matters (which weights to
    restore). For --eval_every_steps: evaluate(step) -> {metric: value} of the model now
    trained, default_metric (what --keep_best_metric keeps when not given), best_files
    ({name: text} best/ keeps beside the weights) and keep_evaluations(steps), told after each
    evaluation which steps' evaluations a later stage may still reuse (the latest and the best)
    so that the caller can drop the others'."""

    dataset_fn: object = None    # the Trainer's training input (None without --do_train)
    steps: int = 1               # training steps
    warmup: int = 0              # of which linear warm-up
    description: str = None      # how the log names the training input
    kind: str = None             # in messages; None (pre-training): no restore checks
    evaluate: object = None
    default_metric: str = None
    best_files: dict = None
    keep_evaluations: object = None


def train_or_restore(opts, setup, plan, after_loop=None, loop_boundary=0):
    """--do_train: trains for plan.steps (resuming from output_dir) and returns the training
    values. Otherwise: restores output_dir's latest checkpoint, else keeps the init_checkpoint
    weights (warning when the plan's task head starts fresh; no weights at all is an error), and
    returns None. kind=None (pre-training): whatever weights there are, without checks."""
    if opts.do_train:
        logger.info("***** Running training: %s, batch %d, %d steps (%d warm-up) *****",
                    plan.description, opts.train_batch_size, plan.steps, plan.warmup)
        return setup.trainer.train(plan.dataset_fn, plan.steps, opts.train_batch_size,
                                   after_loop=after_loop, loop_boundary=loop_boundary)
    if setup.trainer.restore() is not None or plan.kind is None:
        return None
    if setup.report is None:
        raise ValueError(f"nothing to evaluate or predict with: {opts.output_dir} has no "
                         f"checkpoint and no --init_checkpoint was given")
    if setup.report.missing:
        logger.warning("the %s head is freshly initialised (%s has none): eval/predict results "
                       "are those of an untrained head", plan.kind, opts.init_checkpoint)
    return None


@dataclasses.dataclass
class Trained:
    """What train_with_evaluation did."""

    train: dict                  # Trainer.train's values; None without --do_train
    step: int                    # the training step of the weights the model now holds
    best_step: int = None        # the step of output_dir/best/ (periodic evaluation only)
    loaded_best: bool = False    # whether the model holds best/'s weights (--load_best_at_end)
    evaluated: dict = dataclasses.field(default_factory=dict)   # step -> eval values
    keeper: BestKeeper = None

    @property
    def preempted(self):
        return bool(self.train and self.train["preempted"])

    def evaluation(self, step=None):
        """A copy of the values of the evaluation already run at `step` (default: the model's
        step), or None."""
        step = self.step if step is None else step
        return dict(self.evaluated[step]) if step in self.evaluated else None


def train_with_evaluation(opts, setup, plan):
    """train_or_restore with the periodic evaluation of EvaluationOptions: with --do_train and
    --eval_every_steps, plan.evaluate(step) -> {metric: value} runs every eval_every_steps
    steps and after the last one (training loops end on every evaluation step);
    its values go to TensorBoard (output_dir/eval) and to a BestKeeper on
    --keep_best_metric (default plan.default_metric), which keeps output_dir/best/ (with
    plan.best_files beside the weights, bert_config.json, vocab.txt and eval_results.txt) and
    eval_history.jsonl and stops training after --early_stopping_patience evaluations without
    improvement; plan.keep_evaluations then hears which evaluations a later stage may reuse.
    With --load_best_at_end the model then gets the best weights back. Returns a Trained:
    evaluations already run are in `evaluated`, so a final --do_eval at that step need not run
    again."""
    trainer = setup.trainer
    keeper = None
    steps = plan.steps
    every = getattr(opts, "eval_every_steps", 0) if opts.do_train else 0
    if every:
        if plan.evaluate is None or not (opts.keep_best_metric or plan.default_metric):
            raise ValueError("--eval_every_steps: this runner has no periodic evaluation")
        chief = is_chief(trainer.strategy)    # MultiWorker: only the chief writes files
        resumed = trainer.step if trainer.restore() else 0

        def evaluate_periodically(step):
            values = dict(plan.evaluate(step), global_step=step)
            if chief:
                write_eval_summary(opts.output_dir, step, values)
            return values

        keeper = BestKeeper(opts.output_dir, opts.keep_best_metric or plan.default_metric,
                            evaluate_periodically, model=setup.model, vocab_file=opts.vocab_file,
                            files=plan.best_files, patience=opts.early_stopping_patience,
                            resumed_step=resumed, is_chief=chief)

        def after_loop(step, values):
            if step % every and step < steps:
                return False
            stop = keeper(step, values)
            if plan.keep_evaluations is not None:
                plan.keep_evaluations({step, keeper.best_step})
            return stop

        stale = keeper.evaluations_without_improvement()
        if keeper.patience and stale >= keeper.patience:
            # stopped early before: a rerun of the same command does not train on
            logger.info("training stopped early at step %d (%d evaluations without "
                        "improvement): not training further", resumed, stale)
            steps = resumed
    else:
        after_loop = None

    trained = Trained(train_or_restore(opts, setup, dataclasses.replace(plan, steps=steps),
                                       after_loop=after_loop, loop_boundary=every),
                      trainer.step, keeper=keeper)
    if keeper is not None and steps == trainer.step and trained.train is not None:
        stale = keeper.evaluations_without_improvement()
        trained.train["stopped_early"] = bool(keeper.patience and stale >= keeper.patience)
    if keeper is None or trained.preempted:
        return trained
    trained.evaluated.update(keeper.results)
    trained.best_step = keeper.best_step
    if opts.load_best_at_end and keeper.best_step is not None:
        if keeper.best_step != trainer.step:
            keeper.load_best(setup.model)
            logger.info("loaded the best weights (step %d, %s = %s) from %s", keeper.best_step,
                        keeper.metric, keeper.best, keeper.best_dir)
        trained.step, trained.loaded_best = keeper.best_step, True
    return trained


def predict_logits(trainer, dataset_fn, num_examples, what="predict", key="logits"):
    """Float64 outputs[key] [num_examples, ...] in example order (the dataset's
    "example_index" feature), logging progress. Every example must come back exactly once
    (batches are never padded with fake examples)."""
    values, seen = None, np.zeros(num_examples, bool)
    start = last_log = time.perf_counter()
    for outputs, features in trainer.predict(dataset_fn, feature_keys=("example_index",)):
        index = features["example_index"].astype(np.int64)
        batch = outputs[key].astype(np.float64)
        if values is None:
            values = np.zeros((num_examples,) + batch.shape[1:], np.float64)
        if np.any(seen[index]) or len(np.unique(index)) != len(index):
            raise RuntimeError(f"{what}: example(s) predicted twice (index "
                               f"{int(index[seen[index]][0]) if np.any(seen[index]) else index})")
        values[index] = batch
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
    return values


def log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def softmax(logits):
    return np.exp(log_softmax(logits))


def cross_entropy(logits, labels):
    """Mean softmax cross-entropy of [N, C] logits against N label ids (the training loss)."""
    labels = np.asarray(labels)
    return float(-np.mean(log_softmax(logits)[np.arange(len(labels)), labels]))
