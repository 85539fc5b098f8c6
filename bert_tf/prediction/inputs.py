"""The rows to predict: from command-line flags or from an input file.

An input file is JSON lines (`.jsonl`, `.json`, `.ndjson`, or any file whose first non-blank
line starts with `{`): one object per line. Otherwise it is a table with a header row: TSV
(tabs, quoting disabled, as GLUE files), or CSV for a `.csv` name. Field names, in either
layout:

  text         the text (classifier, regression, NER), or the question (SQuAD)
  text_pair    the second text of a pair (classifier, regression), or the context (SQuAD)
  question     SQuAD: the question (with `context`, instead of text / text_pair)
  context      SQuAD: the passage; multiple choice: the shared first sentence (or `text`)
  choices      multiple choice: a JSON list of strings; in a table, columns choice_0,
               choice_1, ... instead
  id           optional, any JSON value: copied to the row's output

`text_a`, `sentence` (GLUE's column name) and `text_b` are accepted for `text`, `text`
and `text_pair`. Other fields (a gold label, ...) are ignored. Blank lines are skipped.
Which fields a row must have depends on the model; check_rows() says which are missing,
naming the file and line.
"""

import dataclasses
import os
import re

from bert_tf import fileio
from bert_tf.data.classification.examples import DataFormatError

FIELDS = ("text", "text_pair", "question", "context", "choices")
ALIASES = {"text_a": "text", "sentence": "text", "text_b": "text_pair"}
_CHOICE_COLUMN = re.compile(r"^choice_(\d+)$")
_JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")


class InputError(ValueError):
    """A flag or input row the model cannot take; the message names the flag, or the file and
    line, at fault."""


@dataclasses.dataclass
class Row:
    """One input: its fields (None where absent) and where it came from."""

    index: int                  # position among all rows, from 0
    text: str = None
    text_pair: str = None
    question: str = None
    context: str = None
    choices: list = None
    id: object = None
    path: str = None            # input file, or None for rows given as flags
    line: int = None            # 1-based line of the input file
    single: bool = True         # rows given as flags: the only row
    ignored: list = None        # fields of the file row that are not inputs

    def where(self, field=None):
        """How an error names this row (and field): "--text_pair", "--text #2" or
        "in.jsonl:3: field 'text_pair'"."""
        if self.path is None:
            flag = f"--{field or 'text'}"
            return flag if self.single else f"{flag} #{self.index + 1}"
        where = f"{self.path}:{self.line}"
        return f"{where}: field {field!r}" if field else where

    def present(self):
        return [f for f in FIELDS if getattr(self, f) is not None]


def rows_from_flags(texts=(), text_pairs=(), questions=(), contexts=(), choices=()):
    """Rows from repeated flags: the i-th --text goes with the i-th --text_pair (and the i-th
    --question with the i-th --context); --choices (repeated, one per choice) belong to the
    single --context or --text."""
    given = {"text": list(texts or ()), "text_pair": list(text_pairs or ()),
             "question": list(questions or ()), "context": list(contexts or ())}
    counts = {k: len(v) for k, v in given.items() if v}
    choices = list(choices or ())
    if not counts:
        if choices:
            raise InputError("--choices need a --context (or --text) they continue")
        return []
    if len(set(counts.values())) > 1:
        listed = ", ".join(f"--{k} {n} time{'s' if n > 1 else ''}" for k, n in counts.items())
        raise InputError(f"the text flags pair up by position, so each must be given the same "
                         f"number of times; got {listed}")
    count = next(iter(counts.values()))
    if choices and count != 1:
        raise InputError(f"--choices apply to one --context (or --text), got {count}: use "
                         f"--input_file for several multiple-choice rows")
    rows = []
    for i in range(count):
        fields = {k: v[i] for k, v in given.items() if v}
        rows.append(Row(index=i, single=count == 1, choices=choices or None, **fields))
    return rows


def file_format(path):
    """jsonl, csv or tsv: by the name, else by the first non-blank line."""
    name = str(path).lower()
    if name.endswith(_JSON_SUFFIXES):
        return "jsonl"
    if name.endswith(".csv"):
        return "csv"
    if name.endswith(".tsv"):
        return "tsv"
    with fileio.open_binary(path) as f:
        for raw in f:
            stripped = raw.strip().lstrip(b"\xef\xbb\xbf")
            if stripped:
                return "jsonl" if stripped.startswith(b"{") else "tsv"
    return "tsv"


