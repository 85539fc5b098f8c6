"""run_classifier --multi_label: each example has a set of labels (generic files; see
bert_tf.data.classification.multilabel), the model has one sigmoid output per label.

Evaluation reports bert_tf.metrics.multilabel's metrics and the sigmoid cross-entropy eval_loss.
With tune_threshold (the default), each evaluation first picks the global threshold that
maximises micro F1 on the dev set (grid 0.05..0.95) and reports every metric at it, with the
chosen `threshold` and `untuned_micro_f1` (micro F1 at --multi_label_threshold) in
eval_results.txt. Dev metrics at a threshold tuned on dev are optimistic; predictions and the
export then use that threshold (or --multi_label_threshold without tuning).

Prediction writes test_results.tsv (a header of label names, then one row of per-label
probabilities per test row) and test_predictions.tsv ("index<TAB>prediction", the predicted
labels joined by --label_separator, empty when none is selected).
"""

import logging
import os

from bert_tf import fileio
from bert_tf.jobs.finetune import predict_logits
from bert_tf.metrics import multilabel as metrics
from bert_tf.metrics.results import saved_threshold
from bert_tf.options import non_defaults

logger = logging.getLogger("bert_tf")

# Options that mean something only with --multi_label: given (not their default) without it
# is an error.
_ONLY_WITH_MULTI_LABEL = ("label_separator", "multi_label_threshold", "tune_threshold")


def validate_options(opts):
    """Raises ValueError naming the flags when --multi_label cannot run as asked."""
    if not opts.multi_label:
        given = non_defaults(opts, _ONLY_WITH_MULTI_LABEL)
        if given:
            raise ValueError(f"{', '.join(given)} {'apply' if len(given) > 1 else 'applies'} "
                             f"only with --multi_label")
        return
    if opts.tfds_name:
        raise ValueError("--multi_label reads your own files (--task_name=generic), not "
                         "--tfds_name")
    if str(opts.task_name or "").strip().lower() != "generic":
        raise ValueError(f"--multi_label needs --task_name=generic (your own files with a "
                         f"label-set column), got --task_name={opts.task_name}")
    if opts.processor_options.get("is_regression"):
        raise ValueError("--multi_label and --is_regression exclude each other")
    if opts.feature_cache_dir:
        raise ValueError("--feature_cache_dir stores one label id per example: it cannot be "
                         "used with --multi_label (leave --feature_cache_dir out: texts are "
                         "then tokenized in the input pipeline)")
    if getattr(opts, "class_weights", None):
        raise ValueError("--class_weights weighs each example by its one class: it does not "
                         "apply to --multi_label")
    if not opts.label_separator:
        raise ValueError("--label_separator must not be empty")
    if not 0.0 < opts.multi_label_threshold < 1.0:
        raise ValueError(f"--multi_label_threshold must be in (0, 1), got "
                         f"{opts.multi_label_threshold}")


def make_processor(opts):
    """The MultiLabelProcessor of the generic task's processor options."""
    from bert_tf.data.classification.multilabel import MultiLabelProcessor
    return MultiLabelProcessor(label_separator=opts.label_separator,
                               skip_bad_rows=opts.skip_bad_rows, **opts.processor_options)


def evaluate(trainer, inputs, columns, source, what="eval"):
    """The multi-label metrics of the model on `columns` (dev), at the tuned threshold with
    --tune_threshold, else at --multi_label_threshold, plus eval_loss (and `loss`)."""
    opts, labels = inputs.opts, inputs.data.labels
    logits = predict_logits(trainer, inputs.dataset_fn(source, opts.eval_batch_size, False),
                            columns.num_examples, what)
    probabilities = metrics.sigmoid(logits)
    default = float(opts.multi_label_threshold)
    threshold, untuned = default, None
    if opts.tune_threshold:
        threshold, scores = metrics.tune_threshold(probabilities, columns.label_ids,
                                                   prefer=default)
        untuned = metrics.micro_f1_by_threshold(probabilities, columns.label_ids,
                                                [default])[default]
        logger.info("%s: threshold tuned on the dev set: %.2f (micro F1 %.4f; %.4f at "
                    "--multi_label_threshold=%g)", what, threshold, scores[threshold], untuned,
                    default)
        logger.debug("micro F1 by threshold: %s",
                     ", ".join(f"{t:.2f}: {f:.4f}" for t, f in scores.items()))
    values = metrics.multi_label_metrics(probabilities, columns.label_ids, labels, threshold)
    if untuned is not None:
        values["untuned_micro_f1"] = untuned
    values["eval_loss"] = metrics.binary_cross_entropy(logits, columns.label_ids)
    values["loss"] = values["eval_loss"]
    return values


