"""Extending a released WordPiece vocabulary with words of a domain corpus, keeping every
existing token's id (build_vocab.py --extend).

Which words: the corpus is counted exactly as build_vocab.py counts it (google-research's
basic tokenization, lower-cased and accent-stripped with do_lower_case), then each distinct
word is split by the existing vocabulary with google-research's greedy WordPiece. A word is a
candidate when it is not a token already, occurs at least `min_count` times, has at most
`max_token_length` characters, and the vocabulary splits it into two pieces or more (a word
that comes out as [UNK] holds a character the vocabulary lacks; it is not a candidate).
Candidates are ranked by the tokens they would save over the corpus, count x (pieces - 1),
then by count, then alphabetically; the first `num_new_tokens` are added as whole words.
The savings are measured against the existing vocabulary alone.

Where they go: first into the [unusedN] slots in id order (their rows in a released
checkpoint are the slot's), then appended after the last token (new ids; the model's
vocab_size grows and checkpoints/report.py initialises those rows on load). Every other
token keeps its id, so the released checkpoint's rows still match.

Because WordPiece takes the longest matching prefix, a new word also changes how words that
start with it and are not in the vocabulary themselves are split ("neuro" added: "neurons"
becomes "neuro ##ns" if "neurons" was not a token). Text without such words keeps its ids.
"""

import dataclasses
import json
import logging
import re

from bert_tf import fileio
from bert_tf.tokenization import vocab as _vocab, wordpiece

UNUSED_RE = re.compile(r"\[unused\d+\]$")

log = logging.getLogger(__name__)


@dataclasses.dataclass
class Candidate:
    word: str
    count: int
    pieces: list           # how the existing vocabulary splits it

    @property
    def saving(self):
        """Tokens saved over the corpus once the word is one token."""
        return self.count * (len(self.pieces) - 1)


@dataclasses.dataclass
class Extension:
    """The result of extend_vocab."""

    tokens: list           # the new vocabulary, id order
    old_size: int
    added: list            # Candidates added, most useful first
    in_unused: list        # (id, token) placed in [unused] slots
    appended: list         # (id, token) after the old tokens
    num_candidates: int    # words that qualified
    unused_left: int       # [unused] slots still free

    @property
    def grew(self):
        return len(self.tokens) > self.old_size


def unused_slots(tokens):
    """Ids of the [unusedN] tokens, in id order."""
    return [i for i, t in enumerate(tokens) if UNUSED_RE.match(t)]


def rank_candidates(word_counts, vocab, min_count=3, max_token_length=50):
    """Candidates (see the module docstring), most useful first. `vocab`: a token -> id dict."""
    unk = _vocab.UNK
    candidates = []
    for word, count in word_counts.items():
        if count < min_count or word in vocab or len(word) > max_token_length:
            continue
        pieces = wordpiece.wordpiece_word(word, vocab, unk)
        if len(pieces) < 2:           # [UNK]: a character the vocabulary lacks
            continue
        candidates.append(Candidate(word, count, pieces))
    candidates.sort(key=lambda c: (-c.saving, -c.count, c.word))
    return candidates


def check_case(tokens, do_lower_case, path="vocabulary"):
    """Warns when the vocabulary's casing does not look like do_lower_case's (the candidates
    would then be words the model never sees)."""
    words = [t for t in tokens if not t.startswith("[") and not t.startswith("##")]
    upper = sum(1 for t in words if t != t.lower())
    share = upper / max(len(words), 1)
    if do_lower_case and share > 0.05:
        log.warning("%s: %.0f%% of its words have upper-case letters: a cased vocabulary? "
                    "(pass --nodo_lower_case for cased models)", path, 100 * share)
    elif not do_lower_case and words and upper == 0:
        log.warning("%s: no word has an upper-case letter: an uncased vocabulary? "
                    "(use --do_lower_case for uncased models)", path)


