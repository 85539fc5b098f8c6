"""Output files of run_classifier, each written atomically (temporary file, then rename):

  test_results.tsv   google-research/bert's: one line per test row, tab-separated class
                     probabilities in label order (one score per line for regression)
  <GLUE name>.tsv    GLUE server submission: header "index\\tprediction", then the test row's
                     index and its label string (a float for STS-B)
  test_predictions.tsv  outside GLUE, the same layout: the test row's index and its label
                     (a float for regression; the label set of a multi-label row)
  label_list.txt     the label list in class-id order, one label per line (bert_tf.predict
                     reads it beside a checkpoint)
  eval_results.txt   google-research/bert's "key = value" lines, keys sorted
"""

import os

import numpy as np

from bert_tf import fileio
from bert_tf.data.classification.tasks import get_task_info
from bert_tf.metrics.classification import class_ids


def _check_count(what, found, expected):
    if expected is not None and found != expected:
        raise ValueError(f"{what}: {found} predictions for {expected} examples; every test "
                         f"row needs exactly one (batch padding must be removed, none dropped)")


def write_test_results(path, probabilities, num_examples=None):
    """Writes `probabilities` ([n, num_labels], or [n] / [n, 1] regression scores) to `path`
    as the original run_classifier.py does; returns the path."""
    values = np.asarray(probabilities)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2 or not np.issubdtype(values.dtype, np.number):
        raise ValueError(f"probabilities must be numbers of shape [n, num_labels] or [n]; got "
                         f"{values.dtype} of shape {values.shape}")
    _check_count("test_results", len(values), num_examples)
    text = "".join("\t".join(str(v) for v in row) + "\n" for row in values)
    fileio.atomic_write_text(path, text)
    return str(path)


def submission_path(output_dir, task_name):
    """output_dir/<file name the GLUE server expects for task_name> (e.g. MNLI-mm.tsv)."""
    info = get_task_info(task_name)
    if info.submission_file is None:
        raise ValueError(f"{info.name} is not a GLUE task; it has no GLUE submission file")
    return os.path.join(str(output_dir), info.submission_file)


def write_glue_submission(output_dir, task_name, predictions, num_examples=None, indices=None):
    """Writes the GLUE submission file of `task_name` into output_dir; returns its path.

    predictions: class ids [n] or scores [n, num_labels] (written as the task's label
      strings), or [n] / [n, 1] floats for STS-B.
    indices: the test rows' index column; default 0..n-1, which is what every GLUE test file
      holds, in file order.
    """
    info = get_task_info(task_name)
    path = submission_path(output_dir, task_name)
    if info.is_regression:
        values = np.asarray(predictions, dtype=np.float64)
        values = values[:, None] if values.ndim == 1 else values
        if values.ndim != 2 or values.shape[1] != 1:
            raise ValueError(f"{info.name}: regression predictions must be [n] or [n, 1], got "
                             f"shape {np.shape(predictions)}")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{info.name}: non-finite prediction at row "
                             f"{int(np.argmin(np.isfinite(values[:, 0])))}")
        cells = [f"{v:.6f}" for v in values[:, 0]]
    else:
        scores = np.asarray(predictions)
        if scores.ndim == 2 and scores.shape[1] != info.num_labels:
            raise ValueError(f"{info.name}: scores have {scores.shape[1]} columns for "
                             f"{info.num_labels} labels {list(info.labels)}")
        ids = class_ids(scores)
        if len(ids) and (ids.min() < 0 or ids.max() >= info.num_labels):
            raise ValueError(f"{info.name}: class ids must be in [0, {info.num_labels})")
        cells = [info.labels[i] for i in ids]
    _check_count(info.submission_file, len(cells), num_examples)
    indices = range(len(cells)) if indices is None else list(indices)
    if len(indices) != len(cells):
        raise ValueError(f"{len(indices)} indices for {len(cells)} predictions")
    return write_predictions(path, indices, cells)


def write_predictions(path, indices, cells):
    """Writes "index<TAB>prediction" then one line per test row (its index and prediction
    cell); returns the path."""
    fileio.atomic_write_text(path, "index\tprediction\n" + "".join(
        f"{index}\t{cell}\n" for index, cell in zip(indices, cells)))
    return str(path)


def label_list_text(labels):
    """label_list.txt's text: one label per line, in class-id order. Raises ValueError for a
    label the file cannot give back as it is (empty, surrounding spaces, a line break)."""
    labels = [str(label) for label in labels]
    bad = [label for label in labels if not label or label != label.strip()
           or len(label.splitlines()) != 1]
    if bad:
        raise ValueError(f"labels {bad} cannot be written one per line")
    return "".join(f"{label}\n" for label in labels)


def read_label_list(path):
    """The labels of a label_list.txt, in class-id order."""
    with fileio.open_binary(path) as f:
        return [line.strip() for line in f.read().decode("utf-8").splitlines() if line.strip()]
