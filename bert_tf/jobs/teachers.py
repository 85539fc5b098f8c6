"""The teacher of a distilled student: reading a fine-tuned run (run_classifier, run_ner or
run_squad) as a Teacher, checked against the student's task, and what every distilling task
does with its outputs: computed once before training (teacher_targets for classifiers), kept in
output_dir beside the run so a resumed run reads them back (cached_targets, keyed by
teacher_identity and the examples), and fed to the student beside each example's features
(with_teacher_targets)."""

import dataclasses
import io
import json
import logging
import os
import time

import numpy as np

from bert_tf import fileio

logger = logging.getLogger("bert_tf")

TARGETS_FILE = "teacher_targets.npz"     # in the student's output_dir


@dataclasses.dataclass
class Teacher:
    """A fine-tuned checkpoint (run_classifier, run_ner or run_squad) and how its run read its
    inputs."""

    path: str
    labels: list                 # class-id order; None for a regression teacher
    config: object               # its BertConfig
    vocab_file: str
    do_lower_case: bool
    max_seq_length: int
    doc_stride: int = 0
    window_pooling: str = "mean"
    max_windows: int = 0
    kind: str = "classifier"     # its model: "classifier", "regression", "tagger" or "squad"

    @property
    def is_regression(self):
        return self.kind == "regression"

    def record(self):
        """What run_options.json records of the teacher."""
        return {"checkpoint": self.path, "labels": self.labels, "task": self.kind}


def read_teacher(path, labels, is_regression, task_name):
    """The Teacher at `path` (a run_classifier output_dir or best/: its run_options.json,
    config, vocabulary and label_list.txt beside the checkpoint), checked against the student's
    task (`labels` in class-id order, `is_regression`, `task_name` its name in messages)."""
    from bert_tf.prediction.loading import checkpoint_head
    where = f"--teacher_checkpoint {path}"
    record = _teacher_record(path, "classifier", "run_classifier")
    if record.options.get("multi_label"):
        raise ValueError(f"{where}: a --multi_label run; distillation supports classification "
                         f"and regression teachers")
    kind, units, _, _ = checkpoint_head(path)
    if is_regression != (kind == "regression"):
        held = "a regression model" if kind == "regression" else f"a {kind} of {units} labels"
        wanted = "a regression" if is_regression else f"a classification ({len(labels)} labels)"
        raise ValueError(f"{where} is {held}, but the task {task_name} is {wanted}")
    return _teacher(path, record, None if is_regression else labels, task_name,
                    "regression" if is_regression else "classifier")


def _expect_head(path, kind, what):
    """Raises ValueError when the checkpoint at `path` holds no `kind` head (`what` names it)."""
    from bert_tf.prediction.loading import checkpoint_head
    found = checkpoint_head(path)[0]
    if found != kind:
        raise ValueError(f"--teacher_checkpoint {path} holds a {found} model, not {what}")


def read_tagger_teacher(path, labels):
    """The Teacher at `path` (a run_ner output_dir or best/), checked against the student's
    label list `labels` (in output order)."""
    record = _teacher_record(path, "tagger", "run_ner")
    _expect_head(path, "tagger", "a tagger")
    return _teacher(path, record, labels, "this run", "tagger")