def json_row(path, line, record, index):
    row = Row(index=index, path=str(path), line=line)
    for key, value in record.items():
        field = ALIASES.get(key, key)
        if field == "id":
            row.id = value
            continue
        if field not in FIELDS:
            row.ignored = (row.ignored or []) + [key]
            continue
        if getattr(row, field) is not None:
            raise DataFormatError(path, line, f"field {field!r} given twice (as {key!r})")
        if field == "choices":
            if not (isinstance(value, list) and all(isinstance(c, str) for c in value)):
                raise DataFormatError(path, line, "field 'choices' must be a list of strings")
        elif value is not None and not isinstance(value, str):
            raise DataFormatError(path, line, f"field {key!r} must be a string, got "
                                              f"{type(value).__name__}")
        setattr(row, field, value)
    return row


def table_columns(path, line, header):
    """({column position: field}, positions of the choice_<i> columns in order, names of the
    columns that are not inputs) for a table's header row."""
    columns, choice_columns, ignored = {}, {}, []
    for position, name in enumerate(header):
        name = name.strip()
        m = _CHOICE_COLUMN.match(name)
        if m:
            choice_columns[int(m.group(1))] = position
            continue
        field = ALIASES.get(name, name)
        if field == "choices":
            raise DataFormatError(path, line, "a table gives choices as columns choice_0, "
                                              "choice_1, ... (a `choices` list needs JSON lines)")
        if field not in FIELDS and field != "id":
            ignored.append(name)
            continue
        if field in columns.values():
            raise DataFormatError(path, line, f"the header names field {field!r} twice")
        columns[position] = field
    if choice_columns and sorted(choice_columns) != list(range(len(choice_columns))):
        got = ", ".join(f"choice_{i}" for i in sorted(choice_columns))
        raise DataFormatError(path, line, f"choice columns must be choice_0 ... choice_"
                                          f"{len(choice_columns) - 1}, got {got}")
    return columns, [choice_columns[i] for i in sorted(choice_columns)], ignored or None


def table_row(path, line, record, index, width, layout):
    """The Row of a table's record (a list of fields); width: the header's number of columns,
    layout: table_columns() of the header."""
    if len(record) != width:
        raise DataFormatError(path, line, f"{len(record)} columns, the header has {width}")
    columns, choice_columns, ignored = layout
    row = Row(index=index, path=str(path), line=line, ignored=ignored)
    for position, field in columns.items():
        setattr(row, field, record[position])
    if choice_columns:
        row.choices = [record[p] for p in choice_columns]
    return row


def read_input_file(path):
    """The rows of `path` (local or URL), in file order; DataFormatError names the line of a
    malformed one."""
    from bert_tf.data.classification.records import iter_records
    if not fileio.exists(path):
        raise FileNotFoundError(f"--input_file {path} does not exist")
    if fileio.isdir(path):
        raise InputError(f"--input_file {path} is a folder, not a file")
    fmt = file_format(path)
    rows, header = [], None
    for line, record in iter_records(path, fmt):
        if record is None:
            continue
        if isinstance(record, ValueError):
            raise DataFormatError(path, line, str(record))
        if fmt == "jsonl":
            rows.append(json_row(path, line, record, len(rows)))
            continue
        if header is None:
            header = record
            columns, choice_columns, ignored = table_columns(path, line, header)
            if not columns and not choice_columns:
                raise DataFormatError(path, line, f"the header ({', '.join(header)}) names none "
                                                  f"of the fields text, text_pair, question, "
                                                  f"context, choice_0, ... (docs/predict.md)")
            continue
        rows.append(table_row(path, line, record, len(rows), len(header),
                              (columns, choice_columns, ignored)))
    if not rows:
        raise InputError(f"--input_file {path}: no rows"
                         + (" (only a header)" if header is not None else ""))
    return rows


def read_rows(input_file=None, texts=(), text_pairs=(), questions=(), contexts=(), choices=()):
    """The rows of --input_file, or of the text flags (exactly one of the two)."""
    flag_given = any((texts, text_pairs, questions, contexts, choices))
    if input_file and flag_given:
        raise InputError("give --input_file or the text flags (--text, --text_pair, --question, "
                         "--context, --choices), not both")
    if input_file:
        return read_input_file(os.fspath(input_file))
    if not flag_given:
        raise InputError("nothing to predict: give --text (and --text_pair), --question and "
                         "--context, --context and --choices, or --input_file")
    return rows_from_flags(texts, text_pairs, questions, contexts, choices)
