"""New sentence pairs made of a pair task's own sentences, for a teacher to label.

Paraphrase and inference sets are often drawn from clusters of texts about one event or
topic (MRPC from news stories), so a sentence's most similar sentence in *another* pair is
in-domain and often about the same thing: a near paraphrase or a near miss, the pairs whose
labels a distilled student most needs to see the teacher's judgement on. Similarity is the
cosine of tf-idf weighted word sets (runs of letters and digits, case-folded). The cost is
quadratic in the number of sentences: seconds for MRPC's 7,000, hours for QQP's 500,000.
"""

import collections
import re

import numpy as np

_WORDS = re.compile(r"[^\W_]+")
_CHUNK_CELLS = 1 << 24        # similarities of one chunk of rows (64 MB dense, ~3x at peak)


def sentence_key(text):
    """`text` case-folded, its letters and digits only: sentences equal under it are one."""
    return "".join(_WORDS.findall(text.casefold()))


def cross_pairs(pairs, min_similarity=0.3, held_out=(), exclude=()):
    """New pairs of the sentences of `pairs` ((text_a, text_b) tuples), deterministic: each
    sentence whose key (sentence_key) is not in `held_out`, as (it, its most similar such
    sentence), in the order of the sentences' first appearance, if their similarity is at
    least `min_similarity` (in (0, 1)) and no pair of `pairs` or `exclude` (e.g. the
    evaluation pairs) holds the two already. Each new pair once."""
    if not 0.0 < min_similarity < 1.0:
        raise ValueError(f"the similarity threshold must be in (0, 1), got {min_similarity}")
    sentences, partners = {}, set()
    for pair in pairs:
        keys = [sentence_key(text) for text in pair]
        for key, text in zip(keys, pair):
            if key not in held_out:
                sentences.setdefault(key, text)
        partners.add(frozenset(keys))
    partners.update(frozenset(sentence_key(text) for text in pair) for pair in exclude)
    keys = list(sentences)
    if len(keys) < 2:
        return []
    weights = _tfidf([set(_WORDS.findall(sentences[k].casefold())) for k in keys])
    transposed = weights.T.tocsr()
    found, seen = [], set()
    rows = max(1, _CHUNK_CELLS // len(keys))
    for start in range(0, len(keys), rows):
        similarity = (weights[start:start + rows] @ transposed).toarray()  # [rows, sentences]
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
