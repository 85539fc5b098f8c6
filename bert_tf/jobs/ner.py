"""run_ner: token-classification (NER) fine-tuning, evaluation and prediction on CoNLL files.

Tags are read as IOB1 or BIO and learnt as BIO; each word is labelled on its first WordPiece
(bert_tf.data.ner). Evaluation scores entities with conlleval semantics (bert_tf.metrics.ner).
Training follows google-research/bert's recipe: num_train_steps = int(windows / batch * epochs),
linear warm-up over warmup_proportion of them, AdamW.

--class_weights weights each word's loss by its gold label (bert_tf.training.class_weights);
--teacher_checkpoint distils a fine-tuned run_ner run into this one, word by word
(bert_tf.jobs.ner_distillation; --student_layers picks the student's layers). NerTask is its
task object for bert_tf.jobs.driver.run_task, which runs every stage:
--eval_every_steps evaluates on --eval_file during training and keeps the best weights (entity
f1 by default) in output_dir/best/.

Files in output_dir: label_list.txt (the tagger's classes, in output order), eval_results.txt
(precision/recall/f1 overall and per type), eval_report.txt (conlleval's summary),
eval_predictions.txt and test_predictions.txt (CoNLL columns + predicted tag), checkpoints,
best/ and eval_history.jsonl (--eval_every_steps), TensorBoard summaries and log.txt.
"""

import dataclasses
import logging
import os
import time

import numpy as np

from bert_tf import contract as _contract, fileio
from bert_tf.jobs.checks import load_tokenizer
from bert_tf.jobs.results import save_label_list
from bert_tf.training.setup import arrays_dataset_fn
from bert_tf.jobs.distillation import TEACHER_SETTINGS, TeacherOptions, TransferSetOptions
from bert_tf.jobs.driver import Evaluation, FinetuneTask, TrainingData, run_task
from bert_tf.jobs.finetune import FileFinetuneOptions, log_softmax
from bert_tf.options import option
from bert_tf.contract import WORD_WINDOW_STRIDE
from bert_tf.names import LABELS_FILE
from bert_tf.training.class_weights import ClassWeightOptions

logger = logging.getLogger("bert_tf")

DEFAULT_METRIC = "f1"            # conlleval's overall entity F1 (NerScores.as_dict)


@dataclasses.dataclass(kw_only=True)
class NerOptions(FileFinetuneOptions, ClassWeightOptions, TeacherOptions, TransferSetOptions):
    max_seq_length: int = option(
        _contract.MAX_SEQ_LENGTH, "WordPieces per window including [CLS] and [SEP]; longer "
        "inputs are split into overlapping windows.")
    train_file: str = option(None, "CoNLL file to train on (word first, tag last).")
    eval_file: str = option(None, "Tagged CoNLL file to evaluate on (--do_eval).")
    predict_file: str = option(
        None, "CoNLL file to tag (--do_predict); words only, or with tags to be scored.")
    do_predict: bool = option(False, "Whether to tag --predict_file.")
    doc_stride: int = option(
        WORD_WINDOW_STRIDE, "How far (in WordPieces, at most) each window starts after the "
        "previous one when an input is split (>= max_seq_length - 2: no overlap).")
    context: str = option(
        "sentence", "What one input holds: a sentence, or a whole -DOCSTART- document (the "
        "paper's document context).", choices=("sentence", "document"))
    labels: list = option(
        None, "The label list in the model's output order (default: from output_dir or the "
        "training file: O, then B-/I- of each type in sorted order).")

    serving_kind = "tagger"

    def validate(self):
        from bert_tf.data.ner import CONTEXTS
        super().validate()
        self.validate_class_weights()
        self.validate_teacher(TEACHER_SETTINGS + ("distill_transfer_file",))
        self.validate_transfer_set()
        if self.doc_stride < 1:
            raise ValueError(f"--doc_stride must be >= 1, got {self.doc_stride}")
        if self.context not in CONTEXTS:
            raise ValueError(f"--context must be one of {', '.join(CONTEXTS)}, got "
                             f"{self.context!r}")


