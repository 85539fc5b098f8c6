"""run_classifier's task distillation: a student (often smaller: --student_layers, or a smaller
--bert_config_file) trained on the gold labels and on the soft targets of a fine-tuned
run_classifier run (--teacher_checkpoint), by bert_tf.objectives.distillation's loss. The
flags every distilling runner shares (TeacherOptions) and the reading of a teacher run are
here too; run_ner's and run_squad's teacher passes are bert_tf.jobs.ner_distillation and
bert_tf.jobs.squad_distillation.

The teacher is frozen and runs in eval mode (no dropout), and the training examples are the
same every epoch, so its logits are the same at every step: they are computed once, before
training, in one pass over the training set with the teacher's own tokenization (its
vocabulary, casing, sequence length and windows, from its run_options.json), then fed to the
student beside each example's features (`teacher_logits`, looked up by `example_index`). The
teacher is not kept in memory while the student trains, and a training step costs what it
costs without distillation.

--distill_hidden_weight also matches the student's intermediate [CLS] vectors to the
teacher's (Patient Knowledge Distillation, Sun et al. 2019): student block j (of Ls) to teacher
block (j + 1) * Lt // Ls - 1 (of Lt), e.g. a 3-layer student's blocks to a 6-layer
teacher's blocks 1, 3 and 5. The teacher's pass records those vectors beside its logits; both
models must have the same hidden size.

Small tasks give the student few examples to learn the teacher's function from:
--distill_augment adds copies of each training example with words dropped at random, labelled
by the teacher's soft targets like the originals (the transfer set of Tang et al. 2019 and
TinyBERT, by word dropout). --distill_neighbours adds copies with words replaced by their
neighbours in the teacher's word-embedding table (TinyBERT's augmentation); a replacement can
change what a text means, so these copies are unlabelled: the teacher's soft targets alone.
--distill_cross_pairs (sentence-pair tasks) adds new pairs of the training set's own
sentences, each with its most similar sentence of another pair (bert_tf.data.cross_pairs),
unlabelled too. --distill_transfer_file adds unlabelled texts of the user's (a transfer set,
Hinton et al. 2015). The gold-label loss skips unlabelled examples (their `label_weight`
feature is 0).
"""

import dataclasses
import io
import json
import logging
import os
import time

import numpy as np

from bert_tf import fileio
from bert_tf.options import non_defaults, option

logger = logging.getLogger("bert_tf")

TARGETS_FILE = "teacher_targets.npz"     # run_classifier's, in output_dir

TEACHER_SETTINGS = ("distill_temperature", "distill_alpha")
_DISTILL_SETTINGS = TEACHER_SETTINGS + (
    "distill_hidden_weight", "distill_augment", "distill_augment_drop", "distill_neighbours",
    "distill_neighbour_rate", "distill_cross_pairs", "distill_cross_similarity",
    "distill_transfer_file")


