"""Reading and writing CoNLL column files (CoNLL-2003 style NER data).

One token per line, columns separated by whitespace, the word in the first column and the tag in
the last; blank lines end sentences; `-DOCSTART-` lines start documents. A file whose token lines
all have a single column is unlabelled (words only). Tags are converted to BIO on reading (see
tags.py); the file's own tags are kept too.
"""

import dataclasses

from bert_tf import fileio
from bert_tf.data.ner import tags as tag_lib

DOCSTART = "-DOCSTART-"


class ConllError(ValueError):
    """Malformed CoNLL input; the message names the file and line."""


@dataclasses.dataclass
class Sentence:
    words: list
    tags: list          # BIO tags, or None for unlabelled files
    columns: list       # every column of each token line, as read
    first_line: int     # 1-based line number of the first token
    document: int       # index of the document the sentence belongs to


@dataclasses.dataclass
class ConllFile:
    path: str
    sentences: list
    docstarts: dict     # sentence index -> the -DOCSTART- line text that precedes it
    labelled: bool
    num_documents: int

    def documents(self):
        """Lists of sentence indices, one per document (a file without -DOCSTART- lines is one
        document)."""
        grouped = {}
        for i, sentence in enumerate(self.sentences):
            grouped.setdefault(sentence.document, []).append(i)
        return [grouped[k] for k in sorted(grouped)]

    def entity_counts(self):
        counts = {}
        for sentence in self.sentences:
            for tag in sentence.tags or ():
                prefix, kind = tag_lib.split_tag(tag)
                if prefix == "B":
                    counts[kind] = counts.get(kind, 0) + 1
        return counts


def _lines(path):
    with fileio.open_binary(path) as f:
        for number, raw in enumerate(f, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ConllError(f"{path}:{number}: not UTF-8 ({e})") from None
            yield number, text.rstrip("\r\n")


def read_conll(path, require_labels=False):
    """Reads a CoNLL file into a ConllFile with BIO tags.

    Raises ConllError naming the line for: token lines with differing column counts, tags that
    are not O/B-X/I-X, or (require_labels) a words-only file."""
    path = str(path)
    if not fileio.exists(path):
        raise FileNotFoundError(f"{path}: no such CoNLL file")
    sentences, docstarts = [], {}
    num_columns, document, document_used = None, 0, False
    current, current_line = [], None

    def finish():
        nonlocal current, document_used
        if current:
            sentences.append((current_line, document, current))
            document_used = True
        current = []

    for number, line in _lines(path):
        fields = line.split()
        if not fields:
            finish()
            continue
        if fields[0] == DOCSTART:
            finish()
            if document_used:
                document, document_used = document + 1, False
            docstarts[len(sentences)] = line
            continue
        if num_columns is None:
            num_columns = len(fields)
        elif len(fields) != num_columns:
            raise ConllError(f"{path}:{number}: {len(fields)} columns, but earlier token lines "
                             f"have {num_columns} ({line!r})")
        if not current:
            current_line = number
        current.append((number, fields))
    finish()
    if num_columns is None:
        raise ConllError(f"{path}: no tokens")
    labelled = num_columns > 1
    if require_labels and not labelled:
        raise ConllError(f"{path}: one column per line (words only); a tag column is needed "
                         f"for training and evaluation")
    out = []
    for first_line, document, tokens in sentences:
        words = [fields[0] for _, fields in tokens]
        bio = None
        if labelled:
            raw = [fields[-1] for _, fields in tokens]
            for (number, _), tag in zip(tokens, raw):
                if not tag_lib.is_tag(tag):
                    raise ConllError(f"{path}:{number}: tag {tag!r} in the last column is not O, "
                                     f"B-<type> or I-<type>")
            bio = tag_lib.to_bio(raw)
        out.append(Sentence(words, bio, [fields for _, fields in tokens], first_line,
                            document))
    return ConllFile(path, out, docstarts, labelled, document + 1)


def write_predictions(path, conll, predicted):
    """Writes `conll` with each token line's columns (the tag column as BIO) followed by the
    predicted tag: the input format of conlleval. `predicted` holds one tag list per sentence.
    -DOCSTART- lines get an `O` prediction. Atomic."""
    if len(predicted) != len(conll.sentences):
        raise ValueError(f"{len(predicted)} predicted sentences for {len(conll.sentences)}")
    parts = []
    for i, sentence in enumerate(conll.sentences):
        if i in conll.docstarts:
            parts.append(f"{conll.docstarts[i]} {tag_lib.OUTSIDE}\n\n")
        tags = predicted[i]
        if len(tags) != len(sentence.words):
            raise ValueError(f"sentence {i} (line {sentence.first_line}): {len(tags)} predicted "
                             f"tags for {len(sentence.words)} words")
        for k, (columns, tag) in enumerate(zip(sentence.columns, tags)):
            columns = list(columns)
            if sentence.tags is not None:
                columns[-1] = sentence.tags[k]
            parts.append(" ".join(columns + [tag]) + "\n")
        parts.append("\n")
    trailing = [line for index, line in conll.docstarts.items() if index >= len(conll.sentences)]
    parts.extend(f"{line} {tag_lib.OUTSIDE}\n\n" for line in trailing)
    fileio.atomic_write_text(path, "".join(parts))
    return str(path)
