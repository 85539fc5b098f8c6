"""A prediction input file (JSON lines, TSV, or CSV without line breaks in fields) read by
Beam workers in byte ranges: chunk i holds the lines that start in its range, and two passes
give every row its line number and its index among the file's rows without reading the file on
the launcher: count (newlines and rows per chunk), then parse with the counts of the chunks
before. A line the model cannot take comes back as a Refusal naming its file and line."""

import csv
import dataclasses

from bert_tf.beam import runtime
from bert_tf.data.classification.examples import DataFormatError
from bert_tf.data.classification.records import json_record
from bert_tf.prediction import inputs

CHUNK_BYTES = 1 << 20


@dataclasses.dataclass(frozen=True)
class TextFile:
    """What a worker needs to read the file: its format, size and header (tables)."""

    path: str
    fmt: str
    size: int
    header_offset: int = -1        # byte offset of a table's header line
    width: int = 0                 # the header's number of columns
    layout: tuple = None           # inputs.table_columns() of the header
    chunk_bytes: int = CHUNK_BYTES

    @property
    def num_chunks(self):
        return max(1, -(-self.size // self.chunk_bytes))


@dataclasses.dataclass(frozen=True)
class Refusal:
    file: str
    line: int
    error: str


def _strip(raw):
    return raw[:-1] if raw.endswith(b"\r") else raw


def _blank(raw, fmt):
    """As bert_tf.predict reads the file: an empty line (JSON lines: only whitespace)."""
    if fmt != "jsonl":
        return not raw
    return not raw.decode("utf-8", "replace").strip()


def describe(path, chunk_bytes=CHUNK_BYTES):
    """The TextFile of `path` (read on the launcher: its first non-blank line for a table)."""
    fmt = inputs.file_format(path)
    text_file = TextFile(path, fmt, runtime.size(path), chunk_bytes=chunk_bytes)
    if fmt == "jsonl":
        return text_file
    with runtime.open_read(path) as f:
        offset = 0
        for number, raw in enumerate(iter(f.readline, b""), start=1):
            line = _strip(raw.rstrip(b"\n"))
            if not _blank(line, fmt):
                header = _fields(path, number, _decode(path, number, line), fmt)
                return dataclasses.replace(text_file, header_offset=offset, width=len(header),
                                           layout=inputs.table_columns(path, number, header))
            offset += len(raw)
    raise inputs.InputError(f"--input_file {path}: no rows")


def _owned_lines(text_file, chunk):
    """(partial, [(offset, line without its terminator)]) of the lines starting in `chunk`;
    partial: whether the chunk starts inside a line (its end is the previous chunk's)."""
    start = chunk * text_file.chunk_bytes
    end = min(start + text_file.chunk_bytes, text_file.size)
    lines = []
    with runtime.open_read(text_file.path) as f:
        position = start
        if start > 0:
            f.seek(start - 1)
            position = start - 1 + len(f.readline())
        partial = position > start
        while position < end:
            raw = f.readline()
            if not raw:
                break
            lines.append((position, _strip(raw.rstrip(b"\n"))))
            position += len(raw)
    return partial, lines


def count(chunk, text_file):
    """(chunk, (newlines in its byte range, rows starting in it))."""
    start = chunk * text_file.chunk_bytes
    with runtime.open_read(text_file.path) as f:
        f.seek(start)
        newlines = f.read(min(text_file.chunk_bytes, text_file.size - start)).count(b"\n")
    _, lines = _owned_lines(text_file, chunk)
    rows = sum(1 for offset, raw in lines
               if not _blank(raw, text_file.fmt) and offset != text_file.header_offset)
    return chunk, (newlines, rows)


def parse(chunk, text_file, counts):
    """Yields (index, Row) or Refusal for each row starting in `chunk`; counts: {chunk:
    count()} of every chunk."""
    partial, lines = _owned_lines(text_file, chunk)
    line = 1 + sum(counts[c][0] for c in range(chunk)) + int(partial)
    index = sum(counts[c][1] for c in range(chunk))
    for offset, raw in lines:
        number, line = line, line + 1
        if _blank(raw, text_file.fmt) or offset == text_file.header_offset:
            continue
        try:
            yield index, _row(text_file, number, raw, index)
        except (DataFormatError, inputs.InputError) as error:
            yield Refusal(text_file.path, number, str(error))
        index += 1


def _decode(path, number, raw):
    try:
        return raw.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as e:
        raise DataFormatError(path, number, f"not UTF-8 (byte {e.start} of the line)") from None


def _fields(path, number, text, fmt):
    if fmt == "tsv":
        return text.split("\t")
    try:
        return next(csv.reader([text], strict=True))
    except csv.Error as e:
        raise DataFormatError(path, number, f"CSV syntax error: {e}") from None


def _row(text_file, number, raw, index):
    path = text_file.path
    text = _decode(path, number, raw)
    if text_file.fmt == "jsonl":
        record = json_record(text)
        if isinstance(record, ValueError):
            raise DataFormatError(path, number, str(record))
        return inputs.json_row(path, number, record, index)
    return inputs.table_row(path, number, _fields(path, number, text, text_file.fmt), index,
                            text_file.width, text_file.layout)