def extend_vocab(tokens, word_counts, num_new_tokens, allow_growth=True, min_count=3,
                 max_token_length=50, source="vocabulary"):
    """Extension of `tokens` (the existing vocabulary, id order) by up to `num_new_tokens`
    words of `word_counts` (a Counter of normalised words, vocab_learning.count_words).

    Raises ValueError when num_new_tokens < 1, or when there are no [unused] slots and
    allow_growth is False."""
    if num_new_tokens < 1:
        raise ValueError(f"--num_new_tokens must be >= 1, got {num_new_tokens}")
    vocabulary = _vocab.Vocabulary(tokens, path=source)
    vocabulary.require()
    slots = unused_slots(tokens)
    if not slots and not allow_growth:
        raise ValueError(f"{source} has no [unusedN] slots and --noallow_growth forbids "
                         f"appending: there is no room for new tokens")
    candidates = rank_candidates(word_counts, vocabulary.token_to_id, min_count,
                                 max_token_length)
    room = num_new_tokens if allow_growth else min(num_new_tokens, len(slots))
    chosen = candidates[:room]
    if len(candidates) < num_new_tokens:
        log.warning("only %d words of the corpus qualify (count >= %d, split into 2+ pieces "
                    "by %s); adding those", len(candidates), min_count, source)
    elif room < num_new_tokens:
        log.warning("%s has %d [unused] slots and --noallow_growth: adding %d of the %d "
                    "requested words", source, len(slots), room, num_new_tokens)
    new_tokens = list(tokens)
    in_unused, appended = [], []
    for slot, candidate in zip(slots, chosen):
        new_tokens[slot] = candidate.word
        in_unused.append((slot, candidate.word))
    for candidate in chosen[len(in_unused):]:
        appended.append((len(new_tokens), candidate.word))
        new_tokens.append(candidate.word)
    _vocab.Vocabulary(new_tokens).require()      # no duplicates, special tokens kept
    return Extension(tokens=new_tokens, old_size=len(tokens), added=chosen,
                     in_unused=in_unused, appended=appended, num_candidates=len(candidates),
                     unused_left=len(slots) - len(in_unused))


def log_extension(ext, source, shown=10):
    """The log lines build_vocab.py --extend prints."""
    log.info("%d words of the corpus are split into several pieces by %s (and qualify); "
             "adding %d", ext.num_candidates, source, len(ext.added))
    for c in ext.added[:shown]:
        log.info("  %-20s count %6d, was %s", c.word, c.count, " ".join(c.pieces))
    if len(ext.added) > shown:
        log.info("  ... and %d more", len(ext.added) - shown)
    span = (lambda pairs: f" (ids {pairs[0][0]}..{pairs[-1][0]})" if pairs else "")
    log.info("%d new tokens went into [unused] slots%s (%d slots left), %d were appended%s; "
             "vocabulary size %d -> %d", len(ext.in_unused), span(ext.in_unused),
             ext.unused_left, len(ext.appended), span(ext.appended), ext.old_size,
             len(ext.tokens))


def read_config(config_file, old_num_tokens):
    """(BertConfig, raw JSON dict) of a bert_config.json / HF config.json that should describe
    a vocabulary of `old_num_tokens` tokens. Raises ValueError when its vocab_size is smaller
    (not this vocabulary's config), FileNotFoundError when it is missing."""
    from bert_tf.config import BertConfig
    if not fileio.exists(config_file):
        raise FileNotFoundError(f"--bert_config_file {config_file} does not exist")
    config = BertConfig.from_json_file(config_file)     # validates it (google or HF format)
    if config.vocab_size < old_num_tokens:
        raise ValueError(f"--bert_config_file {config_file}: vocab_size {config.vocab_size} is "
                         f"smaller than the {old_num_tokens} tokens of the vocabulary being "
                         f"extended: not this vocabulary's config")
    with open(config_file, encoding="utf-8") as f:
        return config, json.load(f)


def write_config_copy(config_file, output_file, num_tokens, old_num_tokens):
    """Copies a bert_config.json / HF config.json to `output_file` (atomically) with vocab_size
    raised to `num_tokens` when that is larger; every other key is kept as it is (same format).
    Returns the written vocab_size."""
    config, values = read_config(config_file, old_num_tokens)
    vocab_size = max(config.vocab_size, num_tokens)
    if config.vocab_size > old_num_tokens and num_tokens > old_num_tokens:
        log.info("%s: vocab_size %d already exceeds the vocabulary's %d tokens; appended ids "
                 "below %d use the checkpoint's existing rows", config_file, config.vocab_size,
                 old_num_tokens, config.vocab_size)
    values["vocab_size"] = vocab_size
    fileio.atomic_write_text(output_file, json.dumps(values, indent=2) + "\n")
    log.info("wrote %s: vocab_size %d%s", output_file, vocab_size,
             " (unchanged)" if vocab_size == config.vocab_size else
             f" (was {config.vocab_size})")
    return vocab_size
