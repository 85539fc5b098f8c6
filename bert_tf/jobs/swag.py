"""run_swag: multiple-choice fine-tuning, evaluation and prediction on SWAG csv files.

Each example's endings are scored by a BertMultipleChoice (one shared vector on the pooled output
of every (context, ending) pair) and trained with softmax cross-entropy over the choices.
Training follows google-research/bert's recipe: num_train_steps = int(examples / batch *
epochs), linear warm-up over warmup_proportion, AdamW.

Files in output_dir: eval_results.txt (eval_accuracy, eval_loss, global_step),
test_predictions.csv (example id, predicted ending, one probability per ending), checkpoints,
TensorBoard summaries and log.txt.
"""

import dataclasses
import logging
import os
import time

import numpy as np

from bert_tf import fileio
from bert_tf.config import BertConfig
from bert_tf.jobs.common import (init_from_checkpoint, make_optimizer, make_trainer,
                                 write_eval_summary)
from bert_tf.metrics.results import write_eval_results

logger = logging.getLogger("bert_tf")


@dataclasses.dataclass
class SwagOptions:
    config: BertConfig
    output_dir: str
    vocab_file: str = None
    train_file: str = None
    eval_file: str = None
    predict_file: str = None
    init_checkpoint: str = None
    do_lower_case: bool = True
    max_seq_length: int = 128
    num_choices: int = 4
    do_train: bool = False
    do_eval: bool = False
    do_predict: bool = False
    train_batch_size: int = 16
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    learning_rate: float = 2e-5
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    max_train_examples: int = 0
    max_eval_examples: int = 0
    skip_bad_rows: bool = False
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    mixed_precision: str = None
    jit_compile: bool = False
    seed: int = 12345

    def validate(self):
        from bert_tf.tokenization import validate_case_matches_checkpoint
        if not (self.do_train or self.do_eval or self.do_predict):
            raise ValueError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
        validate_case_matches_checkpoint(self.do_lower_case, self.init_checkpoint)
        if not self.output_dir:
            raise ValueError("--output_dir is required")
        for flag, needed in (("train_file", self.do_train), ("eval_file", self.do_eval),
                             ("predict_file", self.do_predict)):
            path = getattr(self, flag)
            if needed and not path:
                raise ValueError(f"--{flag} is required with --do_{flag.split('_')[0]}")
            if needed and not fileio.exists(path):
                raise FileNotFoundError(f"--{flag} {path} does not exist")
        if not self.vocab_file:
            raise ValueError("--vocab_file is required (or an --init_checkpoint folder holding "
                             "vocab.txt)")
        if not fileio.exists(self.vocab_file):
            raise FileNotFoundError(f"--vocab_file {self.vocab_file} does not exist")
        if self.max_seq_length > self.config.max_position_embeddings:
            raise ValueError(
                f"Cannot use sequence length {self.max_seq_length} because the BERT model was "
                f"only trained up to sequence length {self.config.max_position_embeddings}")
        if self.max_seq_length < 4:
            raise ValueError(f"--max_seq_length must be >= 4, got {self.max_seq_length}")
        if not 2 <= self.num_choices <= 5:
            raise ValueError(f"--num_choices must be in 2..5, got {self.num_choices}")
        for name in ("train_batch_size", "eval_batch_size", "predict_batch_size",
                     "iterations_per_loop"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} must be >= 1, got {getattr(self, name)}")
        if self.max_train_examples < 0 or self.max_eval_examples < 0:
            raise ValueError("--max_train_examples and --max_eval_examples must be >= 0")
        if self.do_train and self.num_train_epochs <= 0:
            raise ValueError(f"--num_train_epochs must be > 0, got {self.num_train_epochs}")
        if not 0.0 <= self.warmup_proportion <= 1.0:
            raise ValueError(f"--warmup_proportion must be in [0, 1], got "
                             f"{self.warmup_proportion}")


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
        from bert_tf.data.swag.dataset import swag_dataset
        arrays = self.arrays

        def fn(input_context):
            batch = input_context.get_per_replica_batch_size(global_batch_size)
            return swag_dataset(arrays, batch, is_training, seed=seed,
                                input_context=input_context)
        return fn


def predict_logits(trainer, data, batch_size, what):
    """[N, C] float64 logits in example order; every example exactly once."""
    n = len(data.examples)
    logits, seen = np.zeros(data.arrays["input_ids"].shape[:2], np.float64), np.zeros(n, bool)
    start = time.perf_counter()
    for outputs, features in trainer.predict(data.dataset_fn(batch_size, False),
                                             feature_keys=("example_index",)):
        index = features["example_index"].astype(np.int64)
        if seen[index].any():
            raise RuntimeError(f"{what}: example {int(index[seen[index]][0])} predicted twice")
        logits[index] = outputs["logits"]
        seen[index] = True
    if not seen.all():
        raise RuntimeError(f"{what}: {int((~seen).sum())} of {n} examples got no prediction")
    logger.info("%s: %d examples in %.1f s", what, n, time.perf_counter() - start)
    return logits