def decision_threshold(opts, values=None, best_dir=None):
    """The threshold prediction and export use: the `threshold` of this run's evaluation
    (`values`); else, when the model holds the weights of `best_dir` (output_dir/best/ loaded
    at the end of training), the one saved with them in best_dir/eval_results.txt (a best step
    evaluated before a preemption: this run has no values of it); else, with --tune_threshold
    and no training in this run, the one an earlier evaluation wrote to
    output_dir/eval_results.txt or beside --init_checkpoint; else --multi_label_threshold."""
    if values and "threshold" in values:
        return float(values["threshold"])
    if best_dir:
        found = saved_threshold(best_dir)
        if found is not None:
            logger.info("multi-label threshold %.2f: the one of the best weights, in %s", found,
                        os.path.join(str(best_dir), "eval_results.txt"))
            return found
    if opts.tune_threshold:
        if not opts.do_train:
            for folder in (opts.output_dir, opts.init_checkpoint):
                found = saved_threshold(folder)
                if found is not None:
                    logger.info("multi-label threshold %.2f: the tuned one of %s", found,
                                os.path.join(str(folder), "eval_results.txt"))
                    return found
        logger.warning("--tune_threshold: no dev evaluation to tune on (--do_eval or "
                       "--eval_every_steps), nor a tuned threshold in an eval_results.txt: "
                       "using --multi_label_threshold=%g", opts.multi_label_threshold)
    return float(opts.multi_label_threshold)


def write_probabilities(path, probabilities, labels):
    """test_results.tsv: a header of label names, then one row of probabilities per row."""
    blank = str.maketrans("\t\r\n", "   ")
    lines = ["\t".join(str(label).translate(blank) for label in labels) + "\n"]
    lines += ["\t".join(str(float(p)) for p in row) + "\n" for row in probabilities]
    fileio.atomic_write_text(path, "".join(lines))
    return str(path)


def predict(trainer, inputs, data, threshold):
    """Predicts the test set; writes test_results.tsv and test_predictions.tsv (labels with
    probability >= threshold). Returns {file name: path}."""
    from bert_tf.data.classification.multilabel import format_label_set
    from bert_tf.data.classification.writers import write_predictions
    opts = inputs.opts
    examples = data.examples("test")
    columns = inputs.columns(examples)
    source = inputs.source(columns, f"{data.task}_test")
    logits = predict_logits(trainer, inputs.dataset_fn(source, opts.predict_batch_size, False),
                            columns.num_examples, what=f"predict {data.task}")
    probabilities = metrics.sigmoid(logits)
    out = opts.output_dir
    paths = {"test_results.tsv": write_probabilities(os.path.join(out, "test_results.tsv"),
                                                     probabilities, data.labels)}
    selected = metrics.select(probabilities, threshold)
    cells = [format_label_set(row, data.labels, opts.label_separator) for row in selected]
    indices = [e.guid.split("-", 1)[1] for e in examples]
    paths["test_predictions.tsv"] = write_predictions(
        os.path.join(out, "test_predictions.tsv"), indices, cells)
    logger.info("predictions of %d %s test examples at threshold %.2f (%.2f labels per row): "
                "%s", columns.num_examples, data.task, threshold,
                float(selected.sum()) / max(len(selected), 1), ", ".join(paths.values()))
    return paths
