"""Token-classification features: words -> WordPiece windows with first-sub-token labels.

Each word is tokenized on its own; its label sits on its first sub-token (as in the BERT paper)
and the other sub-tokens carry weight 0, so the loss ignores them. A unit (a sentence, or a whole
document) longer than max_seq_length - 2 sub-tokens is split at word boundaries into windows whose
starts advance by at most `stride` sub-tokens, so consecutive windows overlap. A word seen in
several windows is predicted from the one where it has the most context on both sides (the rule
run_squad uses for answer spans).
"""

import dataclasses

import numpy as np

@dataclasses.dataclass
class Window:
    unit: int              # index of the unit (sentence or document) the window comes from
    first_word: int        # words [first_word, end_word) of the unit
    end_word: int
    positions: list        # token position of each word's first sub-token in the window
    is_max_context: list   # for each word: is this the window it is predicted from


def word_windows(word_lengths, budget, stride):
    """[(first_word, end_word)] covering every word, each at most `budget` sub-tokens (a single
    longer word forms a window of its own, truncated), starts advancing <= `stride` sub-tokens."""
    n = len(word_lengths)
    starts = np.concatenate([[0], np.cumsum(word_lengths)]).astype(np.int64)
    windows, first = [], 0
    while True:
        end = first
        while end < n and starts[end + 1] - starts[first] <= budget:
            end += 1
        end = max(end, first + 1)
        windows.append((first, end))
        if end >= n:
            return windows
        # The last word starting within `stride` pieces of this window's start (at least the
        # next word, at most the first word this window left out).
        following = int(np.searchsorted(starts[:n], starts[first] + stride, side="right")) - 1
        first = max(min(following, end), first + 1)


def max_context_flags(windows, word_lengths):
    """For each window, one flag per word: True in the window that predicts the word."""
    starts = np.concatenate([[0], np.cumsum(word_lengths)])
    best = {}
    for w, (first, end) in enumerate(windows):
        span_start, span_end = starts[first], starts[end]
        for word in range(first, end):
            left = starts[word] - span_start
            right = span_end - starts[word + 1]
            score = min(left, right) + 0.01 * (span_end - span_start)
            if word not in best or score > best[word][0]:
                best[word] = (score, w)
    return [[best[word][1] == w for word in range(first, end)]
            for w, (first, end) in enumerate(windows)]


@dataclasses.dataclass
class TaggingFeatures:
    """Padded arrays [num_windows, max_seq_length] plus the windows' word bookkeeping."""
    arrays: dict
    windows: list
    num_units: int

    @property
    def num_windows(self):
        return len(self.windows)


def encode_units(units, tokenizer, max_seq_length, stride, label_ids=None, log_first=0,
                 logger=None):
    """Features of `units` (lists of words). `label_ids`: one list of label ids per unit, or
    None for prediction only.

    Arrays: input_ids, input_mask, segment_ids (int32), label_ids (int32, 0 where unused),
    label_weights (float32: 1 on each word's first sub-token), window_index (int32)."""
    if max_seq_length < 3:
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for words")
    budget = max_seq_length - 2
    special = tokenizer.special_ids
    cls_id, sep_id, unk_id = special["[CLS]"], special["[SEP]"], special["[UNK]"]
    rows, windows = [], []
    for u, words in enumerate(units):
        # A word that tokenizes to nothing (only characters BERT deletes) still needs a
        # position for its label: it becomes [UNK].
        pieces = [tokenizer.encode(word) or [unk_id] for word in words]
        lengths = [len(p) for p in pieces]
        spans = word_windows(lengths, budget, stride) if words else []
        flags = max_context_flags(spans, lengths)
        for (first, end), is_max in zip(spans, flags):
            ids, positions = [cls_id], []
            for word in range(first, end):
                positions.append(len(ids))
                ids.extend(pieces[word][:budget - len(ids) + 1])
            ids.append(sep_id)
            labels = None if label_ids is None else label_ids[u][first:end]
            rows.append((ids, positions, labels))
            windows.append(Window(u, first, end, positions, is_max))
            if logger is not None and len(windows) <= log_first:
                logger.info("window %d (unit %d, words %d-%d): %s", len(windows) - 1, u, first,
                            end - 1, " ".join(tokenizer.convert_ids_to_tokens(ids)))
    n = len(rows)
    arrays = {"input_ids": np.zeros((n, max_seq_length), np.int32),
              "input_mask": np.zeros((n, max_seq_length), np.int32),
              "segment_ids": np.zeros((n, max_seq_length), np.int32),
              "label_ids": np.zeros((n, max_seq_length), np.int32),
              "label_weights": np.zeros((n, max_seq_length), np.float32),
              "window_index": np.arange(n, dtype=np.int32)}
    for i, (ids, positions, labels) in enumerate(rows):
        arrays["input_ids"][i, :len(ids)] = ids
        arrays["input_mask"][i, :len(ids)] = 1
        arrays["label_weights"][i, positions] = 1.0
        if labels is not None:
            arrays["label_ids"][i, positions] = labels
    return TaggingFeatures(arrays, windows, len(units))


class WordScores:
    """Collects, window by window, the scores of each word's first sub-token from the window
    that predicts it; result() gives one [num_words, num_labels] array per unit."""

    def __init__(self, features, num_words, num_labels):
        self.features = features
        self.scores = [np.zeros((n, num_labels), np.float32) for n in num_words]
        self.filled = [np.zeros(n, bool) for n in num_words]

    def add(self, window_index, logits):
        """logits: [S', num_labels] of window `window_index` (S' may be cut short)."""
        window = self.features.windows[window_index]
        scores, filled = self.scores[window.unit], self.filled[window.unit]
        for k, (position, is_max) in enumerate(zip(window.positions, window.is_max_context)):
            if is_max:
                scores[window.first_word + k] = logits[position]
                filled[window.first_word + k] = True

    def result(self):
        missing = [u for u, f in enumerate(self.filled) if not f.all()]
        if missing:
            raise RuntimeError(f"{len(missing)} unit(s) have words without a prediction "
                               f"(first: unit {missing[0]})")
        return self.scores
