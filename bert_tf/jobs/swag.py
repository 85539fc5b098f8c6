"""run_swag: multiple-choice fine-tuning, evaluation and prediction on SWAG csv files.

Each example's endings are scored by a BertMultipleChoice (one shared vector on the pooled output
of every (context, ending) pair) and trained with softmax cross-entropy over the choices.
Training follows google-research/bert's recipe: num_train_steps = int(examples / batch *
epochs), linear warm-up over warmup_proportion, AdamW.

SwagTask is its task object for bert_tf.jobs.driver.run_task, which runs every stage:
--eval_every_steps evaluates on --eval_file during training and keeps the best weights
(eval_accuracy by default) in output_dir/best/.

Files in output_dir: eval_results.txt (eval_accuracy, eval_loss, global_step),
test_predictions.csv (example id, predicted ending, one probability per ending), checkpoints,
best/ and eval_history.jsonl (--eval_every_steps), TensorBoard summaries and log.txt.
"""

import dataclasses
import logging
import os
import time

import numpy as np

from bert_tf import contract as _contract, fileio
from bert_tf.jobs.checks import load_tokenizer
from bert_tf.jobs.options import TrainingOptions
from bert_tf.training.setup import arrays_dataset_fn
from bert_tf.jobs.driver import Evaluation, FinetuneTask, TrainingData, run_task
from bert_tf.jobs.finetune import FileFinetuneOptions, cross_entropy, predict_logits, softmax
from bert_tf.options import option, option_like

logger = logging.getLogger("bert_tf")

DEFAULT_METRIC = "eval_accuracy"


@dataclasses.dataclass(kw_only=True)
class SwagOptions(FileFinetuneOptions):
    max_seq_length: int = option(
        _contract.MAX_SEQ_LENGTH, "Maximum length of each (context, ending) pair after "
        "WordPiece tokenization; longer pairs are truncated.")
    train_batch_size: int = option(16, "Total batch size for training (examples).")
    learning_rate: float = option_like(TrainingOptions, "learning_rate", default=2e-5)
    train_file: str = option(None, "SWAG csv to train on (either layout, labelled).")
    eval_file: str = option(None, "Labelled SWAG csv to evaluate on (--do_eval).")
    predict_file: str = option(None, "SWAG csv to predict (--do_predict), e.g. test.csv.")
    do_predict: bool = option(False, "Whether to predict --predict_file.")
    num_choices: int = option(
        4, "train_full.csv layout: the gold ending plus this many - 1 distractors (2-5). The "
        "train.csv layout always has 4.")
    max_train_examples: int = option(0, "Use only the first N training rows (0: all).")
    max_eval_examples: int = option(0, "Use only the first N eval rows (0: all).")
    skip_bad_rows: bool = option(
        False, "Skip malformed rows (and count them) instead of stopping at the first.")

    serving_kind = "multiple_choice"
    min_seq_length = 4                   # [CLS] context [SEP] ending [SEP]

    def validate(self):
        super().validate()
        if not 2 <= self.num_choices <= 5:
            raise ValueError(f"--num_choices must be in 2..5, got {self.num_choices}")
        if self.max_train_examples < 0 or self.max_eval_examples < 0:
            raise ValueError("--max_train_examples and --max_eval_examples must be >= 0")


class SwagData:
    """Examples of one csv file and their packed arrays."""

    def __init__(self, opts, tokenizer, path, what, limit=0, require_labels=False):
        from bert_tf.data.swag import encode_swag, read_swag
        start = time.perf_counter()
        examples, layout, skipped = read_swag(path, opts.num_choices, opts.skip_bad_rows)
        if limit:
            examples = examples[:limit]
        if require_labels and any(e.label is None for e in examples):
            raise ValueError(f"{path} has no label column: {what} needs labelled examples")
        self.examples = examples
        self.arrays = encode_swag(examples, tokenizer, opts.max_seq_length)
        lengths = self.arrays["input_mask"].sum(-1)
        logger.info("%s %s (%s layout): %d examples x %d choices%s, %d%% of choices truncated "
                    "to %d tokens (%.1f s)", what, path, layout, len(examples),
                    self.arrays["input_ids"].shape[1],
                    f" ({skipped} bad rows skipped)" if skipped else "",
                    round(100 * float(np.mean(lengths >= opts.max_seq_length))),
                    opts.max_seq_length, time.perf_counter() - start)

    def dataset_fn(self, global_batch_size, is_training, seed=None):
        return arrays_dataset_fn(self.arrays, global_batch_size, is_training, seed)

    def logits(self, trainer, batch_size, what):
        """[N, C] float64 logits in example order."""
        return predict_logits(trainer, self.dataset_fn(batch_size, False), len(self.examples),
                              what)