@dataclasses.dataclass(kw_only=True)
class TeacherOptions:
    """The flags every distilling runner takes (run_classifier, run_ner, run_squad). With
    student_layers, `config` (--bert_config_file, else the config beside --init_checkpoint)
    describes --init_checkpoint and becomes the student's: num_hidden_layers =
    len(student_layers)."""

    teacher_checkpoint: str = option(
        None, "Distil a fine-tuned run of this runner into this one: its output_dir (the latest "
        "checkpoint) or its best/ folder. The student learns from the teacher's soft targets "
        "(--distill_temperature, --distill_alpha) beside the gold labels; a classifier's or "
        "tagger's labels must be the task's. Its logits are computed once, before training.")
    distill_temperature: float = option(
        2.0, "--teacher_checkpoint, classification, tagging and answer spans: the softmax "
        "temperature T of the soft targets; the soft loss is KL(teacher_T || student_T) * T^2.")
    distill_alpha: float = option(
        0.5, "--teacher_checkpoint: the weight of the soft loss (the squared distance to the "
        "teacher's score for regression); the gold-label loss gets 1 - alpha.")
    student_layers: list = option(
        None, "Initialise the encoder from these Transformer layers of --init_checkpoint, in "
        "order (e.g. 0,2,4: a 3-layer model; embeddings, pooler and head as they are there); "
        "the run's bert_config.json gets num_hidden_layers = their number. Alternatively give "
        "a smaller --bert_config_file.")

    def __post_init__(self):
        if self.student_layers:
            self.student_layers = parse_student_layers(self.student_layers,
                                                       self.config.num_hidden_layers)
            if not self.init_checkpoint:
                raise ValueError("--student_layers picks layers of --init_checkpoint: give one")
            self.config = self.config.replace(num_hidden_layers=len(self.student_layers))
        else:
            self.student_layers = None

    def validate_teacher(self, settings=TEACHER_SETTINGS):
        """The shared flags' values; `settings`: the distillation flags that need
        --teacher_checkpoint. Raises ValueError naming the flags."""
        if not self.teacher_checkpoint:
            given = non_defaults(self, settings)
            if given:
                raise ValueError(f"{', '.join(given)}: only with --teacher_checkpoint")
            return
        if not self.do_train:
            raise ValueError("--teacher_checkpoint trains a student: it needs --do_train")
        if not 0.0 <= self.distill_alpha <= 1.0:
            raise ValueError(f"--distill_alpha must be in [0, 1], got {self.distill_alpha}")
        if not self.distill_temperature > 0:
            raise ValueError(f"--distill_temperature must be > 0, got "
                             f"{self.distill_temperature}")
        if not fileio.exists(self.teacher_checkpoint):
            raise FileNotFoundError(f"--teacher_checkpoint {self.teacher_checkpoint} does not "
                                    f"exist")


@dataclasses.dataclass(kw_only=True)
class DistillationOptions(TeacherOptions):
    """run_classifier's distillation flags: the shared ones and the classifier's own."""

    distill_hidden_weight: float = option(
        0.0, "--teacher_checkpoint: the weight beta of a third loss term, the squared distance "
        "between the unit-length [CLS] vectors of each student block and of the teacher block "
        "matched to it (block j of Ls to block (j+1)*Lt//Ls-1 of Lt), summed over the "
        "student's blocks (Patient Knowledge Distillation; its paper tried 10 to 1000). 0: "
        "off. Needs the teacher's hidden size.")
    distill_augment: int = option(
        0, "--teacher_checkpoint: add this many copies of each training example, each with "
        "words dropped at random (--distill_augment_drop), to the training set; the teacher "
        "gives their soft targets, and their gold label is the original's. Epochs and steps "
        "count the enlarged set.")
    distill_augment_drop: float = option(
        0.1, "--distill_augment: the chance of each word (whitespace-separated) to be dropped "
        "from a copy; a text keeps at least one word.")
    distill_neighbours: int = option(
        0, "--teacher_checkpoint: add this many copies of each training example whose words "
        "were each replaced, with chance --distill_neighbour_rate, by one of their 8 nearest "
        "words in the teacher's word-embedding table (whole words of 4 letters or more; "
        "TinyBERT's augmentation). A replacement can change the label, so the copies are "
        "unlabelled: the student learns the teacher's soft targets on them alone. Epochs and "
        "steps count them.")
    distill_neighbour_rate: float = option(
        0.3, "--distill_neighbours: the chance of each eligible word to be replaced in a copy.")
    distill_cross_pairs: bool = option(
        False, "--teacher_checkpoint, sentence-pair tasks: add new pairs made of the training "
        "set's sentences, each sentence with its most similar sentence of another training "
        "pair (cosine of tf-idf weighted words of at least --distill_cross_similarity), in "
        "both orders; never a pair of the evaluation set. Pair tasks are often drawn from "
        "clusters of texts about one event (MRPC: news stories), so these are in-domain near "
        "paraphrases and near misses. Unlabelled: the student learns the teacher's soft "
        "targets on them alone. Epochs and steps count them. The search is quadratic in the "
        "number of sentences: seconds for MRPC, hours for QQP.")
    distill_cross_similarity: float = option(
        0.3, "--distill_cross_pairs: the least similarity, in (0, 1), of a new pair's "
        "sentences.")
    distill_transfer_file: str = option(
        None, "--teacher_checkpoint: unlabelled texts to add to the training set (a transfer "
        "set), one example a line: text_a, or text_a<TAB>text_b for sentence-pair tasks; "
        "UTF-8, no header. The student learns the teacher's soft targets on them; the "
        "gold-label loss averages over the labelled examples only. Epochs and steps count "
        "them; --distill_augment copies only the labelled examples.")

    def validate_distillation(self):
        """The flags' values and combinations; raises ValueError naming the flags."""
        self.validate_teacher(_DISTILL_SETTINGS)
        if not self.teacher_checkpoint:
            return
        if self.multi_label:
            raise ValueError("--teacher_checkpoint: distilling a --multi_label run is not "
                             "supported (classification and regression are)")
        if not self.distill_hidden_weight >= 0:
            raise ValueError(f"--distill_hidden_weight must be >= 0, got "
                             f"{self.distill_hidden_weight}")
        if self.distill_hidden_weight and self.doc_stride:
            raise ValueError("--distill_hidden_weight matches one [CLS] vector per example: it "
                             "cannot be combined with --doc_stride (several windows each)")
        if self.distill_augment < 0:
            raise ValueError(f"--distill_augment must be >= 0 (copies per training example), "
                             f"got {self.distill_augment}")
        if not 0.0 < self.distill_augment_drop < 1.0:
            raise ValueError(f"--distill_augment_drop must be in (0, 1), got "
                             f"{self.distill_augment_drop}")
        if self.distill_neighbours < 0:
            raise ValueError(f"--distill_neighbours must be >= 0 (copies per training "
                             f"example), got {self.distill_neighbours}")
        if not 0.0 < self.distill_neighbour_rate <= 1.0:
            raise ValueError(f"--distill_neighbour_rate must be in (0, 1], got "
                             f"{self.distill_neighbour_rate}")
        if not 0.0 < self.distill_cross_similarity < 1.0:
            raise ValueError(f"--distill_cross_similarity must be in (0, 1), got "
                             f"{self.distill_cross_similarity}")
        check_transfer_file(self.distill_transfer_file)


