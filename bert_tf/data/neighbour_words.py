"""Word replacement by word-embedding neighbours: new texts near a task's own, for a teacher to
label (the data augmentation of TinyBERT, Jiao et al. 2019, which took GloVe neighbours).

A whole word of the vocabulary is replaced, with a given probability, by one of its nearest
words in a model's word-embedding table (cosine similarity). Only alphabetic ASCII words of
`min_letters` letters or more take part, as replacements and as replaced words: short function
words, numbers, ##pieces and [special] tokens stay as they are, so the sentence's frame does.
"""

import re

import numpy as np

_WORD = re.compile(r"(\W*)(.*?)(\W*)")    # punctuation before, the word, punctuation after


class NeighbourReplacer:
    """text -> text with words replaced by embedding neighbours; random but a function of
    `seed` and the sequence of texts given.

    Args:
      vocab: the tokens in id order (the table's rows).
      table: float [vocab_size, hidden] word embeddings.
      probability: the chance of each eligible word to be replaced.
      seed: the random generator's seed.
      neighbours: a replacement is drawn uniformly from this many nearest words.
      min_letters: the shortest word that is replaced or used as a replacement.
    """

    def __init__(self, vocab, table, probability, seed, neighbours=8, min_letters=4):
        table = np.asarray(table, np.float32)
        if table.shape[0] != len(vocab):
            raise ValueError(f"the word-embedding table has {table.shape[0]} rows but the "
                             f"vocabulary {len(vocab)} tokens: they must belong together")
        if not 0.0 < probability <= 1.0:
            raise ValueError(f"the replacement probability must be in (0, 1], got "
                             f"{probability}")
        self.vocab = list(vocab)
        self.words = np.array([w.isalpha() and w.isascii() and len(w) >= min_letters
                               for w in self.vocab])
        if self.words.sum() <= neighbours:
            raise ValueError(f"the vocabulary has {int(self.words.sum())} whole words of "
                             f"{min_letters} letters or more: too few for {neighbours} "
                             f"neighbours each")
        self.unit = table / np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-12)
        self.index = {w: i for i, w in enumerate(self.vocab) if self.words[i]}
        self.probability = probability
        self.count = neighbours
        self.rng = np.random.default_rng(seed)
        self.cache = {}

    def neighbours(self, word_id):
        """The `neighbours` eligible words nearest to vocabulary id `word_id` (itself
        excluded), in no particular order."""
        if word_id not in self.cache:
            similarity = np.where(self.words, self.unit @ self.unit[word_id], -np.inf)
            similarity[word_id] = -np.inf
            nearest = np.argpartition(-similarity, self.count)[:self.count]
            self.cache[word_id] = [self.vocab[j] for j in nearest]
        return self.cache[word_id]

    def __call__(self, text):
        """`text` with each eligible whitespace-separated word (matched lower-cased, without
        the punctuation around it, which stays) replaced with the probability given."""
        out = []
        for token in text.split():
            head, core, tail = _WORD.fullmatch(token).groups()
            i = self.index.get(core.lower())
            if i is not None and self.rng.random() < self.probability:
                core = self.neighbours(i)[self.rng.integers(self.count)]
            out.append(head + core + tail)
        return " ".join(out)
