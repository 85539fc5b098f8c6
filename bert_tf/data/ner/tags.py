"""NER tag schemes: validation, IOB1 -> BIO (IOB2) conversion and label lists.

CoNLL-2003 ships IOB1: `I-X` starts an entity and `B-X` is used only where an entity directly
follows another of the same type. BIO starts every entity with `B-X`. Both become BIO with one
rule: `I-X` turns into `B-X` when the previous tag is `O`, of another type, or absent. The rule
leaves valid BIO unchanged, so files in either scheme can be read the same way.
"""

import re

OUTSIDE = "O"
_TAG_RE = re.compile(r"^([BI])-(\S+)$")


class TagError(ValueError):
    """A tag that is not `O`, `B-<type>` or `I-<type>`."""


def split_tag(tag):
    """("O", None) for O, else (prefix, type), e.g. ("B", "PER"); raises TagError."""
    if tag == OUTSIDE:
        return OUTSIDE, None
    m = _TAG_RE.match(tag)
    if m is None:
        raise TagError(f"tag {tag!r} is not O, B-<type> or I-<type>")
    return m.group(1), m.group(2)


def is_tag(tag):
    try:
        split_tag(tag)
    except TagError:
        return False
    return True


def to_bio(tags):
    """BIO tags of one sentence in IOB1 or BIO (see module docstring)."""
    out, previous_type = [], None
    for tag in tags:
        prefix, kind = split_tag(tag)
        if prefix == "I" and kind != previous_type:
            tag = f"B-{kind}"
        out.append(tag)
        previous_type = kind
    return out


def entity_types(tag_lists):
    """Sorted entity types found in iterables of tags."""
    return sorted({split_tag(t)[1] for tags in tag_lists for t in tags} - {None})


def bio_labels(types):
    """The label list of a BIO tagger: O, then B-/I- of each type in the given order."""
    labels = [OUTSIDE]
    for kind in types:
        labels += [f"B-{kind}", f"I-{kind}"]
    return labels
