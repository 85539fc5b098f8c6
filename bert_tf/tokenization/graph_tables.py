"""Code point tables that let TensorFlow ops reproduce google-research/bert's normalisation.

Built once per process from Python's own `unicodedata` and `str.lower`, so the in-graph
tokenizer normalises exactly as the Python one (same Unicode version). tensorflow-text's
lower casing (ICU NFKC_Casefold) is not used: it also applies compatibility mappings
(... for U+2026, 1/2 for U+00BD) that the original keeps.
"""

import functools
import unicodedata

import numpy as np

from bert_tf.tokenization import text as _text

SIGMA, SMALL_FINAL_SIGMA = 0x3A3, 0x3C2


def _assigned():
    """Code points with a category other than Cn (unassigned) and Cs (surrogate)."""
    return (cp for cp, cat in enumerate(_text.categories()) if cat not in ("Cn", "Cs"))


@functools.lru_cache(maxsize=None)
def mapping_table(lower_case):
    """Sorted code points whose cleaned (and, if `lower_case`, lower-cased and NFD-decomposed)
    form is not the code point itself, with that form as a ragged table:
    (keys int32 [K], row_splits int32 [K+1], values int32 [V]). Deleted characters are not in
    it (they are removed before mapping); whitespace maps to a space. Accent stripping is a
    separate step (nonspacing_marks) because NFD's canonical reordering comes before it."""
    deleted, whitespace = set(_text.deleted_chars()), set(_text.whitespace_chars())
    keys, splits, values = [], [0], []
    for cp in _assigned():  # unassigned code points have no case mapping or decomposition
        if cp in deleted:
            continue
        c = chr(cp)
        if cp in whitespace:
            form = " "
        elif lower_case:
            low = c.lower()
            if low == c and unicodedata.is_normalized("NFD", c):
                continue  # fast exit for the many characters left alone
            form = unicodedata.normalize("NFD", low)
        else:
            form = c
        if form != c:
            keys.append(cp)
            values.extend(map(ord, form))
            splits.append(len(values))
    return (np.array(keys, np.int32), np.array(splits, np.int32), np.array(values, np.int32))


@functools.lru_cache(maxsize=None)
def nonspacing_marks():
    """Sorted code points of category Mn (removed by accent stripping)."""
    return np.array([cp for cp, cat in enumerate(_text.categories()) if cat == "Mn"], np.int32)


@functools.lru_cache(maxsize=None)
def combining_classes():
    """(keys, classes): code points with a non-zero canonical combining class, and the class.
    NFD sorts each run of such characters by class; only runs holding two or more that survive
    accent stripping (a few Mc marks) can change the result."""
    keys = [cp for cp in _assigned() if unicodedata.combining(chr(cp))]
    return (np.array(keys, np.int32),
            np.array([unicodedata.combining(chr(cp)) for cp in keys], np.int32))


@functools.lru_cache(maxsize=None)
def deleted_keys():
    return np.array(_text.deleted_chars(), np.int32)


def _final_sigma_after(prefixes, chars):
    """For each char c: does str.lower() turn the capital sigma of prefix + c + "Σ" into a
    final sigma? Evaluated in one lower() call over space-separated samples (a space is
    neither cased nor case-ignorable, so it acts like the string boundary)."""
    lowered = " ".join(f"{prefixes}{c}\u03a3" for c in chars).lower().split(" ")
    return [w[-1] == "\u03c2" for w in lowered]


@functools.lru_cache(maxsize=None)
def sigma_context_keys():
    """(cased, case_ignorable) sorted code points, as Python's str.lower() uses them to decide
    whether a capital sigma is final. Derived from str.lower() itself: "xΣ" gives a final sigma
    iff x is cased and not case-ignorable; "AxΣ" iff x is case-ignorable or cased. (Whether a
    case-ignorable character is also cased never matters: the scan skips it.)"""
    whitespace = set(_text.split_whitespace_chars()) | set(_text.whitespace_chars())
    cps = [cp for cp in _assigned() if cp not in whitespace]
    chars = [chr(cp) for cp in cps]
    alone = _final_sigma_after("", chars)
    after_a = _final_sigma_after("A", chars)
    cased = [cp for cp, a in zip(cps, alone) if a]
    ignorable = [cp for cp, a, b in zip(cps, alone, after_a) if b and not a]
    return np.array(cased, np.int32), np.array(ignorable, np.int32)


@functools.lru_cache(maxsize=None)
def split_patterns():
    """(delimiter regex, kept-delimiter regex) in RE2 syntax: words end at whitespace (dropped)
    and at punctuation or CJK ideographs (kept as tokens of their own)."""
    keep = _text.char_class_pattern(_text.punctuation_chars(), _text.CJK_RANGES)
    space = _text.char_class_pattern(_text.split_whitespace_chars())
    return f"{space}+|{keep}", keep


@functools.lru_cache(maxsize=None)
def stable_punctuation(lower_case):
    """Non-ASCII punctuation characters (google-research's definition) that cleaning and,
    if `lower_case`, lower casing + NFD + accent stripping leave unchanged."""
    keys = set(mapping_table(lower_case)[0].tolist())
    marks = set(nonspacing_marks().tolist())
    return tuple(cp for cp in _text.punctuation_chars()
                 if cp > 0x7F and cp not in keys and cp not in marks)


def build_all():
    """Builds every table above for both casings (each is cached for the process)."""
    for lower_case in (False, True):
        stable_punctuation(lower_case)     # and mapping_table(lower_case)
    deleted_keys(), split_patterns(), sigma_context_keys()
    nonspacing_marks(), combining_classes()