def check_transfer_file(path):
    """--distill_transfer_file, when given, must exist (checked before any training)."""
    if path and not fileio.exists(path):
        raise FileNotFoundError(f"--distill_transfer_file {path} does not exist")


def parse_student_layers(values, num_layers):
    """The layer indices of --student_layers (strings or ints), checked: integers in
    [0, num_layers), strictly increasing."""
    flag = f"--student_layers={','.join(map(str, values))}"
    try:
        layers = [int(str(v).strip()) for v in values]
    except ValueError:
        raise ValueError(f"{flag}: expected layer numbers, comma-separated (e.g. 0,2,4)") \
            from None
    outside = [i for i in layers if not 0 <= i < num_layers]
    if outside:
        raise ValueError(f"{flag}: layer {outside[0]} is not one of --init_checkpoint's "
                         f"{num_layers} layers (0-{num_layers - 1}, as its config says)")
    if any(b <= a for a, b in zip(layers, layers[1:])):
        raise ValueError(f"{flag}: the layers must be strictly increasing (each taken once, "
                         f"in the order the student stacks them)")
    return layers


def matched_teacher_layers(teacher_layers, student_layers):
    """The teacher block matched to each student block (--distill_hidden_weight): the j-th of
    `student_layers` to (j + 1) * teacher_layers // student_layers - 1, so the last
    blocks meet and each student block stands for an equal share of the teacher's."""
    if student_layers > teacher_layers:
        raise ValueError(f"--distill_hidden_weight: the student has {student_layers} layers, "
                         f"more than the teacher's {teacher_layers}; each student layer is "
                         f"matched to a different teacher layer")
    return [(j + 1) * teacher_layers // student_layers - 1 for j in range(student_layers)]


def hidden_matching(teacher, config):
    """The teacher blocks whose [CLS] vectors the student (`config`) matches, one per student
    block (--distill_hidden_weight), after checking that the two can be matched."""
    where = f"--distill_hidden_weight with --teacher_checkpoint {teacher.path}"
    if teacher.doc_stride:
        raise ValueError(f"{where}: the teacher read its texts in windows (doc_stride "
                         f"{teacher.doc_stride}), so it has no single [CLS] vector per text")
    if teacher.config.hidden_size != config.hidden_size:
        raise ValueError(f"{where}: the teacher's hidden size is {teacher.config.hidden_size}, "
                         f"the student's {config.hidden_size}; the [CLS] vectors are compared "
                         f"as they are, so they must be the same")
    layers = matched_teacher_layers(teacher.config.num_hidden_layers, config.num_hidden_layers)
    logger.info("distillation: student blocks 0-%d match the [CLS] vectors of teacher blocks "
                "%s", config.num_hidden_layers - 1, layers)
    return layers


def student_examples(examples, opts, teacher, placeholder, eval_examples=()):
    """(the student's training examples, how many of them lead with gold labels): the task's
    `examples`, their --distill_augment copies (labelled), then unlabelled ones, each with the
    `placeholder` label: --distill_neighbours copies of `examples`, --distill_cross_pairs
    pairs of their sentences (none of `eval_examples`' pairs) and the texts of
    --distill_transfer_file."""
    original = len(examples)
    if opts.distill_augment:
        examples = augmented_examples(examples, opts.distill_augment, opts.distill_augment_drop,
                                      opts.seed)
        logger.info("distillation: %d training examples and %d copies with words dropped "
                    "(--distill_augment=%d, --distill_augment_drop=%g)", original,
                    len(examples) - original, opts.distill_augment, opts.distill_augment_drop)
    labelled = len(examples)
    if opts.distill_neighbours:
        replace = teacher_replacer(teacher, opts.distill_neighbour_rate, opts.seed)
        examples = list(examples) + neighbour_examples(
            examples[:original], opts.distill_neighbours, replace, placeholder)
        logger.info("distillation: %d unlabelled copies with words replaced by embedding "
                    "neighbours (--distill_neighbours=%d, --distill_neighbour_rate=%g)",
                    len(examples) - labelled, opts.distill_neighbours,
                    opts.distill_neighbour_rate)
    if opts.distill_cross_pairs:
        before = len(examples)
        examples = list(examples) + crossed_examples(
            examples[:original], opts.distill_cross_similarity, placeholder, eval_examples)
        logger.info("distillation: %d unlabelled pairs of the training set's sentences, in "
                    "both orders (--distill_cross_pairs, --distill_cross_similarity=%g)",
                    len(examples) - before, opts.distill_cross_similarity)
    if opts.distill_transfer_file:
        before = len(examples)
        examples = list(examples) + transfer_examples(
            opts.distill_transfer_file, any(e.text_b is not None for e in examples), placeholder)
        logger.info("distillation: %d unlabelled examples of the transfer set %s",
                    len(examples) - before, opts.distill_transfer_file)
    return examples, labelled


def augmented_examples(examples, copies, drop, seed):
    """`examples` (InputExamples), then `copies` copies of each (guid "<guid>-aug<k>", the same
    label) whose texts lost each word with probability `drop`, at least one word kept. The
    copies are a function of `seed` alone."""
    rng = np.random.default_rng(seed)

    def dropped(text):
        if text is None:
            return None
        words = text.split()
        keep = rng.random(len(words)) >= drop
        if words and not keep.any():
            keep[rng.integers(len(words))] = True
        return " ".join(w for w, k in zip(words, keep) if k)

    extra = [dataclasses.replace(e, guid=f"{e.guid}-aug{k}", text_a=dropped(e.text_a),
                                 text_b=dropped(e.text_b))
             for k in range(1, copies + 1) for e in examples]
    return list(examples) + extra


def neighbour_examples(examples, copies, replace, label):
    """`copies` copies of each of `examples` (guid "<guid>-nbr<k>") with their texts passed
    through `replace` (a NeighbourReplacer), each with the placeholder `label`: unlabelled
    examples, for the teacher's soft targets alone."""
    return [dataclasses.replace(e, guid=f"{e.guid}-nbr{k}", text_a=replace(e.text_a),
                                text_b=None if e.text_b is None else replace(e.text_b),
                                label=label)
            for k in range(1, copies + 1) for e in examples]


def crossed_examples(examples, min_similarity, label, eval_examples=()):
    """Unlabelled examples (the placeholder `label`) of new pairs of the sentences of
    `examples` (bert_tf.data.cross_pairs), none of them a pair of `eval_examples` (MRPC's
    training set shares 44 sentences with its dev set), each pair in both orders: guids
    "cross-<k>" and "cross-<k>-swapped". Raises ValueError for a single-sentence task."""
    from bert_tf.data.classification.examples import InputExample
    from bert_tf.data.cross_pairs import cross_pairs
    if any(e.text_b is None for e in examples):
        raise ValueError("--distill_cross_pairs pairs the sentences of a sentence-pair task; "
                         "this task's training examples are single texts (no text_b)")
    found = cross_pairs([(e.text_a, e.text_b) for e in examples], min_similarity,
                        exclude=[(e.text_a, e.text_b) for e in eval_examples])
    return [example for k, (a, b) in enumerate(found) for example in (
        InputExample(f"cross-{k}", a, b, label),
        InputExample(f"cross-{k}-swapped", b, a, label))]


def teacher_replacer(teacher, probability, seed):
    """A NeighbourReplacer over the teacher's vocabulary and word-embedding table."""
    from bert_tf.checkpoints import read_any
    from bert_tf.data.neighbour_words import NeighbourReplacer
    from bert_tf.tokenization.vocab import load_vocab
    vocab = list(load_vocab(teacher.vocab_file))
    table = read_any(teacher.path, teacher.config)[1]["bert/embeddings/word_embeddings"]
    if len(table) < len(vocab):
        raise ValueError(f"--distill_neighbours: the teacher's vocabulary {teacher.vocab_file} "
                         f"has {len(vocab)} tokens, its word-embedding table {len(table)} rows")
    # Rows past the vocabulary (a vocab_size padded for speed) are never a token.
    return NeighbourReplacer(vocab, table[:len(vocab)], probability, seed)


def transfer_examples(path, text_pairs, label):
    """The InputExamples of --distill_transfer_file `path` (guid "transfer-<line>"), each
    with the placeholder `label` (the gold-label loss skips them): one a line, text_a, or with
    `text_pairs` text_a<TAB>text_b; blank lines are skipped. Raises DataFormatError naming the
    line of a wrong column count, an empty text or undecodable bytes, or an empty file."""
    from bert_tf.data.classification.examples import DataFormatError, InputExample
    wanted = 2 if text_pairs else 1
    what = "text_a<TAB>text_b (a sentence-pair task)" if text_pairs else "text_a alone (a " \
        "single-sentence task)"
    examples = []
    with fileio.open_binary(path) as f:
        for number, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as e:
                raise DataFormatError(path, number, f"not UTF-8 ({e.reason} at byte "
                                                    f"{e.start})") from None
            if not line.strip():
                continue
            texts = line.split("\t")
            if len(texts) != wanted:
                raise DataFormatError(path, number, f"{len(texts)} tab-separated columns; "
                                                    f"--distill_transfer_file lines hold {what}")
            if not all(t.strip() for t in texts):
                raise DataFormatError(path, number, "an empty text")
            examples.append(InputExample(f"transfer-{number}", texts[0],
                                         texts[1] if text_pairs else None, label))
    if not examples:
        raise DataFormatError(path, 1, "no examples (--distill_transfer_file is empty)")
    return examples


def label_weights(num_labelled, num_examples):
    """float32 [num_examples]: 1 for the first `num_labelled` (gold-labelled) training
    examples, 0 for the transfer set after them."""
    return (np.arange(num_examples) < num_labelled).astype(np.float32)


# --------------------------------------------------------------------------- the teacher
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
    task: str = "classifier"     # its model: "classifier", "regression", "tagger" or "squad"

    @property
    def is_regression(self):
        return self.task == "regression"

    def record(self):
        """What run_options.json records of the teacher."""
        return {"checkpoint": self.path, "labels": self.labels, "task": self.task}


def read_teacher(path, labels, is_regression, task):
    """The Teacher at `path` (a run_classifier output_dir or best/: its run_options.json,
    config, vocabulary and label_list.txt beside the checkpoint), checked against the student's
    task (`labels` in class-id order, `is_regression`, `task` its name in messages)."""
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
        raise ValueError(f"{where} is {held}, but the task {task} is {wanted}")
    return _teacher(path, record, None if is_regression else labels, task,
                    "regression" if is_regression else "classifier")


def read_tagger_teacher(path, labels):
    """The Teacher at `path` (a run_ner output_dir or best/), checked against the student's
    label list `labels` (in output order)."""
    from bert_tf.prediction.loading import checkpoint_head
    record = _teacher_record(path, "tagger", "run_ner")
    kind, units, _, _ = checkpoint_head(path)
    if kind != "tagger":
        raise ValueError(f"--teacher_checkpoint {path} holds a {kind} model, not a tagger")
    return _teacher(path, record, labels, "this run", "tagger")


def read_span_teacher(path, vocab_file, do_lower_case, max_seq_length,
                      version_2_with_negative=False):
    """The Teacher at `path` (a run_squad output_dir or best/). It scores the student's own
    windows, so its vocabulary and casing must be the student's (`vocab_file`,
    `do_lower_case`), and its position table must hold `max_seq_length`. A SQuAD 1.1 teacher
    of a SQuAD 2.0 student (`version_2_with_negative`) is logged as a warning."""
    from bert_tf.prediction.loading import checkpoint_head
    from bert_tf.tokenization.vocab import Vocabulary
    where = f"--teacher_checkpoint {path}"
    record = _teacher_record(path, "squad", "run_squad")
    kind, _, _, _ = checkpoint_head(path)
    if kind != "squad":
        raise ValueError(f"{where} holds a {kind} model, not a run_squad span labeler")
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
        what = "none" if record is None else f"a {record.head} run's"
        raise ValueError(f"--teacher_checkpoint {path}: not a {runner} run ({RUN_OPTIONS} "
                         f"beside it: {what}): give a fine-tuned {runner} output_dir or its "
                         f"best/")
    return record


def _teacher(path, record, labels, task, kind):
    """The Teacher of run `record` at `path`; with `labels` (class-id order) its
    label_list.txt must hold the same (`task` names the student's task in messages)."""
    from bert_tf.checkpoints import find_config
    from bert_tf.checkpoints.run_options import beside, settings_from_run
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
                             f"the task's labels {list(labels)} ({task}), in class-id order: "
                             f"the teacher must be fine-tuned on the same labels")
    vocab_file = beside(path, VOCAB_ASSET) or record.options.get("vocab_file")
    if not vocab_file:
        raise ValueError(f"{where}: no {VOCAB_ASSET} beside it and none in {record.path}")
    taken = settings_from_run(record, {}, kind)
    return Teacher(os.fspath(path), teacher_labels, find_config(path), vocab_file,
                   do_lower_case=taken.get("do_lower_case", True),
                   max_seq_length=taken.get("max_seq_length", 128),
                   doc_stride=taken.get("doc_stride", 0),
                   window_pooling=taken.get("window_pooling", "mean"),
                   max_windows=taken.get("max_windows", 0), task=kind)


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

    @tf.function(reduce_retracing=True)
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

    def fn(input_context):
        tables = {name: tf.constant(values) for name, values in targets.items()}  # float16 too
        return dataset_fn(input_context).map(
            lambda features: dict(features, **{
                name: tf.cast(tf.gather(table, row(features)), tf.float32)
                for name, table in tables.items()}))
    return fn
