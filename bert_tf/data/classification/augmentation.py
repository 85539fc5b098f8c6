"""Extra training examples for a distilled student (run_classifier --teacher_checkpoint): copies
with words dropped (labelled like their originals), copies with words replaced by embedding
neighbours, new pairs of the training set's own sentences and the lines of a transfer file
(unlabelled: the teacher's soft targets alone), and the per-example weight of the gold-label
loss that tells them apart. Data work only: bert_tf.jobs.distillation decides which to make."""

import dataclasses

import numpy as np

from bert_tf import fileio
from bert_tf.data.classification.examples import DataFormatError, InputExample


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
    from bert_tf.data.cross_pairs import cross_pairs
    if any(e.text_b is None for e in examples):
        raise ValueError("--distill_cross_pairs pairs the sentences of a sentence-pair task; "
                         "this task's training examples are single texts (no text_b)")
    found = cross_pairs([(e.text_a, e.text_b) for e in examples], min_similarity,
                        exclude=[(e.text_a, e.text_b) for e in eval_examples])
    return [example for k, (a, b) in enumerate(found) for example in (
        InputExample(f"cross-{k}", a, b, label),
        InputExample(f"cross-{k}-swapped", b, a, label))]


def transfer_examples(path, text_pairs, label):
    """The InputExamples of --distill_transfer_file `path` (guid "transfer-<line>"), each
    with the placeholder `label` (the gold-label loss skips them): one a line, text_a, or with
    `text_pairs` text_a<TAB>text_b; blank lines are skipped. Raises DataFormatError naming the
    line of a wrong column count, an empty text or undecodable bytes, or an empty file."""
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
