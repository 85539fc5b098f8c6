"""build_vocab.py's job: learn a WordPiece vocabulary from text files, or extend an existing one
with the words of a domain corpus that it splits into several pieces (every existing token
keeps its id)."""

import dataclasses
import glob
import logging

from bert_tf.options import option

# Flags of one mode only: given in the other, they are mistakes, not silently ignored.
LEARN_ONLY = ("vocab_size", "num_unused", "max_unique_chars", "lower_thresh")
EXTEND_ONLY = ("num_new_tokens", "min_count", "allow_growth", "bert_config_file",
               "output_config_file")


@dataclasses.dataclass(kw_only=True)
class VocabOptions:
    """What to learn or extend; every field is a flag of build_vocab.py."""

    input_file: str = option(None, "Comma-separated text files or glob patterns.",
                             required=True)
    output_file: str = option(None, "Vocabulary file to write (written atomically).",
                              required=True)
    vocab_size: int = option(30522, "Maximum number of tokens, reserved ones included.")
    do_lower_case: bool = option(
        True, "Count words lower-cased and accent-stripped (for uncased models). With --extend "
        "it must match the vocabulary's casing.")
    num_unused: int = option(994, "Number of [unusedN] slots (bert-base-uncased: 994).")
    max_unique_chars: int = option(1000, "Most frequent characters kept as pieces.")
    max_token_length: int = option(50, "Longest piece, in characters (with --extend: longest "
                                   "new word).")
    lower_thresh: int = option(10, "Lowest count threshold the learner searches.")
    max_lines: int = option(0, "Stop after this many lines (0: read everything).")
    extend: str = option(
        None, "An existing vocabulary (e.g. a released checkpoint's vocab.txt) to extend instead "
        "of learning one: the --num_new_tokens words of --input_file that save the most tokens "
        "(count x (pieces - 1)) among those it splits into several pieces are added as whole "
        "words, first into its [unusedN] slots, then appended. Every existing token keeps its "
        "id.")
    num_new_tokens: int = option(None, "With --extend: how many words to add.")
    min_count: int = option(3, "With --extend: fewest occurrences of a word added.")
    allow_growth: bool = option(
        True, "With --extend: append the words that do not fit into [unused] slots after the "
        "last token (the model's vocab_size grows; new embedding rows are initialised when the "
        "checkpoint is loaded). --noallow_growth keeps the size.")
    bert_config_file: str = option(
        None, "With --extend: the model's bert_config.json or HuggingFace config.json, copied to "
        "--output_config_file with vocab_size raised to the new size.")
    output_config_file: str = option(
        None, "With --extend: where to write that copy (pass it as --bert_config_file to the "
        "runners).")

    def validate(self, given):
        """`given`: the names of the flags the command line gave (a flag of the other mode is
        an error, even at its default)."""
        wrong = [name for name in (LEARN_ONLY if self.extend else EXTEND_ONLY) if name in given]
        if wrong:
            names = ", ".join("--" + n for n in wrong)
            if self.extend:
                raise ValueError(f"{names}: for learning a vocabulary, not for --extend")
            raise ValueError(f"{names}: only with --extend (extending an existing vocabulary)")
        if not self.extend:
            return
        if self.num_new_tokens is None:
            raise ValueError("--extend needs --num_new_tokens (how many words to add)")
        if self.num_new_tokens < 1:
            raise ValueError(f"--num_new_tokens must be >= 1, got {self.num_new_tokens}")
        if bool(self.bert_config_file) != bool(self.output_config_file):
            raise ValueError("--bert_config_file and --output_config_file go together")


def input_paths(patterns):
    paths = []
    for pattern in patterns.split(","):
        matches = sorted(glob.glob(pattern.strip()))
        if not matches:
            raise FileNotFoundError(f"--input_file: no file matches {pattern!r}")
        paths.extend(matches)
    return paths


def learn(opts, paths):
    from bert_tf.tokenization import vocab_learning
    counts = vocab_learning.count_words(paths, opts.do_lower_case, opts.max_lines or None)
    tokens = vocab_learning.learn_wordpiece_vocab(
        counts, opts.vocab_size, num_unused=opts.num_unused,
        max_unique_chars=opts.max_unique_chars, max_token_length=opts.max_token_length,
        lower_thresh=opts.lower_thresh)
    vocab_learning.write_vocab(tokens, opts.output_file)
    logging.info("wrote %d tokens to %s", len(tokens), opts.output_file)


def extend(opts, paths):
    from bert_tf import fileio
    from bert_tf.tokenization import vocab as _vocab, vocab_extension, vocab_learning
    if not fileio.exists(opts.extend):
        raise FileNotFoundError(f"--extend: vocabulary file {opts.extend} does not exist")
    old = _vocab.Vocabulary.from_file(opts.extend)
    if opts.bert_config_file:        # a wrong config fails before the corpus is read
        vocab_extension.read_config(opts.bert_config_file, len(old))
    vocab_extension.check_case(old.id_to_token, opts.do_lower_case, opts.extend)
    counts = vocab_learning.count_words(paths, opts.do_lower_case, opts.max_lines or None)
    ext = vocab_extension.extend_vocab(
        old.id_to_token, counts, opts.num_new_tokens, allow_growth=opts.allow_growth,
        min_count=opts.min_count, max_token_length=opts.max_token_length, source=opts.extend)
    vocab_extension.log_extension(ext, opts.extend)
    if opts.bert_config_file:
        vocab_extension.write_config_copy(opts.bert_config_file, opts.output_config_file,
                                          len(ext.tokens), len(old))
    elif ext.grew:
        logging.warning("the vocabulary grew to %d tokens: the model's config needs "
                        "vocab_size >= %d (--bert_config_file/--output_config_file write one)",
                        len(ext.tokens), len(ext.tokens))
    vocab_learning.write_vocab(ext.tokens, opts.output_file)
    logging.info("wrote %d tokens to %s", len(ext.tokens), opts.output_file)


def run(opts, given=()):
    """Checks opts (`given`: the flags the command line gave), then learns or extends."""
    opts.validate(given)
    paths = input_paths(opts.input_file)
    if opts.extend:
        extend(opts, paths)
    else:
        learn(opts, paths)
