"""Your own classification or regression data in TSV, CSV or JSONL files.

Columns are header names (str) or 0-based positions (int; a digit string counts as a
position when has_header=False, so flag values can be passed as they are). JSONL records
are objects, columns are keys. TSV is read with quoting disabled (like GLUE), CSV with
standard quoting. Test files need no label column; their examples have label None.
The label list is given, or inferred from the training file (sorted; numerically when every
label is an integer) and then checked on dev rows.
"""

from bert_tf.data.classification.examples import DataFormatError
from bert_tf.data.classification.processor import DataProcessor, Layout, find_file
from bert_tf.data.classification.records import FORMATS
from bert_tf.data.classification.tasks import TaskInfo


def _column(value, has_header, fmt, role):
    if value is None or isinstance(value, int):
        if isinstance(value, int) and fmt == "jsonl":
            raise ValueError(f"{role}: JSONL columns are keys, not positions ({value})")
        return value
    value = str(value)
    if value.isdigit() and (not has_header and fmt != "jsonl"):
        return int(value)
    if not has_header and fmt != "jsonl":
        raise ValueError(f"{role}: column {value!r} is a name but has_header=False; "
                         f"give its 0-based position")
    return value


def sorted_labels(labels):
    """`labels` sorted: numerically when every label is an integer (equal numbers such as "1"
    and "01" then as strings, so the order never depends on the input's), else as strings."""
    try:
        return sorted(labels, key=lambda label: (int(label), label))
    except ValueError:
        return sorted(labels)


class GenericProcessor(DataProcessor):
    """Processor for user files. Files default to train.<fmt>, dev.<fmt>, test.<fmt> in
    data_dir; `name` only labels logs and metadata."""

    def __init__(self, text_a_column, label_column=None, text_b_column=None, *, fmt="tsv",
                 has_header=True, labels=None, is_regression=False, id_column=None,
                 train_file=None, dev_file=None, test_file=None, name="generic",
                 skip_bad_rows=False):
        super().__init__(skip_bad_rows=skip_bad_rows)
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")
        if is_regression and labels:
            raise ValueError("a regression task takes no label list")
        self.fmt, self.has_header, self.name = fmt, bool(has_header), name
        self.text_a_column = _column(text_a_column, self.has_header, fmt, "text_a_column")
        self.text_b_column = _column(text_b_column, self.has_header, fmt, "text_b_column")
        self.label_column = _column(label_column, self.has_header, fmt, "label_column")
        self.id_column = _column(id_column, self.has_header, fmt, "id_column")
        if self.text_a_column is None:
            raise ValueError("text_a_column is required")
        self._is_regression = bool(is_regression)
        self._labels = [str(label) for label in labels] if labels else None
        if self._labels is not None and len(set(self._labels)) != len(self._labels):
            raise ValueError(f"duplicate labels in {self._labels}")
        self.files = {"train": train_file or f"train.{fmt}", "dev": dev_file or f"dev.{fmt}",
                      "test": test_file or f"test.{fmt}"}

    @property
    def info(self):
        regression = self._is_regression
        return TaskInfo(name=self.name, labels=tuple(self._labels or ()),
                        is_regression=regression,
                        metric_task="regression" if regression else "classification",
                        primary_metric="corr" if regression else "eval_accuracy")

    def get_labels(self, data_dir=None):
        """The label list: given, already inferred, or inferred now from data_dir's train file."""
        if self._is_regression:
            return []
        if self._labels is None:
            if data_dir is None:
                raise ValueError(f"{self.name}: the label list is unknown: pass labels=[...] "
                                 f"or read the training file first (get_train_examples or "
                                 f"get_labels(data_dir))")
            self.get_train_examples(data_dir)
        return list(self._labels)

    def get_train_examples(self, data_dir):
        examples = self._read_split(data_dir, "train")
        if self._labels is None and not self._is_regression:
            labels = sorted_labels({example.label for example in examples})
            if len(labels) < 2:
                raise DataFormatError(self.last_read.path, 1,
                                      f"need at least 2 distinct labels to infer the label "
                                      f"list, found {labels}")
            self._labels = labels
        return examples

    def get_dev_examples(self, data_dir):
        self.get_labels(data_dir)
        return self._read_split(data_dir, "dev")

    def _layout(self, data_dir, split):
        if split != "test" and self.label_column is None:
            raise ValueError(f"{self.name}: label_column is required to read the {split} set")
        name = self.files[split]
        layout = Layout(name, text_a=self.text_a_column, text_b=self.text_b_column,
                        label=self.label_column if split != "test" else None,
                        guid=self.id_column, header=self.has_header, fmt=self.fmt)
        return find_file(self.name, data_dir, [name]), layout

    def _known_labels(self):
        return self._labels or ()
