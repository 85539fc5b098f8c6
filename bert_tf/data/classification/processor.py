"""DataProcessor: the google-research/bert processor interface, and the row checks shared by
every task. A task describes where its fields are (`Layout`); `read_examples` turns a file
into InputExamples, rejecting malformed rows with the file and line, or skipping and
counting them when asked."""

import dataclasses
import logging
import math
import os

from bert_tf import fileio
from bert_tf.data.classification import records
from bert_tf.data.classification.examples import (BadRowError, DataFormatError, InputExample,
                                                  ReadStats)
from bert_tf.data.classification.tasks import TaskInfo

logger = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test")


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where one split's fields are in its file. Columns are header names (str) or 0-based
    positions (int).

    label: None when the file has no labels (GLUE test files).
    guid: column whose value becomes the guid's id; None uses the 0-based data row.
    header: the first line names the columns (ignored for jsonl).
    width: exact field count of a headerless file; None takes that of its first row.
    label_aliases: ((raw, label), ...) renames applied before checking (XNLI "contradictory").
    where: (column, value): keep only rows whose column holds value (XNLI language); other
      rows are not examples of this task, so they are neither returned nor counted as bad.
    """

    filename: str
    text_a: object
    text_b: object = None
    label: object = None
    guid: object = None
    header: bool = True
    width: int = None
    fmt: str = "tsv"
    label_aliases: tuple = ()
    where: tuple = None


class _Rejector:
    def __init__(self, path, stats, skip):
        self.path, self.stats, self.skip = path, stats, skip

    def __call__(self, line, reason):
        if not self.skip:
            raise BadRowError(self.path, line, reason)
        self.stats.skipped.append((line, reason))


def _resolve(path, layout, header):
    """Role -> position (tsv/csv) or key (jsonl) of every column the layout uses."""
    wanted = {"text_a": layout.text_a, "text_b": layout.text_b, "label": layout.label,
              "guid": layout.guid, "where": layout.where[0] if layout.where else None}
    positions = {}
    for role, column in wanted.items():
        if column is None:
            continue
        if layout.fmt == "jsonl":
            positions[role] = column
        elif isinstance(column, int):
            if header is not None and not 0 <= column < len(header):
                raise DataFormatError(path, 1, f"{role} column {column} is out of range: the "
                                               f"header has {len(header)} columns {header}")
            positions[role] = column
        elif header is None:
            raise DataFormatError(path, 1, f"{role} column {column!r} is given by name but the "
                                           f"file is read without a header; give its position")
        elif column not in header:
            raise DataFormatError(path, 1, f"no {role} column {column!r} in the header {header}")
        else:
            positions[role] = header.index(column)
    return positions


def _text(value, column, reject, line):
    if not isinstance(value, str):
        reject(line, f"column {column!r} holds {type(value).__name__}, not text")
        return None
    if not value.strip():
        reject(line, f"empty text in column {column!r}")
        return None
    return value


def _label(value, layout, labels, is_regression, reject, line):
    column = layout.label
    if is_regression:
        try:
            score = float(value)
        except (TypeError, ValueError):
            score = math.nan
        if not math.isfinite(score) or isinstance(value, bool):
            reject(line, f"label {value!r} in column {column!r} is not a finite number")
            return None
        return score
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        reject(line, f"missing or empty label in column {column!r}")
        return None
    value = dict(layout.label_aliases).get(value.strip(), value.strip())
    if labels and value not in labels:
        reject(line, f"unknown label {value!r}; expected one of {list(labels)}")
        return None
    return value


def read_examples(path, layout, split, labels=(), is_regression=False, skip_bad_rows=False,
                  label_parser=None):
    """(examples, ReadStats) for one file. `labels` empty accepts any non-empty label (used
    when the label list is inferred from the training file). `label_parser(value, reject,
    line)`, when given, replaces the label check: it returns the label, or None after calling
    reject(line, reason) (multi-label files: see multilabel.py)."""
    path = str(path)
    stats = ReadStats(path=path, split=split)
    reject = _Rejector(path, stats, skip_bad_rows)
    rows = records.iter_records(path, layout.fmt)
    header = None
    if layout.header and layout.fmt != "jsonl":
        first = next(rows, None)
        if first is None or first[1] is None:
            raise DataFormatError(path, 1, "empty first line where the header should be")
        header = [name.strip() for name in first[1]]
    positions = _resolve(path, layout, header)
    width = len(header) if header is not None else layout.width
    width_origin = "the header" if header is not None else "this file's layout"
    hint = " (a missing column, or a stray tab inside a text)" if layout.fmt == "tsv" else ""

    examples, blank_lines, row_index = [], [], -1
    for line, record in rows:
        if record is None:
            blank_lines.append(line)  # only an error if data follows (trailing ones are fine)
            continue
        for blank in blank_lines:
            reject(blank, "blank line")
        blank_lines = []
        row_index += 1
        if isinstance(record, ValueError):
            reject(line, str(record))
            continue
        if isinstance(record, dict):
            missing = [col for col in positions.values() if col not in record]
            if missing:
                reject(line, f"missing key(s) {missing}")
                continue
            fields = record
        else:
            if width is None:
                width, width_origin = len(record), f"line {line} (the first row)"
            if len(record) != width:
                reject(line, f"{len(record)} fields where {width_origin} has {width}{hint}")
                continue
            fields = record
        if layout.where and fields[positions["where"]] != layout.where[1]:
            continue
        text_a = _text(fields[positions["text_a"]], layout.text_a, reject, line)
        if text_a is None:
            continue
        text_b = None
        if layout.text_b is not None:
            text_b = _text(fields[positions["text_b"]], layout.text_b, reject, line)
            if text_b is None:
                continue
        label = None
        if layout.label is not None:
            value = fields[positions["label"]]
            label = (label_parser(value, reject, line) if label_parser is not None else
                     _label(value, layout, labels, is_regression, reject, line))
            if label is None:
                continue
        ident = fields[positions["guid"]] if layout.guid is not None else row_index
        examples.append(InputExample(guid=f"{split}-{ident}", text_a=text_a, text_b=text_b,
                                     label=label))
    stats.num_examples = len(examples)
    if stats.skipped:
        first_line, first_reason = stats.skipped[0]
        logger.warning("%s: skipped %d bad row(s), kept %d (first: line %d: %s)", path,
                       stats.num_skipped, stats.num_examples, first_line, first_reason)
    return examples, stats


class DataProcessor:
    """Base class: get_{train,dev,test}_examples(data_dir) -> [InputExample], get_labels().

    Subclasses set `info` (a TaskInfo) and implement `_layout(data_dir, split)` returning
    (path, Layout). After each read, `read_stats[-1]` (also `last_read`) says how many rows
    were skipped with skip_bad_rows=True, and why.
    """

    info: TaskInfo = None

    def __init__(self, skip_bad_rows=False):
        self.skip_bad_rows = bool(skip_bad_rows)
        self.read_stats = []

    @property
    def task_name(self):
        return self.info.name

    @property
    def is_regression(self):
        return self.info.is_regression

    @property
    def num_labels(self):
        return self.info.num_labels

    @property
    def last_read(self):
        return self.read_stats[-1] if self.read_stats else None

    def get_labels(self):
        return list(self.info.labels)

    def get_train_examples(self, data_dir):
        return self._read_split(data_dir, "train")

    def get_dev_examples(self, data_dir):
        return self._read_split(data_dir, "dev")

    def get_test_examples(self, data_dir):
        return self._read_split(data_dir, "test")

    def get_examples(self, data_dir, split):
        """The same as get_<split>_examples; split is one of 'train', 'dev', 'test'."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
        return getattr(self, f"get_{split}_examples")(data_dir)

    def _layout(self, data_dir, split):
        raise NotImplementedError

    def _known_labels(self):
        """Labels rows are checked against; empty accepts any label."""
        return self.get_labels()

    def _read_split(self, data_dir, split):
        path, layout = self._layout(data_dir, split)
        examples, stats = read_examples(path, layout, split, labels=self._known_labels(),
                                        is_regression=self.is_regression,
                                        skip_bad_rows=self.skip_bad_rows)
        self.read_stats.append(stats)
        return examples


def find_file(task, data_dir, candidates, hint=""):
    """The first existing path among `candidates` (relative to data_dir), else a
    FileNotFoundError listing every place looked at."""
    tried = [os.path.join(str(data_dir), name) for name in candidates]
    for path in tried:
        if fileio.exists(path):
            return path
    raise FileNotFoundError(f"{task}: no {candidates[0]} in data_dir {data_dir} (looked for "
                            f"{', '.join(tried)}){hint}")