def read_span_teacher(path, vocab_file, do_lower_case, max_seq_length,
                      version_2_with_negative=False):
    """The Teacher at `path` (a run_squad output_dir or best/). It scores the student's own
    windows, so its vocabulary and casing must be the student's (`vocab_file`,
    `do_lower_case`), and its position table must hold `max_seq_length`. A SQuAD 1.1 teacher
    of a SQuAD 2.0 student (`version_2_with_negative`) is logged as a warning."""
    from bert_tf.tokenization.vocab import Vocabulary
    where = f"--teacher_checkpoint {path}"
    record = _teacher_record(path, "squad", "run_squad")
    _expect_head(path, "squad", "a run_squad span labeler")
    teacher = _teacher(path, record, None, "this run", "squad")
    if Vocabulary.from_file(teacher.vocab_file).id_to_token != Vocabulary.from_file(
            vocab_file).id_to_token:
        raise ValueError(f"{where}: its vocabulary ({teacher.vocab_file}) is not --vocab_file "
                         f"({vocab_file}); a run_squad teacher reads the student's windows, so "
                         f"both must tokenize alike")
    if teacher.do_lower_case != do_lower_case:
        raise ValueError(f"{where} was trained with do_lower_case={teacher.do_lower_case}, this "
                         f"run has --do_lower_case={do_lower_case}: both must tokenize alike")
    if version_2_with_negative and not record.options.get("version_2_with_negative"):
        logger.warning("%s was trained without --version_2_with_negative: its start and end "
                       "logits never learned to point at [CLS] for unanswerable questions",
                       where)
    if max_seq_length > teacher.config.max_position_embeddings:
        raise ValueError(f"{where}: --max_seq_length {max_seq_length} is longer than the "
                         f"teacher's max_position_embeddings "
                         f"({teacher.config.max_position_embeddings})")
    return teacher


def _teacher_record(path, kind, runner):
    """The RunRecord beside a teacher checkpoint, which must be a `runner` run (`kind`)."""
    from bert_tf.checkpoints.run_options import read_run_options
    from bert_tf.names import RUN_OPTIONS
    record = read_run_options(path)
    if record is None or not record.serves(kind):
        what = "none" if record is None else f"a {record.kind} run's"
        raise ValueError(f"--teacher_checkpoint {path}: not a {runner} run ({RUN_OPTIONS} "
                         f"beside it: {what}): give a fine-tuned {runner} output_dir or its "
                         f"best/")
    return record


def _teacher(path, record, labels, task_name, kind):
    """The Teacher of run `record` at `path`; with `labels` (class-id order) its
    label_list.txt must hold the same (`task_name` names the student's task in messages)."""
    from bert_tf import contract as _contract
    from bert_tf.checkpoints import find_config
    from bert_tf.contract import beside
    from bert_tf.data.classification.writers import read_label_list
    from bert_tf.names import LABELS_FILE, VOCAB_ASSET
    where = f"--teacher_checkpoint {path}"
    teacher_labels = None
    if labels is not None:
        found = beside(path, LABELS_FILE)
        if not found:
            raise ValueError(f"{where}: no {LABELS_FILE} beside it, so its labels cannot be "
                             f"checked against the task's")
        teacher_labels = read_label_list(found)
        if teacher_labels != list(labels):
            raise ValueError(f"{where}: the teacher's labels {teacher_labels} ({found}) are not "
                             f"the task's labels {list(labels)} ({task_name}), in class-id order: "
                             f"the teacher must be fine-tuned on the same labels")
    vocab_file = beside(path, VOCAB_ASSET) or record.options.get("vocab_file")
    if not vocab_file:
        raise ValueError(f"{where}: no {VOCAB_ASSET} beside it and none in {record.path}")
    run = _contract.resolve(_contract.read(path), kind, {})
    stride = run.doc_stride if "doc_stride" in run.spec.settings else run.window_stride
    return Teacher(os.fspath(path), teacher_labels, find_config(path), vocab_file,
                   do_lower_case=run.do_lower_case, max_seq_length=run.max_seq_length,
                   doc_stride=stride, window_pooling=run.window_pooling,
                   max_windows=run.max_windows, kind=kind)


