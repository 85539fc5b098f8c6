"""Learning a WordPiece vocabulary from text files, laid out like the released English BERT
vocabularies.

Words are counted after google-research/bert's own basic tokenization (the tokenizer that will
use the vocabulary), then tensorflow-text's WordPiece learner picks the pieces. The special
tokens sit where bert-base-uncased has them: [PAD]=0, [unused0..98]=1..99, [UNK]=100,
[CLS]=101, [SEP]=102, [MASK]=103, the remaining [unusedN] after, then the learned pieces.
"""

import collections
import logging
import os
import time
from typing import Mapping

from bert_tf import fileio
from bert_tf.tokenization import basic, full, text as _text, vocab as _vocab

UNUSED_BEFORE_UNK = 99  # [unused0..98] between [PAD] and [UNK] in the released vocabularies
RELEASED_UNUSED = 994  # bert-base-uncased has [unused0] .. [unused993]

log = logging.getLogger(__name__)


def reserved_tokens(num_unused=RELEASED_UNUSED):
    """[PAD], [unused0..], [UNK], [CLS], [SEP], [MASK], [unused..] in the released order."""
    unused = [f"[unused{i}]" for i in range(num_unused)]
    head = min(num_unused, UNUSED_BEFORE_UNK)
    return ([_vocab.PAD] + unused[:head] + [_vocab.UNK, _vocab.CLS, _vocab.SEP, _vocab.MASK]
            + unused[head:])


class _Progress:
    """Logs lines, MB, MB/s and ETA every `every` seconds."""

    def __init__(self, total_bytes, every=5.0):
        self.total, self.every = total_bytes, every
        self.start = self.last = time.time()
        self.lines = self.bytes = 0

    def add_line(self, nbytes):
        self.lines += 1
        self.bytes += nbytes
        if time.time() - self.last >= self.every:
            self.report()

    def report(self):
        now = self.last = time.time()
        rate = self.bytes / max(now - self.start, 1e-9)
        eta = (self.total - self.bytes) / rate if rate else float("inf")
        log.info("counted %d lines, %.1f/%.1f MB, %.2f MB/s, ETA %.0f s", self.lines,
                 self.bytes / 1e6, self.total / 1e6, rate / 1e6, eta)


def count_words(paths, do_lower_case=True, max_lines=None):
    """Counter of the words google-research's BasicTokenizer makes of the files' lines.
    Files are read as UTF-8; undecodable bytes are dropped, as the tokenizer does. Raises
    ValueError when they hold no word."""
    sizes = {}
    for path in paths:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"input file not found: {path}")
        sizes[path] = os.path.getsize(path)
    progress = _Progress(sum(sizes.values()))
    raw = collections.Counter()
    for path in paths:
        log.info("reading %s (%.1f MB)", path, sizes[path] / 1e6)
        with open(path, "rb") as f:
            for line in f:
                raw.update(full.split_words(_text.convert_to_unicode(line)))
                progress.add_line(len(line))
                if max_lines and progress.lines >= max_lines:
                    break
        if max_lines and progress.lines >= max_lines:
            break
    progress.report()
    counts = collections.Counter()
    for word, n in raw.items():  # normalise each distinct whitespace word once
        for piece in basic.normalize_word(word, do_lower_case):
            counts[piece] += n
    if not counts:  # the WordPiece learner would fail on max() of nothing
        raise ValueError(f"{', '.join(map(str, paths))}: no words to learn a vocabulary from "
                         f"(empty or blank files)")
    log.info("%d distinct words (%d before normalisation)", len(counts), len(raw))
    return counts


def learn_wordpiece_vocab(word_counts: Mapping[str, int], vocab_size: int,
                          num_unused: int = RELEASED_UNUSED, max_unique_chars: int = 1000,
                          max_token_length: int = 50, lower_thresh: int = 10,
                          num_iterations: int = 4) -> list[str]:
    """Token list of at most `vocab_size` entries: reserved tokens, then learned pieces.

    Args:
      word_counts: {normalised word: count}, as count_words returns it.
      vocab_size: the size of the returned list, reserved tokens included (fewer when the
        corpus has too few words seen `lower_thresh` times; a warning says so).
      num_unused: `[unusedN]` slots reserved after [PAD], as the released vocabularies have.
      max_unique_chars, max_token_length, lower_thresh, num_iterations: passed to
        tensorflow-text's WordPiece learner (alphabet size, longest piece, the lowest count
        threshold it tries, learning rounds).
    """
    # Imported here: counting words (also for build_vocab.py --extend) needs no TensorFlow.
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner
    reserved = reserved_tokens(num_unused)
    if vocab_size <= len(reserved):
        raise ValueError(f"vocab_size={vocab_size} leaves no room for pieces after "
                         f"{len(reserved)} reserved tokens (lower --num_unused)")
    start = time.time()
    log.info("learning up to %d pieces from %d words", vocab_size - len(reserved),
             len(word_counts))
    tokens = learner.learn(dict(word_counts), vocab_size, reserved,
                           lower_thresh=lower_thresh, num_iterations=num_iterations,
                           max_token_length=max_token_length,
                           max_unique_chars=max_unique_chars)
    tokens = tokens[:vocab_size]
    log.info("learned %d tokens in %.1f s", len(tokens), time.time() - start)
    if len(tokens) < vocab_size:
        log.warning("only %d of the %d requested tokens: the corpus has too few words seen "
                    "at least --lower_thresh=%d times", len(tokens), vocab_size, lower_thresh)
    _vocab.Vocabulary(tokens).require()  # no duplicates, all special tokens present
    return tokens


def write_vocab(tokens, path):
    """Writes one token per line, atomically."""
    fileio.atomic_write_text(path, "".join(t + "\n" for t in tokens))
