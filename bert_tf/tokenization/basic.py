"""google-research/bert's basic tokenization: cleaning, CJK splitting, lower casing with accent
stripping, punctuation splitting. Character by character, as the original; FullTokenizer adds
the fast paths and caches on top of it."""

import re
import unicodedata

from bert_tf.tokenization import text as _text


def strip_accents(word):
    """NFD-decomposes `word` and drops nonspacing marks (category Mn)."""
    return "".join(c for c in unicodedata.normalize("NFD", word)
                   if unicodedata.category(c) != "Mn")


def split_on_punctuation(word):
    """Splits `word` so that every punctuation character is a piece of its own."""
    pieces, current = [], []
    for char in word:
        if _text.is_punctuation(char):
            if current:
                pieces.append("".join(current))
                current = []
            pieces.append(char)
        else:
            current.append(char)
    if current:
        pieces.append("".join(current))
    return pieces


# In cleaned ASCII text every character that is not a letter or digit is punctuation.
ASCII_PIECES = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9]")


def normalize_word(word, do_lower_case):
    """Pieces of one whitespace-delimited word of cleaned text (no whitespace, no control
    character, no CJK inside), character by character as the original.

    Lower casing uses str.lower() on the whole word, so a final capital sigma becomes
    final sigma, as in the original."""
    if do_lower_case:
        word = strip_accents(word.lower())
    return _text.whitespace_tokenize(" ".join(split_on_punctuation(word)))


def clean_text(text):
    """Deletes NUL, U+FFFD and control characters; maps whitespace to a space."""
    return "".join(" " if _text.is_whitespace(c) else c
                   for c in text if not _text.is_deleted(c))


def space_cjk(text):
    """Surrounds every CJK ideograph with spaces."""
    return "".join(f" {c} " if _text.is_cjk_char(ord(c)) else c for c in text)


class BasicTokenizer:
    """Cleaning, CJK splitting, optional lower casing + accent stripping, punctuation split."""

    def __init__(self, do_lower_case: bool = True) -> None:
        self.do_lower_case = do_lower_case

    def tokenize(self, text: str | bytes) -> list[str]:
        """Words and punctuation marks of `text`, before WordPiece."""
        text = space_cjk(clean_text(_text.convert_to_unicode(text)))
        tokens = []
        for word in _text.whitespace_tokenize(text):
            tokens.extend(normalize_word(word, self.do_lower_case))
        return tokens
