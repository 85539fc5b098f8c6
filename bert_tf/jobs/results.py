"""What a job writes and prints of its results: the label list, eval results (file,
TensorBoard, log), the SavedModel export and the runner's summary lines."""

import logging
import os

from bert_tf import fileio
from bert_tf.metrics.results import write_eval_results

logger = logging.getLogger("bert_tf")


def save_label_list(output_dir, labels):
    """Writes output_dir/label_list.txt (the labels in class-id order, one per line: what
    bert_tf.predict and a rerun read beside the run's checkpoints). Returns {its name: its
    text}, the files best/ gets too ({} when a label cannot be written one per line)."""
    from bert_tf.data.classification.writers import label_list_text
    from bert_tf.names import LABELS_FILE
    try:
        text = label_list_text(labels)
    except ValueError as e:
        logger.warning("no %s (%s): predicting from this run's checkpoints needs --labels",
                       LABELS_FILE, e)
        return {}
    fileio.atomic_write_text(os.path.join(output_dir, LABELS_FILE), text)
    return {LABELS_FILE: text}


def write_eval_summary(output_dir, step, values, subdir="eval"):
    """Eval metrics to TensorBoard (output_dir/eval)."""
    import tensorflow as tf
    writer = tf.summary.create_file_writer(os.path.join(output_dir, subdir))
    with writer.as_default(step=step):
        for key, value in values.items():
            if isinstance(value, (int, float)):
                tf.summary.scalar(key, value)
    writer.flush()


def log_values(title, values):
    logger.info("***** %s *****", title)
    for key in sorted(values):
        logger.info("  %s = %s", key, values[key])


def record_eval(opts, step, values, *, filename="eval_results.txt", writer=write_eval_results,
                summary_keys=None):
    """Adds global_step to `values` and writes them to output_dir/<filename> (google's
    "key = value" lines unless `writer` says otherwise), TensorBoard (the `summary_keys` only,
    when given: the others are there already) and the log. Returns `values`."""
    values["global_step"] = step
    path = os.path.join(opts.output_dir, filename)
    writer(path, values)
    write_eval_summary(opts.output_dir, step, values if summary_keys is None
                       else {k: values[k] for k in summary_keys})
    log_values(f"Eval results ({path})", values)
    return values


def export_model(opts, model, contract=None):
    """With opts.export_dir: exports `model` with its InferenceContract (default:
    opts.contract(), the run's kind, length and casing) and the run's vocabulary and export
    settings (bert_tf.serving.export); returns the new version folder. Without it: None."""
    if not opts.export_dir:
        return None
    from bert_tf.serving import export
    contract = contract or opts.contract()
    return export(model, contract.kind, opts.export_dir, opts.vocab_file, contract.do_lower_case,
                  contract.max_seq_length, contract, opts.export_settings())


def summary_lines(result, eval_keys=None, predictions=None):
    """What a runner prints of a job's result: training, eval (`eval_keys`, default all),
    predictions (`predictions(result["predict"])`, a string) and export lines."""
    lines = []
    train, evaluation = result.get("train"), result.get("eval")
    if train:
        loss = f", loss {train['loss']:.4f}" if "loss" in train else ""
        lines.append(f"training: step {train['step']}{loss}"
                     + (" (stopped early)" if train.get("stopped_early") else "")
                     + (" (preempted: rerun the same command to resume)" if train["preempted"]
                        else ""))
    if result.get("best_step") is not None:
        lines.append(f"best checkpoint: step {result['best_step']}")
    if evaluation:
        keys = eval_keys or sorted(evaluation)
        lines.append("eval: " + ", ".join(
            f"{k}={evaluation[k]:.4f}" if isinstance(evaluation[k], float)
            else f"{k}={evaluation[k]}" for k in keys if k in evaluation))
    if predictions and result.get("predict"):
        lines.append(f"predictions: {predictions(result['predict'])}")
    if result.get("export"):
        lines.append(f"exported: {result['export']}")
    return lines
