"""Input text: resolving --input_file, splitting the corpus into shards, reading a shard.

Format (google-research/bert's): one sentence per line, a blank line between documents, UTF-8.
The end of every file also ends a document (the original merged the last document of a file
with the first of the next). A shard is a run of whole documents, about `shard_size` bytes, cut
only at blank lines and at file ends; it may span several small files. Paths with a scheme
("gs://...") go through tf.io.gfile, local ones through plain Python I/O.
"""

import dataclasses
import glob
import os
import re

_GLOB_CHARS = "*?["
_READ_BLOCK = 1 << 20
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


class InputError(ValueError):
    """An input file is missing, unreadable or a pattern matches nothing."""


@dataclasses.dataclass(frozen=True)
class Segment:
    path: str
    start: int  # byte offsets; start is 0 or just after a blank line
    end: int


@dataclasses.dataclass(frozen=True)
class Shard:
    index: int
    segments: tuple

    @property
    def num_bytes(self):
        return sum(s.end - s.start for s in self.segments)


@dataclasses.dataclass
class ShardText:
    """The non-blank lines of a shard (stripped) and where documents start among them."""

    lines: list
    doc_starts: list          # index into `lines` of each document's first line
    num_bytes: int = 0
    invalid_bytes: int = 0    # bytes that were not UTF-8 and were dropped
    invalid_examples: list = dataclasses.field(default_factory=list)  # "path:line" strings


def _remote(path):
    return "://" in path


def _gfile():
    import tensorflow as tf  # only for paths with a scheme
    return tf.io.gfile


def open_binary(path):
    """A seekable binary reader of a local path or URL."""
    return _gfile().GFile(path, "rb") if _remote(path) else open(path, "rb")


def file_size(path):
    return _gfile().stat(path).length if _remote(path) else os.path.getsize(path)


def file_signature(path):
    """(size, modification time in ns): what decides whether earlier output is still valid."""
    if _remote(path):
        stat = _gfile().stat(path)
        return stat.length, stat.mtime_nsec
    stat = os.stat(path)
    return stat.st_size, stat.st_mtime_ns


def resolve_input_files(patterns):
    """Files named by comma-separated paths/globs, in order (each glob's matches sorted).

    Raises InputError for a named file that does not exist or is a directory, and for a glob
    that matches no file.
    """
    if isinstance(patterns, str):
        patterns = patterns.split(",")
    files = []
    for pattern in (p.strip() for p in patterns):
        if not pattern:
            continue
        if any(c in pattern for c in _GLOB_CHARS):
            matches = _gfile().glob(pattern) if _remote(pattern) else glob.glob(pattern)
            matches = sorted(m for m in matches if _remote(m) or os.path.isfile(m))
            if not matches:
                raise InputError(f"input pattern {pattern!r} matches no files")
            files.extend(matches)
            continue
        exists = _gfile().exists(pattern) if _remote(pattern) else os.path.exists(pattern)
        if not exists:
            raise InputError(f"input file not found: {pattern}")
        if _gfile().isdir(pattern) if _remote(pattern) else os.path.isdir(pattern):
            raise InputError(f"input file is a directory: {pattern} (use a glob such as "
                             f"{os.path.join(pattern, '*.txt')})")
        files.append(pattern)
    if not files:
        raise InputError("no input files given")
    return files


def _is_blank(line):
    return not line.strip() or not line.decode("utf-8", "ignore").strip()


def _next_boundary(f, offset, size):
    """Offset just after the first blank line that starts at or after `offset` (or `size`)."""
    f.seek(offset)
    f.readline()  # rest of the line `offset` falls in
    position = f.tell()
    for line in iter(f.readline, b""):
        position += len(line)
        if _is_blank(line):
            return position
    return size


def plan_shards(files, shard_size, open_file=None, size_of=None):
    """Shards of about `shard_size` bytes, in corpus order, cut at document boundaries.

    open_file(path) -> a seekable binary file and size_of(path) -> bytes read the files (default:
    plain I/O, tf.io.gfile for URLs; the Beam job passes Beam's file systems)."""
    open_file, size_of = open_file or open_binary, size_of or file_size
    shards, segments, filled = [], [], 0
    for path in files:
        size, start = size_of(path), 0
        with open_file(path) as f:
            while start < size:
                room = shard_size - filled
                end = size if size - start <= room else _next_boundary(f, start + room, size)
                segments.append(Segment(path, start, end))
                filled += end - start
                start = end
                if filled >= shard_size:
                    shards.append(Shard(len(shards), tuple(segments)))
                    segments, filled = [], 0
    if segments:
        shards.append(Shard(len(shards), tuple(segments)))
    return shards


def _lines_before(path, offset, open_file):
    """Number of newlines in the first `offset` bytes of a file."""
    count = 0
    with open_file(path) as f:
        while offset > 0:
            block = f.read(min(_READ_BLOCK, offset))
            if not block:
                break
            count += block.count(b"\n")
            offset -= len(block)
    return count


def _decode(segment, data, max_examples, open_file):
    """Decodes `data`, dropping bytes that are not UTF-8; returns (text, dropped, examples) where
    examples are up to `max_examples` "path:line" places of dropped bytes."""
    try:
        return data.decode("utf-8"), 0, []
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", "surrogateescape")  # each bad byte -> one lone surrogate
    clean, dropped = _ESCAPED_BYTE.subn("", text)
    examples = []
    if max_examples > 0:
        line, position = _lines_before(segment.path, segment.start, open_file) + 1, 0
        for match in _ESCAPED_BYTE.finditer(text):
            line += text.count("\n", position, match.start())
            position = match.start()
            place = f"{segment.path}:{line}"
            if not examples or examples[-1] != place:
                if len(examples) == max_examples:
                    break
                examples.append(place)
    return clean, dropped, examples


def read_shard(shard, max_invalid_examples=5, open_file=None):
    """Reads a shard's text: stripped non-blank lines grouped into documents (open_file: as
    plan_shards')."""
    open_file = open_file or open_binary
    out = ShardText(lines=[], doc_starts=[])
    lines, doc_starts = out.lines, out.doc_starts
    for segment in shard.segments:
        with open_file(segment.path) as f:
            f.seek(segment.start)
            data = f.read(segment.end - segment.start)
        out.num_bytes += len(data)
        text, dropped, examples = _decode(segment, data,
                                          max_invalid_examples - len(out.invalid_examples),
                                          open_file)
        out.invalid_bytes += dropped
        out.invalid_examples.extend(examples)
        in_document = False  # every segment starts a new document
        for line in text.split("\n"):
            line = line.strip()
            if not line:
                in_document = False
                continue
            if not in_document:
                doc_starts.append(len(lines))
                in_document = True
            lines.append(line)
    return out