def evaluate_logits(logits, labels):
    """eval_accuracy and eval_loss (mean cross-entropy) of [N, C] logits."""
    return {"eval_accuracy": float(np.mean(logits.argmax(-1) == np.asarray(labels))),
            "eval_loss": cross_entropy(logits, labels)}


def write_predictions(path, examples, probabilities):
    """CSV: id, prediction, prob_0..prob_{C-1} (and label when known); atomic."""
    import csv
    import io
    choices = probabilities.shape[1]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    has_label = all(e.label is not None for e in examples)
    writer.writerow(["id", "prediction"] + [f"prob_{c}" for c in range(choices)]
                    + (["label"] if has_label else []))
    for example, probs in zip(examples, probabilities):
        writer.writerow([example.example_id, int(probs.argmax())]
                        + [f"{p:.6f}" for p in probs] + ([example.label] if has_label else []))
    fileio.atomic_write_text(path, buffer.getvalue())
    return str(path)


def build_model(opts):
    from bert_tf.model import BertEncoder, BertMultipleChoice
    return BertMultipleChoice(BertEncoder(opts.config))


class SwagTask(FinetuneTask):
    """Multiple choice on SWAG csv files: eval_accuracy, test_predictions.csv. prepare() reads
    the tokenizer (self.tokenizer); the export serves --num_choices endings per row (the model
    scores each ending alone, so it serves any count), whichever files were read."""

    kind = "multiple_choice"
    default_metric = DEFAULT_METRIC

    def prepare(self):
        self.tokenizer = load_tokenizer(self.opts)
        return {}

    def _data(self, path, what, limit=0, require_labels=False):
        return SwagData(self.opts, self.tokenizer, path, what, limit, require_labels)

    def training_data(self):
        opts = self.opts
        train = self._data(opts.train_file, "train", opts.max_train_examples, True)
        return TrainingData(train.dataset_fn(opts.train_batch_size, True, opts.seed),
                            len(train.examples))

    def loss(self, training):
        from bert_tf.objectives.multiple_choice import MultipleChoiceObjective
        return MultipleChoiceObjective()

    def build_model(self):
        return build_model(self.opts)

    def load_eval_data(self):
        return self._data(self.opts.eval_file, "eval", self.opts.max_eval_examples, True)

    def evaluate(self, trainer, step, eval_set):
        logits = eval_set.logits(trainer, self.opts.eval_batch_size, f"eval@{step}")
        return Evaluation(step, evaluate_logits(logits, [e.label for e in eval_set.examples]))

    def predict(self, trainer, evaluation, eval_set, decision):
        data = self._data(self.opts.predict_file, "predict")
        logits = data.logits(trainer, self.opts.predict_batch_size, "predict")
        path = write_predictions(os.path.join(self.opts.output_dir, "test_predictions.csv"),
                                 data.examples, softmax(logits))
        logger.info("predictions of %d examples: %s", len(data.examples), path)
        return path

    def contract(self, decision=None):
        return self.opts.contract(num_choices=self.opts.num_choices)


def run(opts, strategy):
    """Trains, evaluates, predicts and/or exports (bert_tf.jobs.driver.run_task). Returns
    {"train", "eval", "predict", "export"} (values, metrics, predictions path, SavedModel
    version path)."""
    return run_task(SwagTask(opts), strategy)
