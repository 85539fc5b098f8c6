"""Text helpers and the character classes of google-research/bert's tokenizer.

The classes are the specification every other part of this package follows:
* control (deleted): Unicode categories Cc and Cf, except tab, newline and carriage return;
  NUL and U+FFFD are deleted too.
* whitespace (becomes a word break): space, tab, newline, carriage return and category Zs;
  after cleaning, Python's `str.split()` also breaks on U+2028 / U+2029.
* punctuation (a token of its own): ASCII 33-47, 58-64, 91-96, 123-126 and categories P*.
* CJK ideographs (a token of their own): the CJK Unified Ideographs blocks and extensions A-E
  plus the compatibility ideographs.
"""

import functools
import re
import sys
import unicodedata

# (first, last) code point ranges google-research treats as CJK ideographs.
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_ASCII_PUNCT_RANGES = ((33, 47), (58, 64), (91, 96), (123, 126))


def convert_to_unicode(text: str | bytes | bytearray) -> str:
    """Returns `text` as str; bytes are decoded as UTF-8 and undecodable bytes dropped."""
    if isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray)):
        return bytes(text).decode("utf-8", "ignore")
    raise ValueError(f"Unsupported string type: {type(text)}")


def printable_text(text: str | bytes | bytearray) -> str:
    """Returns `text` as str, suitable for printing or logging (Python 3: same as
    convert_to_unicode)."""
    return convert_to_unicode(text)


def whitespace_tokenize(text: str) -> list[str]:
    """Strips `text` and splits it on whitespace."""
    return text.split()


def is_whitespace(char):
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def is_control(char):
    if char in "\t\n\r":
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def is_punctuation(char):
    cp = ord(char)
    if any(lo <= cp <= hi for lo, hi in _ASCII_PUNCT_RANGES):
        return True
    return unicodedata.category(char).startswith("P")


def is_cjk_char(cp):
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def is_deleted(char):
    """True for characters google-research's cleaning step removes."""
    return char in "\x00\ufffd" or is_control(char)


@functools.lru_cache(maxsize=None)
def categories():
    """Unicode general category of every code point (index = code point)."""
    return tuple(unicodedata.category(chr(cp)) for cp in range(sys.maxunicode + 1))


def char_class_pattern(cps, ranges=()):
    """A regex character class (RE2 syntax) matching the code points `cps` and the inclusive
    (first, last) `ranges`."""
    spans = sorted([(c, c) for c in set(cps)] + list(ranges))
    merged = []
    for lo, hi in spans:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return "[" + "".join(f"\\x{{{lo:x}}}" if lo == hi else f"\\x{{{lo:x}}}-\\x{{{hi:x}}}"
                         for lo, hi in merged) + "]"


@functools.lru_cache(maxsize=None)
def deleted_chars():
    """Code points the cleaning step deletes."""
    cats = categories()
    return tuple(cp for cp, cat in enumerate(cats)
                 if (cat in ("Cc", "Cf") and cp not in (9, 10, 13)) or cp == 0xFFFD)


@functools.lru_cache(maxsize=None)
def punctuation_chars():
    cats = categories()
    ascii_punct = {cp for lo, hi in _ASCII_PUNCT_RANGES for cp in range(lo, hi + 1)}
    return tuple(cp for cp, cat in enumerate(cats) if cat[0] == "P" or cp in ascii_punct)


@functools.lru_cache(maxsize=None)
def whitespace_chars():
    """Code points google-research maps to a space."""
    return tuple(cp for cp, cat in enumerate(categories()) if cat == "Zs" or cp in (9, 10, 13))


@functools.lru_cache(maxsize=None)
def split_whitespace_chars():
    """Code points Python's str.split() breaks on (after cleaning only U+0020, U+2028 and
    U+2029 remain, plus tab/newline/return on the ASCII fast paths)."""
    return tuple(cp for cp in range(sys.maxunicode + 1) if chr(cp).isspace())


@functools.lru_cache(maxsize=None)
def delete_re():
    """Compiled Python regex matching one deleted character."""
    return re.compile("[" + "".join(re.escape(chr(c)) for c in deleted_chars()) + "]")


# Deleted characters that are ASCII (all of them are Cc).
ASCII_DELETE_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
CJK_RE = re.compile("[" + "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
                                  for lo, hi in CJK_RANGES) + "]")
