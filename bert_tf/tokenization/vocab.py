"""WordPiece vocabulary files: strict loading, special tokens found by name, id conversion.

A vocabulary file holds one token per line; the line number (from 0) is the id. Tokens are
stripped of surrounding whitespace, as google-research/bert does. Unlike google-research, a
malformed file is rejected with an error naming the file and line instead of being loaded
silently wrong: bytes that are not UTF-8, an empty file, an empty entry, or a duplicate entry
(google-research would silently give the duplicate's id to both lines).
"""

import collections
import os
import re
from typing import Iterable, Mapping

from bert_tf import fileio

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)
_SPECIAL_RE = re.compile(r"^\[(PAD|CLS|SEP|MASK|UNK|unused\d+)\]$")


class VocabularyError(ValueError):
    """A vocabulary file is malformed or lacks a token the caller needs."""


def _read_tokens(vocab_file):
    path = os.fspath(vocab_file)
    # Local files are read without TensorFlow, so tokenizer worker processes stay light.
    if not fileio.exists(path):
        raise VocabularyError(f"vocabulary file not found: {path}")
    with fileio.open_binary(path) as f:
        data = f.read()
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark is not part of the token
        data = data[3:]
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if not lines:
        raise VocabularyError(f"{path}: the vocabulary file is empty")
    tokens, first_line = [], {}
    for number, raw in enumerate(lines, start=1):
        try:
            token = raw.decode("utf-8").strip()
        except UnicodeDecodeError as e:
            raise VocabularyError(
                f"{path}, line {number}: not valid UTF-8 (byte {e.start}: "
                f"{raw[e.start:e.start + 4]!r}); vocabulary files must be UTF-8") from None
        if not token:
            raise VocabularyError(f"{path}, line {number}: empty entry (token id {number - 1})")
        if token in first_line:
            raise VocabularyError(
                f"{path}, line {number}: duplicate entry {token!r}, already on line "
                f"{first_line[token]}")
        first_line[token] = number
        tokens.append(token)
    return tokens


class Vocabulary:
    """Tokens of a WordPiece vocabulary and the ids of its special tokens.

    `token_to_id` is an OrderedDict (google-research's `vocab`), `id_to_token` a list.
    The special-token properties raise VocabularyError naming the file if a token is absent.
    """

    def __init__(self, tokens: Iterable[str], path: str | os.PathLike | None = None) -> None:
        self.path = None if path is None else os.fspath(path)
        self.id_to_token = list(tokens)
        self.token_to_id = collections.OrderedDict((t, i) for i, t in enumerate(self.id_to_token))
        if len(self.token_to_id) != len(self.id_to_token):
            seen = set()
            dup = next(t for t in self.id_to_token if t in seen or seen.add(t))
            raise VocabularyError(f"{self._where()}: duplicate entry {dup!r}")
        if not self.id_to_token:
            raise VocabularyError(f"{self._where()}: the vocabulary is empty")

    @classmethod
    def from_file(cls, vocab_file: str | os.PathLike) -> "Vocabulary":
        """Reads a vocabulary file; VocabularyError names the file and line of a bad entry."""
        return cls(_read_tokens(vocab_file), path=vocab_file)

    def __len__(self):
        return len(self.id_to_token)

    def _where(self):
        return self.path or "vocabulary"

    def token_id(self, token: str) -> int:
        """Id of `token`; VocabularyError if the vocabulary lacks it."""
        try:
            return self.token_to_id[token]
        except KeyError:
            raise VocabularyError(
                f"{self._where()}: the vocabulary has no {token!r} entry") from None

    def require(self, tokens: Iterable[str] = SPECIAL_TOKENS) -> None:
        """Raises VocabularyError listing every token of `tokens` the vocabulary lacks."""
        missing = [t for t in tokens if t not in self.token_to_id]
        if missing:
            raise VocabularyError(
                f"{self._where()}: the vocabulary has no {', '.join(missing)} "
                f"entr{'y' if len(missing) == 1 else 'ies'} (BERT needs {', '.join(tokens)})")

    pad_id = property(lambda self: self.token_id(PAD))
    unk_id = property(lambda self: self.token_id(UNK))
    cls_id = property(lambda self: self.token_id(CLS))
    sep_id = property(lambda self: self.token_id(SEP))
    mask_id = property(lambda self: self.token_id(MASK))

    def special_ids(self) -> dict[str, int]:
        """{token: id} for [PAD], [UNK], [CLS], [SEP], [MASK] (all required)."""
        self.require()
        return {t: self.token_to_id[t] for t in SPECIAL_TOKENS}


def special_token_ids(vocab_tokens):
    """Ids of [PAD], [CLS], [SEP], [MASK], [UNK] and [unusedN]: never offered as fill-ins."""
    return [i for i, token in enumerate(vocab_tokens) if _SPECIAL_RE.match(token)]


def load_vocab(vocab_file: str | os.PathLike) -> "collections.OrderedDict[str, int]":
    """Loads a vocabulary file into an OrderedDict token -> id (google-research's name)."""
    return Vocabulary.from_file(vocab_file).token_to_id


def convert_by_vocab(vocab: Mapping, items: Iterable) -> list:
    """Maps each item through `vocab` (a dict); an unknown item raises KeyError naming it."""
    try:
        return [vocab[item] for item in items]
    except KeyError as e:
        raise KeyError(f"{e.args[0]!r} is not in the vocabulary") from None


def convert_tokens_to_ids(vocab: Mapping[str, int], tokens: Iterable[str]) -> list[int]:
    return convert_by_vocab(vocab, tokens)


def convert_ids_to_tokens(inv_vocab: Mapping[int, str], ids: Iterable[int]) -> list[str]:
    return convert_by_vocab(inv_vocab, ids)
