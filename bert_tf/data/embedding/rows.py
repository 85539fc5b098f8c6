"""Rows of run_embedding's files: (anchor, positive[, negative]) pairs, (text_a, text_b, score)
scored pairs and corpus texts, from TSV, CSV or JSONL (chosen by the file's extension).

TSV and CSV files start with a header naming their columns; JSONL lines are objects with those
keys. Other columns are ignored, so GLUE's STS-B files are read as they are (sentence1 and
sentence2 are other names of text_a and text_b). A negative column, when the file has one,
must be filled on every row. Every error names the file and line.
"""

import dataclasses

from bert_tf.data.classification.examples import DataFormatError
from bert_tf.data.classification.records import iter_records

EXTENSIONS = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl"}


@dataclasses.dataclass(frozen=True)
class Layout:
    """The columns of one kind of file: required, optional (all rows or none), the numeric
    one, and other names a column goes by."""

    name: str
    required: tuple
    optional: tuple = ()
    numeric: tuple = ()
    aliases: tuple = ()          # (other name, column) pairs

    def columns(self):
        return self.required + self.optional


PAIRS = Layout("pairs", ("anchor", "positive"), ("negative",))
SCORED = Layout("scored pairs", ("text_a", "text_b", "score"), numeric=("score",),
                aliases=(("sentence1", "text_a"), ("sentence2", "text_b")))
CORPUS = Layout("corpus", ("text",))


def file_format(path):
    """tsv, csv or jsonl from the extension of `path`."""
    for extension, fmt in EXTENSIONS.items():
        if str(path).lower().endswith(extension):
            return fmt
    raise ValueError(f"{path}: unknown file type; name it .tsv, .csv or .jsonl "
                     f"(JSON lines)")


def read_rows(path, layout, score_range=None):
    """{column: [values]} of the file's rows in order (texts as str, numeric columns as float,
    within `score_range` (low, high) when given); an optional column the file lacks is
    absent."""
    fmt = file_format(path)
    records = iter_records(path, fmt)
    fields = None                                      # tsv/csv: {column: field index}
    if fmt != "jsonl":
        fields, width = _header_fields(path, records, layout)
    table, first_line = None, None
    for line, record in records:
        if record is None:
            continue
        if isinstance(record, ValueError):
            raise DataFormatError(path, line, str(record))
        if fields is None:
            row = {_canonical(layout, key): value for key, value in record.items()}
        elif len(record) != width:
            raise DataFormatError(path, line, f"expected {width} fields like the header, "
                                  f"got {len(record)}")
        else:
            row = {column: record[i] for column, i in fields.items()}
        if table is None:
            table = {column: [] for column in layout.columns() if column in row}
            first_line = line
        for column in table:
            table[column].append(_value(path, line, row, column, layout, first_line,
                                        score_range))
    if table is None:
        raise DataFormatError(path, 1, f"no rows ({layout.name}: columns "
                              f"{', '.join(layout.required)})")
    missing = [column for column in layout.required if column not in table]
    if missing:
        raise DataFormatError(path, first_line, f"no {', '.join(map(repr, missing))} "
                              f"(a {layout.name} file has {', '.join(layout.required)})")
    return table


def _canonical(layout, name):
    return dict(layout.aliases).get(name, name)


def _header_fields(path, records, layout):
    """({column: field index}, number of fields) from the header of a tsv/csv file."""
    for line, header in records:
        if header is None:
            continue
        fields = {}
        for i, name in enumerate(header):
            column = _canonical(layout, name.strip())
            if column in layout.columns():
                fields.setdefault(column, i)
        missing = [column for column in layout.required if column not in fields]
        if missing:
            raise DataFormatError(path, line, f"the header has no column "
                                  f"{', '.join(map(repr, missing))} (a {layout.name} file has "
                                  f"{', '.join(layout.required)}; its header: {header})")
        return fields, len(header)
    raise DataFormatError(path, 1, "empty file: expected a header line")


def _value(path, line, row, column, layout, first_line, score_range):
    value = row.get(column)
    if value is None:
        why = (f"has no {column!r} (line {first_line} has one: every row or none)"
               if column in layout.optional else f"has no {column!r}")
        raise DataFormatError(path, line, why)
    if column in layout.numeric:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise DataFormatError(path, line, f"{column} {value!r} is not a number") from None
        if score_range and not score_range[0] <= number <= score_range[1]:
            raise DataFormatError(path, line, f"{column} {number} is outside "
                                  f"[{score_range[0]}, {score_range[1]}]")
        return number
    if not isinstance(value, str):
        raise DataFormatError(path, line, f"{column} must be a string, got "
                              f"{type(value).__name__}")
    if not value.strip():
        raise DataFormatError(path, line, f"empty {column}")
    return value