# --------------------------------------------------------------------------- labels
def resolve_labels(opts, train):
    """The tagger's label list: --labels, else output_dir/label_list.txt (a previous run), else
    the BIO labels of the training file's entity types. A training file with types the list
    lacks is an error."""
    from bert_tf.data.ner import bio_labels, entity_types, split_tag
    saved_path = os.path.join(opts.output_dir, LABELS_FILE)
    from bert_tf.data.classification.writers import read_label_list
    saved = read_label_list(saved_path) if fileio.exists(saved_path) else None
    if opts.labels:
        labels = list(opts.labels)
        for label in labels:
            split_tag(label)
        if "O" not in labels:
            raise ValueError(f"--labels {labels} lacks O")
        for kind in {split_tag(label)[1] for label in labels} - {None}:
            for prefix in ("B", "I"):
                if f"{prefix}-{kind}" not in labels:
                    raise ValueError(f"--labels has {kind} entities but not {prefix}-{kind}: "
                                     f"BIO needs both")
    elif saved:
        labels = saved
    elif train is not None:
        labels = bio_labels(entity_types(s.tags for s in train.sentences))
    else:
        raise ValueError(f"no label list: give --labels (in the order the model's output "
                         f"classes were trained with), or an --output_dir holding {LABELS_FILE}")
    if saved and saved != labels:
        raise ValueError(f"{saved_path} holds {saved}, which differs from {labels}: the "
                         f"checkpoints in --output_dir were trained with that list; use another "
                         f"--output_dir or the same labels")
    if train is not None:
        unknown = sorted({t for s in train.sentences for t in s.tags} - set(labels))
        if unknown:
            raise ValueError(f"{train.path}: tags {unknown} are not in the label list {labels}")
    return labels


# --------------------------------------------------------------------------- data
class NerData:
    """A CoNLL file turned into units and windows."""

    def __init__(self, opts, tokenizer, path, labels, require_labels, what):
        from bert_tf.data.ner import encode_units, group_sentences, read_conll
        start = time.perf_counter()
        self.conll = read_conll(path, require_labels=require_labels)
        self.units = group_sentences(self.conll, opts.context)
        self.labels = labels
        label_index = {label: i for i, label in enumerate(labels)}
        label_ids = None
        if require_labels:
            unknown = sorted({t for tags in self.units.tags for t in tags} - set(labels))
            if unknown:
                logger.warning("%s: tags %s are not in the label list: the model cannot predict "
                               "them (they still count in recall)", path, unknown)
            label_ids = [[label_index.get(t, 0) for t in tags] for tags in self.units.tags]
        self.features = encode_units(self.units.words, tokenizer, opts.max_seq_length,
                                     opts.doc_stride, label_ids, log_first=2 if require_labels
                                     else 0, logger=logger)
        counts = self.conll.entity_counts()
        logger.info("%s %s: %d documents, %d sentences, %d words, %d %s units -> %d windows "
                    "(%.1f s)%s", what, path, self.conll.num_documents,
                    len(self.conll.sentences), sum(len(w) for w in self.units.words),
                    len(self.units.words), opts.context, self.features.num_windows,
                    time.perf_counter() - start,
                    f"; entities {dict(sorted(counts.items()))}" if counts else "")

    def dataset_fn(self, global_batch_size, is_training, seed=None):
        return arrays_dataset_fn(self.features.arrays, global_batch_size, is_training, seed)

    @property
    def loss_label_ids(self):
        """The gold label ids at the positions the loss sees: each word's first WordPiece in
        every window."""
        arrays = self.features.arrays
        return arrays["label_ids"][arrays["label_weights"] > 0]


def predict_tags(trainer, data, batch_size, what):
    """(per-sentence predicted tags, per-sentence word logits) for every sentence of `data`."""
    from bert_tf.data.ner import WordScores, per_sentence
    num_words = [len(w) for w in data.units.words]
    scores = WordScores(data.features, num_words, len(data.labels))
    done, total = 0, data.features.num_windows
    start = last_log = time.perf_counter()
    for outputs, features in trainer.predict(data.dataset_fn(batch_size, False),
                                             feature_keys=("window_index",)):
        for index, logits in zip(features["window_index"], outputs["logits"]):
            scores.add(int(index), logits)
        done += len(features["window_index"])
        now = time.perf_counter()
        if now - last_log > 30:
            rate = done / (now - start)
            logger.info("%s: %d/%d windows, %.1f windows/s, eta %.0f s", what, done, total,
                        rate, (total - done) / max(rate, 1e-9))
            last_log = now
    unit_scores = scores.result()
    unit_tags = [[data.labels[i] for i in s.argmax(axis=-1)] for s in unit_scores]
    logger.info("%s: %d windows in %.1f s", what, total, time.perf_counter() - start)
    return per_sentence(data.units, unit_tags), per_sentence(data.units, unit_scores)


