"""What the fine-tuning jobs (classifier, SQuAD, NER, SWAG) share beyond bert_tf.jobs.common:
their options and checks, google-research's training-step count, training or else restoring the
weights to evaluate with, and gathering predictions in example order."""

import dataclasses
import logging
import time

import numpy as np

from bert_tf import fileio
from bert_tf.jobs.common import TrainingOptions

logger = logging.getLogger("bert_tf")


@dataclasses.dataclass(kw_only=True)
class FinetuneOptions(TrainingOptions):
    """google-research's fine-tuning flags. Subclasses check their input flags in
    validate_inputs()."""

    do_predict: bool = False
    predict_batch_size: int = 8
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1

    positive_fields = TrainingOptions.positive_fields + ("predict_batch_size",)

    def validate(self):
        if not (self.do_train or self.do_eval or self.do_predict):
            raise ValueError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
        if not self.output_dir:
            raise ValueError("--output_dir is required")
        self.validate_inputs()
        self.validate_model()
        self.validate_training()

    def validate_inputs(self):
        """Checks the task's input flags (data files, task name); subclasses implement it."""

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

    train_file: str = None
    eval_file: str = None
    predict_file: str = None

    def validate_inputs(self):
        for stage in ("train", "eval", "predict"):
            path = getattr(self, f"{stage}_file")
            if getattr(self, f"do_{stage}") and not path:
                raise ValueError(f"--{stage}_file is required with --do_{stage}")
            if getattr(self, f"do_{stage}") and not fileio.exists(path):
                raise FileNotFoundError(f"--{stage}_file {path} does not exist")


def train_steps(opts, num_examples, what="examples"):
    """google-research's (num_train_steps, num_warmup_steps): int(examples / batch * epochs)
    and warmup_proportion of them."""
    steps = int(num_examples / opts.train_batch_size * opts.num_train_epochs)
    if steps < 1:
        raise ValueError(f"no training steps: {num_examples} {what} / batch "
                         f"{opts.train_batch_size} x {opts.num_train_epochs} epochs < 1")
    return steps, int(steps * opts.warmup_proportion)


def train_or_restore(opts, setup, dataset_fn, num_steps, num_warmup_steps, what, head,
                     after_loop=None):
    """--do_train: trains for num_steps (resuming from output_dir) and returns the training
    values. Otherwise: restores output_dir's latest checkpoint, else keeps the init_checkpoint
    weights (warning when the `head` head starts fresh; no weights at all is an error), and
    returns None."""
    if opts.do_train:
        logger.info("***** Running training: %s, batch %d, %d steps (%d warm-up) *****", what,
                    opts.train_batch_size, num_steps, num_warmup_steps)
        return setup.trainer.train(dataset_fn, num_steps, opts.train_batch_size,
                                   after_loop=after_loop)
    if setup.trainer.restore() is not None:
        return None
    if setup.report is None:
        raise ValueError(f"nothing to evaluate or predict with: {opts.output_dir} has no "
                         f"checkpoint and no --init_checkpoint was given")
    if setup.report.missing:
        logger.warning("the %s head is freshly initialised (%s has none): eval/predict results "
                       "are those of an untrained head", head, opts.init_checkpoint)
    return None


def preempted(result):
    """Whether training was interrupted (SIGTERM): the job stops; a rerun resumes."""
    return bool(result["train"] and result["train"]["preempted"])


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
