"""A small classification task from the same docstrings: which stdlib package does a sentence
come from?

Sentences found in more than one of the packages are dropped (their label is ambiguous) and
each sentence is kept once; every package then contributes the same number of sentences, so
chance accuracy is 1 / number of packages. Selection and the train/dev/test split depend only on
a hash of the sentence text (no random state), so they are the same on every run and a
sentence never lands in two splits. Files are run_classifier's generic TSV layout: a header
`sentence<TAB>package`, one example per line.
"""

import collections
import hashlib

from bert_tf import fileio

TEXT_COLUMN = "sentence"
LABEL_COLUMN = "package"
SPLITS = ("train", "dev", "test")


def _hash(text, salt):
    return int.from_bytes(hashlib.sha1(f"{salt}\0{text}".encode("utf-8")).digest()[:8], "big")


def labelled_sentences(docs, packages):
    """{package: sorted unique sentences} for the packages asked for, without sentences that
    occur in more than one of them."""
    found = {p: set() for p in packages}
    for doc in docs:
        if doc.package in found:
            found[doc.package].update(doc.sentences)
    owners = collections.Counter(s for sentences in found.values() for s in sentences)
    return {p: sorted(s for s in sentences if owners[s] == 1) for p, sentences in found.items()}


def build_task(docs, packages, dev_fraction=0.1, test_fraction=0.1, max_per_label=None,
               seed=12345, max_train_per_label=None):
    """{"train"|"dev"|"test": [(sentence, package)]}, balanced over packages. With
    max_train_per_label, the training split keeps at most that many sentences per package (a
    small labelled set, where pre-training matters); dev and test stay as they are.

    Raises ValueError when a package is unknown or too small to give every split a sentence."""
    packages = list(packages)
    if len(set(packages)) != len(packages) or len(packages) < 2:
        raise ValueError(f"need at least two distinct packages, got {packages}")
    if not (0 < dev_fraction < 1 and 0 < test_fraction < 1 and dev_fraction + test_fraction < 1):
        raise ValueError(f"dev_fraction ({dev_fraction}) and test_fraction ({test_fraction}) "
                         f"must be in (0, 1) and sum to less than 1")
    by_package = labelled_sentences(docs, packages)
    per_label = min(len(s) for s in by_package.values())
    if max_per_label:
        per_label = min(per_label, max_per_label)
    if per_label * min(dev_fraction, test_fraction) < 1:
        small = min(by_package, key=lambda p: len(by_package[p]))
        raise ValueError(f"package {small!r} has only {len(by_package[small])} usable sentences "
                         f"in this corpus: too few for train/dev/test splits")
    splits = {name: [] for name in SPLITS}
    for package in packages:
        chosen = sorted(by_package[package], key=lambda s: _hash(s, f"{seed}/select"))[:per_label]
        for sentence in chosen:
            u = _hash(sentence, f"{seed}/split") / 2.0 ** 64
            split = "test" if u < test_fraction else (
                "dev" if u < test_fraction + dev_fraction else "train")
            splits[split].append((sentence, package))
    for name in SPLITS:
        splits[name].sort(key=lambda example: _hash(example[0], f"{seed}/order"))
    if max_train_per_label:
        kept = collections.Counter()
        train = []
        for sentence, package in splits["train"]:
            kept[package] += 1
            if kept[package] <= max_train_per_label:
                train.append((sentence, package))
        splits["train"] = train
    return splits


def write_task(splits, folder):
    """Writes train.tsv, dev.tsv, test.tsv (atomically); returns {split: {package: count}}."""
    counts = {}
    for name, examples in splits.items():
        lines = [f"{TEXT_COLUMN}\t{LABEL_COLUMN}"]
        for sentence, label in examples:
            if "\t" in sentence or "\n" in sentence:
                raise ValueError(f"sentence contains a tab or newline: {sentence!r}")
            lines.append(f"{sentence}\t{label}")
        fileio.atomic_write_text(f"{folder}/{name}.tsv", "\n".join(lines) + "\n")
        counts[name] = dict(sorted(collections.Counter(label for _, label in examples).items()))
    return counts


def read_tsv(path):
    """[(sentence, package)] of a file written by write_task."""
    with open(path, encoding="utf-8") as f:
        header, *rows = f.read().splitlines()
    if header != f"{TEXT_COLUMN}\t{LABEL_COLUMN}":
        raise ValueError(f"{path}:1: expected the header {TEXT_COLUMN!r}<TAB>{LABEL_COLUMN!r}")
    return [tuple(row.split("\t")) for row in rows if row]
