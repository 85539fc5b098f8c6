"""run_swag: multiple-choice fine-tuning, evaluation and prediction on SWAG csv files.

Each example's endings are scored by a BertMultipleChoice (one shared vector on the pooled output
of every (context, ending) pair) and trained with softmax cross-entropy over the choices.
Training follows google-research/bert's recipe: num_train_steps = int(examples / batch *
epochs), linear warm-up over warmup_proportion, AdamW.

--eval_every_steps evaluates on --eval_file during training and keeps the best weights
(eval_accuracy by default) in output_dir/best/ (bert_tf.jobs.finetune.train_with_evaluation).

Files in output_dir: eval_results.txt (eval_accuracy, eval_loss, global_step),
test_predictions.csv (example id, predicted ending, one probability per ending), checkpoints,
best/ and eval_history.jsonl (--eval_every_steps), TensorBoard summaries and log.txt.
"""

import dataclasses
import logging
import os
import time

import numpy as np

from bert_tf import fileio
from bert_tf.jobs.common import (arrays_dataset_fn, build_trainer, export_model, load_tokenizer,
                                 record_eval, start)
from bert_tf.jobs.finetune import (FileFinetuneOptions, cross_entropy, predict_logits, softmax,
                                   train_steps, train_with_evaluation)

logger = logging.getLogger("bert_tf")

DEFAULT_METRIC = "eval_accuracy"


@dataclasses.dataclass(kw_only=True)
class SwagOptions(FileFinetuneOptions):
    num_choices: int = 4
    train_batch_size: int = 16
    learning_rate: float = 2e-5
    max_train_examples: int = 0
    max_eval_examples: int = 0
    skip_bad_rows: bool = False

    serving_task = "multiple_choice"
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
        self.num_choices = self.arrays["input_ids"].shape[1]
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


def run(opts, strategy):
    """Trains, evaluates, predicts and/or exports. Returns {"train", "eval", "predict",
    "export"} (values, metrics, predictions path, SavedModel version path)."""
    from bert_tf.tasks.multiple_choice import MultipleChoiceTask

    start(opts)
    tokenizer = load_tokenizer(opts)
    steps, warmup, train, train_fn, what = 1, 0, None, None, None
    if opts.do_train:
        train = SwagData(opts, tokenizer, opts.train_file, "train", opts.max_train_examples,
                         require_labels=True)
        steps, warmup = train_steps(opts, len(train.examples))
        what = f"{len(train.examples)} examples"
        train_fn = train.dataset_fn(opts.train_batch_size, True, opts.seed)
    setup = build_trainer(opts, strategy, lambda: build_model(opts), MultipleChoiceTask(),
                          steps, warmup)
    trainer = setup.trainer
    result = {"train": None, "eval": None, "predict": None, "export": None}

    dev = None
    if opts.do_eval or (opts.do_train and opts.eval_every_steps):
        dev = SwagData(opts, tokenizer, opts.eval_file, "eval", opts.max_eval_examples,
                       require_labels=True)

    def evaluate_dev(step):
        logits = dev.logits(trainer, opts.eval_batch_size, f"eval@{step}")
        return evaluate_logits(logits, [e.label for e in dev.examples])

    trained = train_with_evaluation(opts, setup, train_fn, steps, warmup, what,
                                    "multiple-choice", evaluate_dev, DEFAULT_METRIC)
    result["train"] = trained.train
    if trained.preempted:
        return result
    if trained.best_step is not None:
        result["best_step"] = trained.best_step

    num_choices = train.num_choices if train else opts.num_choices
    if opts.do_eval:
        values = trained.evaluation()       # a periodic evaluation of this step is reused
        summarized = values is not None     # (and in TensorBoard already)
        if values is None:
            values = evaluate_dev(trained.step)
        result["eval"] = record_eval(opts, trained.step, values,
                                     summary_keys=[] if summarized else None)
        num_choices = dev.num_choices

    if opts.do_predict:
        data = SwagData(opts, tokenizer, opts.predict_file, "predict")
        logits = data.logits(trainer, opts.predict_batch_size, "predict")
        path = write_predictions(os.path.join(opts.output_dir, "test_predictions.csv"),
                                 data.examples, softmax(logits))
        logger.info("predictions of %d examples: %s", len(data.examples), path)
        result["predict"] = path
        num_choices = data.num_choices
    result["export"] = export_model(opts, setup.model, num_choices=num_choices)
    return result