def teacher_targets(teacher, columns, batch_size, cls_layers=None):
    """What the student learns from, for every example of `columns` (ExampleColumns), in
    example order: {"teacher_logits": float32 [N, C]}, and with `cls_layers` (teacher block
    indices) "teacher_cls": float32 [N, len(cls_layers), H], those blocks' [CLS] vectors. The
    teacher is built, loaded, run in eval mode over the examples once, then dropped."""
    import tensorflow as tf

    from bert_tf.checkpoints import load_weights
    from bert_tf.data.classification import pipeline
    from bert_tf.model import BertClassifier, BertEncoder
    start = time.perf_counter()
    units = 1 if teacher.is_regression else len(teacher.labels)
    model = BertClassifier(BertEncoder(teacher.config), units,
                           window_pooling=teacher.window_pooling if teacher.doc_stride else None,
                           layer_cls=cls_layers is not None)
    report = load_weights(model, teacher.path, require_heads=True)
    logger.info("teacher: %s", report.summary())
    preprocessor = pipeline.make_preprocessor(teacher.vocab_file, teacher.do_lower_case,
                                              teacher.max_seq_length, teacher.doc_stride,
                                              teacher.max_windows)
    dataset = pipeline.classifier_dataset(
        columns, batch_size, is_training=False, max_seq_length=teacher.max_seq_length,
        preprocessor=preprocessor, is_regression=teacher.is_regression)
    keys = pipeline.MODEL_KEYS + ("window_example",)

    @tf.function(reduce_retracing=True, autograph=False)
    def forward(features):
        outputs = model({k: features[k] for k in keys if k in features}, training=False)
        found = {"teacher_logits": tf.cast(outputs["logits"], tf.float32)}
        if cls_layers is not None:
            found["teacher_cls"] = tf.gather(outputs["layer_cls"], cls_layers, axis=1)
        return found

    targets = {"teacher_logits": np.zeros((columns.num_examples, units), np.float32)}
    if cls_layers is not None:
        targets["teacher_cls"] = np.zeros(
            (columns.num_examples, len(cls_layers), teacher.config.hidden_size), np.float32)
    seen = np.zeros(columns.num_examples, bool)
    for features in dataset:
        index = features["example_index"].numpy()
        for name, values in forward(features).items():
            targets[name][index] = values.numpy()
        seen[index] = True
    if not seen.all():
        raise RuntimeError(f"teacher: {int((~seen).sum())} of {columns.num_examples} training "
                           f"examples got no logits")
    logger.info("teacher: %s of %d training examples (%s, batch %d) in %.1f s",
                " and ".join(targets), columns.num_examples, teacher.path, batch_size,
                time.perf_counter() - start)
    return targets


def teacher_identity(teacher):
    """[checkpoint location, when it was written, its run's tokenization]: what a cache of the
    teacher's outputs depends on besides the examples it scored."""
    import tensorflow as tf

    from bert_tf.checkpoints import resolve
    location = resolve(teacher.path)[1]
    written = next((tf.io.gfile.stat(p).mtime_nsec for p in (location + ".index", location)
                    if fileio.exists(p)), None)
    return [location, written, teacher.vocab_file, teacher.do_lower_case,
            teacher.max_seq_length, teacher.doc_stride, teacher.window_pooling,
            teacher.max_windows]


def cached_targets(path, key, compute):
    """compute()'s {name: array}, read from `path` (.npz) when it was written under the same
    `key` (JSON-able), else computed and written there atomically: a resumed or repeated run
    does not run the teacher's pass again."""
    key = json.dumps(key, sort_keys=True)
    if fileio.exists(path):
        with fileio.open_binary(path) as f:
            stored = np.load(io.BytesIO(f.read()))
            if str(stored["key"]) == key:
                logger.info("teacher: reusing its outputs in %s", path)
                return {name: stored[name] for name in stored.files if name != "key"}
    targets = compute()
    buffer = io.BytesIO()
    np.savez(buffer, key=np.array(key), **targets)
    fileio.atomic_write_bytes(path, buffer.getvalue())
    return targets


def with_teacher_targets(dataset_fn, targets, row=lambda features: features["example_index"]):
    """The Trainer's dataset_fn with each batch's rows of `targets` ({name: [N, ...]} arrays,
    e.g. teacher_logits [B, C]) picked by `row` of the batch's features (its example_index)."""
    import tensorflow as tf

    from bert_tf.data.maps import graph_map

    def fn(input_context):
        tables = {name: tf.constant(values) for name, values in targets.items()}  # float16 too
        return graph_map(dataset_fn(input_context), lambda features: dict(features, **{
            name: tf.cast(tf.gather(table, row(features)), tf.float32)
            for name, table in tables.items()}), parallel=False)
    return fn
