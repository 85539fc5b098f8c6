"""Multi-label classification data (run_classifier --multi_label): each example has a SET of
labels, possibly empty.

The generic task's label column holds the labels joined by a separator ("PER,LOC" with the
default ","; spaces around each label are stripped, a label repeated counts once); an empty cell
means "no label". A JSONL label may also be a list of strings (or null for none). Every label
must be in the label list: given (--labels), else the sorted union of the training labels
(numerically when every label is an integer, as the single-label generic task sorts them); a
row with an unknown label stops the read with the file and line (or is skipped and counted with
--skip_bad_rows). An example's label is a tuple of label strings in file order; test rows have
label None.

MultiLabelColumns feeds classifier_dataset: the same texts as ExampleColumns, with multi-hot
float32 label_ids [N, K] (K = number of labels, column k = label k of the list).
"""

import dataclasses

import numpy as np

from bert_tf.data.classification.examples import DataFormatError
from bert_tf.data.classification.generic import GenericProcessor, sorted_labels
from bert_tf.data.classification.pipeline import ExampleColumns
from bert_tf.data.classification.processor import read_examples
from bert_tf.data.classification.tasks import TaskInfo

DEFAULT_SEPARATOR = ","
PRIMARY_METRIC = "micro_f1"


def parse_label_set(value, separator=DEFAULT_SEPARATOR, labels=()):
    """The tuple of labels of one label cell (file order, duplicates dropped); raises
    ValueError with the reason for an unusable cell. `labels` empty accepts any label."""
    if value is None:
        items = []
    elif isinstance(value, bool):
        raise ValueError(f"label cell {value!r} is a boolean, not labels")
    elif isinstance(value, int):
        items = [str(value)]
    elif isinstance(value, str):
        text = value.strip()
        items = [part.strip() for part in text.split(separator)] if text else []
        if any(not part for part in items):
            raise ValueError(f"empty label in {value!r} (labels are separated by "
                             f"{separator!r}; an empty cell means no label)")
    elif isinstance(value, (list, tuple)):
        items = []
        for item in value:
            if isinstance(item, int) and not isinstance(item, bool):
                item = str(item)
            if not isinstance(item, str) or not item.strip():
                raise ValueError(f"label list {value!r} holds {item!r}: labels are non-empty "
                                 f"strings")
            items.append(item.strip())
    else:
        raise ValueError(f"label cell holds {type(value).__name__}, not labels")
    unique = tuple(dict.fromkeys(items))
    if labels:
        unknown = [item for item in unique if item not in labels]
        if unknown:
            raise ValueError(f"unknown label(s) {unknown} in {value!r}; expected labels from "
                             f"{list(labels)}")
    return unique


def format_label_set(selected, labels, separator=DEFAULT_SEPARATOR):
    """The label cell of one row of booleans [K] (labels in label-list order)."""
    return separator.join(label for label, on in zip(labels, selected) if on)


def multi_hot(label_sets, labels, names=None):
    """float32 [N, K]: row i has 1.0 at the label ids of label_sets[i] (None: all 0). `names`
    (e.g. the examples' guids) name rows in errors."""
    index = {label: k for k, label in enumerate(labels)}
    out = np.zeros((len(label_sets), len(labels)), np.float32)
    for i, label_set in enumerate(label_sets):
        if isinstance(label_set, str):
            raise ValueError(f"example {names[i] if names else i}: label {label_set!r} is a "
                             f"string, not a label set (read the data with --multi_label)")
        for label in label_set or ():
            if label not in index:
                raise ValueError(f"example {names[i] if names else i}: label {label!r} is not "
                                 f"in the label list {list(labels)}")
            out[i, index[label]] = 1.0
    return out


class MultiLabelProcessor(GenericProcessor):
    """GenericProcessor whose label column holds label sets (see the module docstring). Takes
    GenericProcessor's arguments plus `label_separator`."""

    def __init__(self, text_a_column, label_column=None, text_b_column=None, *,
                 label_separator=DEFAULT_SEPARATOR, is_regression=False, **kwargs):
        if is_regression:
            raise ValueError("--multi_label and --is_regression exclude each other")
        if not label_separator:
            raise ValueError("--label_separator must not be empty")
        super().__init__(text_a_column, label_column, text_b_column, **kwargs)
        self.label_separator = label_separator
        for label in self._labels or ():
            if label_separator in label:
                raise ValueError(f"label {label!r} contains the label separator "
                                 f"{label_separator!r} (choose another --label_separator)")

    @property
    def info(self):
        return TaskInfo(name=self.name, labels=tuple(self._labels or ()),
                        metric_task="multi_label", primary_metric=PRIMARY_METRIC)

    def get_train_examples(self, data_dir):
        examples = self._read_split(data_dir, "train")
        if self._labels is None:
            labels = sorted_labels({label for example in examples for label in example.label})
            if not labels:
                raise DataFormatError(self.last_read.path, 1,
                                      "no labels at all in the label column: cannot infer the "
                                      "label list (give --labels)")
            self._labels = labels
        return examples

    def _read_split(self, data_dir, split):
        path, layout = self._layout(data_dir, split)
        known, separator = self._known_labels(), self.label_separator

        def parse(value, reject, line):
            try:
                return parse_label_set(value, separator, known)
            except ValueError as e:
                reject(line, f"column {layout.label!r}: {e}")
                return None

        examples, stats = read_examples(path, layout, split, skip_bad_rows=self.skip_bad_rows,
                                        label_parser=parse)
        self.read_stats.append(stats)
        return examples


class MultiLabelColumns(ExampleColumns):
    """ExampleColumns with multi-hot float32 label_ids [N, K] (test rows: all 0). Extra
    keyword arguments go to ExampleColumns."""

    multi_label = True

    def __init__(self, examples, label_list, **kwargs):
        label_ids = multi_hot([e.label for e in examples], label_list,
                              [e.guid for e in examples])
        super().__init__([dataclasses.replace(e, label=None) for e in examples], label_list,
                         **kwargs)
        self.label_ids = label_ids
