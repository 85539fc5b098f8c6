"""New sentence pairs made of a pair task's own sentences, for a teacher to label.

Paraphrase and inference sets are often drawn from clusters of texts about one event or
topic (MRPC from news stories), so a sentence's most similar sentence in *another* pair is
in-domain and often about the same thing: a near paraphrase or a near miss, the pairs whose
labels a distilled student most needs to see the teacher's judgement on. Similarity is the
cosine of tf-idf weighted word sets (lower-cased letters and digits).
"""

import collections
import re

import numpy as np

_WORDS = re.compile(r"[a-z0-9]+")
_CHUNK_CELLS = 1 << 24        # similarity values held at once (64 MB of float32)


def sentence_key(text):
    """`text` lower-cased, letters and digits only: sentences equal under it are one."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def cross_pairs(pairs, min_similarity=0.3, held_out=()):
    """New pairs of the sentences of `pairs` ((text_a, text_b) tuples): each sentence whose
    key (sentence_key) is not in `held_out`, with its most similar such sentence that no pair
    already holds it with, if their similarity is at least `min_similarity`. Each new pair
    once (the first sentence's order of first appearance decides which comes first); the
    result is a function of `pairs` alone. Cost: quadratic in the number of sentences."""
    if not 0.0 < min_similarity <= 1.0:
        raise ValueError(f"the similarity threshold must be in (0, 1], got {min_similarity}")
    sentences, partners = {}, set()
    for pair in pairs:
        keys = [sentence_key(text) for text in pair]
        for key, text in zip(keys, pair):
            if key not in held_out:
                sentences.setdefault(key, text)
        partners.add(frozenset(keys))
    keys = list(sentences)
    if len(keys) < 2:
        return []
    weights = _tfidf([set(_WORDS.findall(sentences[k].lower())) for k in keys])
    found, seen = [], set()
    rows = max(1, _CHUNK_CELLS // len(keys))
    for start in range(0, len(keys), rows):
        similarity = (weights[start:start + rows] @ weights.T).toarray()   # [rows, sentences]
        for row, i in enumerate(range(start, min(start + rows, len(keys)))):
            similarity[row, i] = 0
            near = np.flatnonzero(similarity[row] >= min_similarity)
            for j in near[np.argsort(-similarity[row, near], kind="stable")]:
                if frozenset((keys[i], keys[j])) not in partners:   # the closest of another pair
                    if frozenset((i, j)) not in seen:
                        seen.add(frozenset((i, j)))
                        found.append((sentences[keys[i]], sentences[keys[j]]))
                    break
    return found


def _tfidf(word_sets):
    """scipy CSR float32 [texts, words]: each text's words weighted log(texts / texts with
    the word), rows scaled to unit length (an empty row stays zero)."""
    from scipy import sparse
    frequency = collections.Counter(w for words in word_sets for w in words)
    column = {w: j for j, w in enumerate(frequency)}
    rows, cols, values = [], [], []
    for i, words in enumerate(word_sets):
        for w in words:
            rows.append(i)
            cols.append(column[w])
            values.append(np.log(len(word_sets) / frequency[w]))
    matrix = sparse.csr_matrix((np.asarray(values, np.float32), (rows, cols)),
                               shape=(len(word_sets), len(column)), dtype=np.float32)
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    return sparse.diags(1.0 / np.maximum(norms, 1e-9)).astype(np.float32) @ matrix
