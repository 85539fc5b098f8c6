"""What the tagger reads at once: one sentence, or a whole document (the paper's "maximal
document context"). Units are word lists; sentence_spans map them back to sentences."""

import dataclasses

CONTEXTS = ("sentence", "document")


@dataclasses.dataclass
class Units:
    words: list            # one word list per unit
    tags: list             # one BIO tag list per unit, or None (unlabelled file)
    sentence_spans: list   # per sentence: (unit, first word in the unit, number of words)


def group_sentences(conll, context="sentence"):
    """Units of a ConllFile: each sentence, or each document's sentences concatenated."""
    if context not in CONTEXTS:
        raise ValueError(f"context must be one of {CONTEXTS}, got {context!r}")
    groups = ([[i] for i in range(len(conll.sentences))] if context == "sentence"
              else conll.documents())
    words, tags, spans = [], [] if conll.labelled else None, [None] * len(conll.sentences)
    for u, indices in enumerate(groups):
        unit_words, unit_tags = [], []
        for i in indices:
            sentence = conll.sentences[i]
            spans[i] = (u, len(unit_words), len(sentence.words))
            unit_words.extend(sentence.words)
            if tags is not None:
                unit_tags.extend(sentence.tags)
        words.append(unit_words)
        if tags is not None:
            tags.append(unit_tags)
    return Units(words, tags, spans)


def per_sentence(units, values):
    """Splits per-unit sequences (e.g. predicted tags) back into per-sentence lists."""
    return [list(values[u][first:first + n]) for u, first, n in units.sentence_spans]
