"""run_classifier's task distillation: a student (often smaller: --student_layers, or a smaller
--bert_config_file) trained on the gold labels and on the soft targets of a fine-tuned
run_classifier run (--teacher_checkpoint), by bert_tf.objectives.distillation's loss. The
flags every distilling runner shares (TeacherOptions) are here too; the teacher itself (reading
its run, its targets and their cache) is bert_tf.jobs.teachers, the extra examples
bert_tf.data.classification.augmentation, and run_ner's and run_squad's teacher passes are
bert_tf.jobs.ner_distillation and bert_tf.jobs.squad_distillation.

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
import logging

from bert_tf import fileio
from bert_tf.data.classification.augmentation import (augmented_examples, crossed_examples,
                                                      neighbour_examples, transfer_examples)
from bert_tf.options import non_defaults, option

logger = logging.getLogger("bert_tf")

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
class TransferSetOptions:
    """The transfer-set flag of run_classifier and run_ner (run_squad has none)."""

    distill_transfer_file: str = option(
        None, "--teacher_checkpoint: unlabelled inputs to add to the training set (a transfer "
        "set): for run_classifier one example a line, text_a or text_a<TAB>text_b for "
        "sentence-pair tasks (UTF-8, no header); for run_ner a CoNLL file of sentences (words "
        "only; a tag column is ignored). The teacher labels them and the student learns its "
        "soft targets on them alone: the gold-label loss averages over the labelled examples "
        "only. Epochs and steps count them; --distill_augment copies only the labelled "
        "examples.")

    def validate_transfer_set(self):
        """--distill_transfer_file, when given, must exist (checked before any training)."""
        path = self.distill_transfer_file
        if path and not fileio.exists(path):
            raise FileNotFoundError(f"--distill_transfer_file {path} does not exist")


@dataclasses.dataclass(kw_only=True)
class DistillationOptions(TeacherOptions, TransferSetOptions):
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
        self.validate_transfer_set()


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