def word_loss(logits, gold_tags, labels):
    """Mean cross-entropy over words of per-sentence word logits (the training loss, counted
    once per word)."""
    index = {label: i for i, label in enumerate(labels)}
    total, count = 0.0, 0
    for sentence_logits, tags in zip(logits, gold_tags):
        if not len(tags):
            continue
        log_probs = log_softmax(np.asarray(sentence_logits, np.float64))
        ids = [index.get(t) for t in tags]
        known = [(k, i) for k, i in enumerate(ids) if i is not None]
        total -= sum(log_probs[k, i] for k, i in known)
        count += len(known)
    return total / count if count else float("nan")


def _predict_and_score(opts, trainer, data, prefix, what):
    """Predicts `data`; with gold tags also scores them. Returns (values or None, tags, NerScores
    or None)."""
    from bert_tf.metrics.ner import score
    batch = opts.eval_batch_size if prefix == "eval" else opts.predict_batch_size
    tags, logits = predict_tags(trainer, data, batch, what)
    if not data.conll.labelled:
        return None, tags, None
    gold = [s.tags for s in data.conll.sentences]
    scores = score(gold, tags)
    values = scores.as_dict()
    values["loss"] = word_loss(logits, gold, data.labels)
    logger.info("%s entity scores:\n%s", what, scores.report())
    return values, tags, scores


def _write_outputs(opts, data, prefix, tags, scores):
    """<prefix>_predictions.txt and, with scores, <prefix>_report.txt; returns the first."""
    from bert_tf.data.ner import write_predictions
    path = write_predictions(os.path.join(opts.output_dir, f"{prefix}_predictions.txt"),
                             data.conll, tags)
    if scores is not None:
        fileio.atomic_write_text(os.path.join(opts.output_dir, f"{prefix}_report.txt"),
                                 scores.report())
    return path


def _score_and_write(opts, trainer, data, prefix, what):
    """Predicts `data`, writes <prefix>_predictions.txt; with gold tags also scores them and
    writes <prefix>_report.txt. Returns (values or None, predictions path)."""
    values, tags, scores = _predict_and_score(opts, trainer, data, prefix, what)
    return values, _write_outputs(opts, data, prefix, tags, scores)


def class_weights(opts, label_ids, labels):
    """The loss weight of each label for --class_weights (None without it), counted for "auto"
    on `label_ids`, the training labels at the positions the loss sees
    (NerData.loss_label_ids)."""
    if not opts.class_weights:
        return None
    from bert_tf.training.class_weights import describe, resolve_class_weights
    weights = resolve_class_weights(opts.class_weights, labels, label_ids)
    logger.info("class weights: %s", describe(weights, labels))
    return weights


# --------------------------------------------------------------------------- the job
def build_model(opts, num_labels):
    from bert_tf.model import BertEncoder, BertTokenClassifier
    return BertTokenClassifier(BertEncoder(opts.config), num_labels)