def softmax(logits):
    x = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def evaluate_logits(logits, labels):
    """eval_accuracy and eval_loss (mean cross-entropy) of [N, C] logits."""
    labels = np.asarray(labels)
    log_probs = np.log(softmax(logits))
    return {"eval_accuracy": float(np.mean(logits.argmax(-1) == labels)),
            "eval_loss": float(-np.mean(log_probs[np.arange(len(labels)), labels]))}


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
    """Trains, evaluates and/or predicts. Returns {"train", "eval", "predict"} (values, metrics,
    predictions path)."""
    from bert_tf.jobs.classifier import default_vocab_file
    from bert_tf.tasks.multiple_choice import MultipleChoiceTask
    from bert_tf.tokenization import FullTokenizer

    if not opts.vocab_file:
        opts.vocab_file = default_vocab_file(opts.init_checkpoint)
    opts.validate()
    os.makedirs(opts.output_dir, exist_ok=True)
    opts.config.to_json_file(os.path.join(opts.output_dir, "bert_config.json"))
    tokenizer = FullTokenizer(opts.vocab_file, do_lower_case=opts.do_lower_case)
    if len(tokenizer.vocab) > opts.config.vocab_size:
        raise ValueError(f"--vocab_file {opts.vocab_file} has {len(tokenizer.vocab)} tokens but "
                         f"the model's vocab_size is {opts.config.vocab_size}: wrong vocabulary "
                         f"for this model")
    steps, warmup, train = 1, 0, None
    if opts.do_train:
        train = SwagData(opts, tokenizer, opts.train_file, "train", opts.max_train_examples,
                         require_labels=True)
        steps = int(len(train.examples) / opts.train_batch_size * opts.num_train_epochs)
        if steps < 1:
            raise ValueError(f"no training steps: {len(train.examples)} examples / batch "
                             f"{opts.train_batch_size} x {opts.num_train_epochs} epochs < 1")
        warmup = int(steps * opts.warmup_proportion)

    with strategy.scope():
        model = build_model(opts)
        report = init_from_checkpoint(model, opts.init_checkpoint)
        optimizer = make_optimizer(opts.learning_rate, steps, warmup,
                                   mixed_precision=opts.mixed_precision)
    trainer = make_trainer(model, optimizer, MultipleChoiceTask(), strategy, opts.output_dir,
                           iterations_per_loop=opts.iterations_per_loop,
                           save_checkpoints_steps=opts.save_checkpoints_steps,
                           jit_compile=opts.jit_compile)
    result = {"train": None, "eval": None, "predict": None}
    if opts.do_train:
        logger.info("***** Running training: %d examples, batch %d, %d steps (%d warm-up) "
                    "*****", len(train.examples), opts.train_batch_size, steps, warmup)
        result["train"] = trainer.train(train.dataset_fn(opts.train_batch_size, True, opts.seed),
                                        steps, opts.train_batch_size)
        if result["train"]["preempted"]:
            return result
    elif trainer.restore() is None:
        if report is None:
            raise ValueError(f"nothing to evaluate or predict with: {opts.output_dir} has no "
                             f"checkpoint and no --init_checkpoint was given")
        if any(name.startswith("cls/multiple_choice/") for name in report.missing):
            logger.warning("the multiple-choice head is freshly initialised (%s has none): "
                           "results are those of an untrained head", opts.init_checkpoint)

    if opts.do_eval:
        data = SwagData(opts, tokenizer, opts.eval_file, "eval", opts.max_eval_examples,
                        require_labels=True)
        logits = predict_logits(trainer, data, opts.eval_batch_size, f"eval@{trainer.step}")
        values = evaluate_logits(logits, [e.label for e in data.examples])
        values["global_step"] = trainer.step
        path = write_eval_results(os.path.join(opts.output_dir, "eval_results.txt"), values)
        write_eval_summary(opts.output_dir, trainer.step, values)
        logger.info("***** Eval results (%s) *****", path)
        for key in sorted(values):
            logger.info("  %s = %s", key, values[key])
        result["eval"] = values

    if opts.do_predict:
        data = SwagData(opts, tokenizer, opts.predict_file, "predict")
        logits = predict_logits(trainer, data, opts.predict_batch_size, "predict")
        path = write_predictions(os.path.join(opts.output_dir, "test_predictions.csv"),
                                 data.examples, softmax(logits))
        logger.info("predictions of %d examples: %s", len(data.examples), path)
        result["predict"] = path
    return result
