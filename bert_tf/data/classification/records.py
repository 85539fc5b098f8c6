"""Raw records of TSV, CSV and JSONL files, each with the line number it starts on.

TSV is split on tabs with quoting disabled, as google-research/bert and GLUE read it: GLUE
sentences contain unbalanced quote characters. Lines end at "\\n" only (a trailing "\\r" is
dropped), a UTF-8 BOM at the start of the file is ignored (MRPC has one) and a missing final
newline is fine (CoLA dev.tsv). CSV uses standard quoting, so quoted fields may span lines.
"""

import csv
import json

from bert_tf import fileio
from bert_tf.data.classification.examples import DataFormatError

FORMATS = ("tsv", "csv", "jsonl")


def _lines(path):
    """(line_number, text) for each line, decoded as UTF-8, terminator removed."""
    with fileio.open_binary(path) as f:
        for number, raw in enumerate(f, start=1):
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as e:
                raise DataFormatError(path, number,
                                      f"not UTF-8 (byte {e.start} of the line)") from None
            yield number, text


def _tsv(path):
    for number, text in _lines(path):
        yield number, (text.split("\t") if text else None)


def _csv(path):
    lines = _lines(path)
    position = {"line": 0}

    def feed():
        for number, text in lines:
            position["line"] = number
            yield text + "\n"

    reader = csv.reader(feed(), strict=True)
    start = 1
    try:
        for fields in reader:
            yield start, (fields or None)
            start = position["line"] + 1
    except csv.Error as e:
        raise DataFormatError(path, start, f"CSV syntax error: {e}") from None


def json_record(text):
    """The object of a JSON line, or a ValueError saying why it is not one."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as e:
        return ValueError(f"invalid JSON ({e.msg} at column {e.colno})")
    if not isinstance(record, dict):
        return ValueError(f"expected a JSON object, got {type(record).__name__}")
    return record


def _jsonl(path):
    for number, text in _lines(path):
        yield number, (json_record(text) if text.strip() else None)


def iter_records(path, fmt):
    """Yields (line, record): record is a list of fields (tsv, csv), a dict (jsonl), None for a
    blank line, or a ValueError describing why the line could not be parsed (jsonl)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown file format {fmt!r}; expected one of {FORMATS}")
    return {"tsv": _tsv, "csv": _csv, "jsonl": _jsonl}[fmt](path)