class NerTask(FinetuneTask):
    """Token classification on CoNLL files: entity scores, <prefix>_predictions.txt. prepare()
    reads the tokenizer and the label list (self.tokenizer, self.labels)."""

    kind = "tagger"
    default_metric = DEFAULT_METRIC

    def prepare(self):
        from bert_tf.data.ner import read_conll
        opts = self.opts
        self.tokenizer = load_tokenizer(opts)
        train_conll = read_conll(opts.train_file, require_labels=True) if opts.do_train else None
        self.labels = resolve_labels(opts, train_conll)
        logger.info("labels (%d): %s", len(self.labels), " ".join(self.labels))
        if opts.teacher_checkpoint:
            from bert_tf.jobs.teachers import read_tagger_teacher
            self.teacher = read_tagger_teacher(opts.teacher_checkpoint, self.labels)
        return save_label_list(opts.output_dir, self.labels)

    def _data(self, path, require_labels, what):
        return NerData(self.opts, self.tokenizer, path, self.labels, require_labels, what)

    def training_data(self):
        opts = self.opts
        train = self._data(opts.train_file, True, "train")
        arrays = train.features.arrays
        if self.teacher is not None:
            arrays = self.student_arrays(train)
        return TrainingData(arrays_dataset_fn(arrays, opts.train_batch_size, True, opts.seed),
                            len(arrays["input_ids"]), "windows", label_ids=train.loss_label_ids)

    def student_arrays(self, train):
        """The training windows with the teacher's logits of each word as their
        `teacher_logits` feature (teacher_outputs: scored once, kept for a rerun), followed by
        the --distill_transfer_file windows (`label_weight` 0: no gold tags)."""
        from bert_tf.jobs.ner_distillation import (teacher_word_logits, window_teacher_logits,
                                                   words_fingerprint)
        parts = [train]
        if self.opts.distill_transfer_file:
            parts.append(self._data(self.opts.distill_transfer_file, False, "transfer"))
        units = [w for p in parts for w in p.units.words]
        scored = self.teacher_outputs(
            {"words": words_fingerprint(units), "stride": WORD_WINDOW_STRIDE},
            lambda: {"word_logits": np.concatenate(teacher_word_logits(
                self.teacher, units, self.opts.eval_batch_size, WORD_WINDOW_STRIDE))})
        bounds = np.cumsum([0] + [len(words) for words in units])
        words = [scored["word_logits"][a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        with_targets = []              # new dicts: the parts' own arrays stay as they were
        for part in parts:
            with_targets.append(dict(part.features.arrays, teacher_logits=window_teacher_logits(
                part.features, words[:len(part.units.words)], len(self.labels))))
            words = words[len(part.units.words):]
        if len(parts) == 1:
            return with_targets[0]
        own, transfer = with_targets
        arrays = {k: np.concatenate([own[k], transfer[k]]) for k in own}
        arrays["label_weight"] = np.concatenate([np.ones(train.features.num_windows, np.float32),
                                                 np.zeros(len(transfer["input_ids"]), np.float32)])
        logger.info("distillation: %d training windows and %d transfer windows (%s)",
                    train.features.num_windows, len(transfer["input_ids"]),
                    self.opts.distill_transfer_file)
        return arrays

    def loss(self, training):
        weights = (class_weights(self.opts, training.label_ids, self.labels) if training
                   else None)
        if self.teacher is not None:
            from bert_tf.objectives.distillation import TaggingDistillationObjective
            return TaggingDistillationObjective(self.opts.distill_temperature,
                                                self.opts.distill_alpha, weights)
        from bert_tf.objectives.tagging import TaggingObjective
        return TaggingObjective(weights)

    def build_model(self):
        return build_model(self.opts, len(self.labels))

    def load_eval_data(self):
        return self._data(self.opts.eval_file, True, "eval")

    def evaluate(self, trainer, step, eval_set):
        values, tags, scores = _predict_and_score(self.opts, trainer, eval_set, "eval",
                                                  f"eval@{step}")
        return Evaluation(step, values, (tags, scores))

    def record_evaluation(self, trainer, evaluation, eval_set, summarized):
        _write_outputs(self.opts, eval_set, "eval", *evaluation.artifact)
        return super().record_evaluation(trainer, evaluation, eval_set, summarized)

    def predict(self, trainer, evaluation, eval_set, decision):
        data = self._data(self.opts.predict_file, False, "predict")
        values, path = _score_and_write(self.opts, trainer, data, "test", "predict")
        logger.info("predictions of %d sentences: %s", len(data.conll.sentences), path)
        return dict(values or {}, predictions=path)

    def contract(self, decision=None):
        return self.opts.contract(labels=self.labels, window_stride=self.opts.doc_stride)


def run(opts, strategy):
    """Trains, evaluates, predicts and/or exports (bert_tf.jobs.driver.run_task). Returns
    {"train", "eval", "predict", "export"}: training values, eval metrics, {"predictions": path,
    plus metrics if the file had tags}, and the SavedModel version path."""
    return run_task(NerTask(opts), strategy)
