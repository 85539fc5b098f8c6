"""Learns a WordPiece vocabulary from text files (one text per line), laid out like the
released English BERT vocabularies ([PAD]=0, [unused*], [UNK]=100, [CLS]=101, [SEP]=102,
[MASK]=103 with the default --num_unused), or extends an existing vocabulary with the words of
a domain corpus that it splits into several pieces, keeping every existing token's id.

  python build_vocab.py --input_file=a.txt,b.txt --output_file=vocab.txt --vocab_size=30522
  python build_vocab.py --extend=$BERT_DIR/vocab.txt --input_file=domain.txt \
      --output_file=domain_vocab.txt --num_new_tokens=500 \
      --bert_config_file=$BERT_DIR/bert_config.json --output_config_file=domain_config.json
"""

import glob
import logging

from absl import flags

from bert_tf import cli

flags.DEFINE_string("input_file", None, "Comma-separated text files or glob patterns.")
flags.DEFINE_string("output_file", None, "Vocabulary file to write (written atomically).")
flags.DEFINE_integer("vocab_size", 30522, "Maximum number of tokens, reserved ones included.")
flags.DEFINE_bool("do_lower_case", True, "Count words lower-cased and accent-stripped "
                  "(for uncased models). With --extend it must match the vocabulary's casing.")
flags.DEFINE_integer("num_unused", 994, "Number of [unusedN] slots (bert-base-uncased: 994).")
flags.DEFINE_integer("max_unique_chars", 1000, "Most frequent characters kept as pieces.")
flags.DEFINE_integer("max_token_length", 50, "Longest piece, in characters (with --extend: "
                     "longest new word).")
flags.DEFINE_integer("lower_thresh", 10, "Lowest count threshold the learner searches.")
flags.DEFINE_integer("max_lines", 0, "Stop after this many lines (0: read everything).")
# Extending an existing vocabulary.
flags.DEFINE_string("extend", None,
                    "An existing vocabulary (e.g. a released checkpoint's vocab.txt) to extend "
                    "instead of learning one: the --num_new_tokens words of --input_file that "
                    "save the most tokens (count x (pieces - 1)) among those it splits into "
                    "several pieces are added as whole words, first into its [unusedN] slots, "
                    "then appended. Every existing token keeps its id.")
flags.DEFINE_integer("num_new_tokens", None, "With --extend: how many words to add.")
flags.DEFINE_integer("min_count", 3, "With --extend: fewest occurrences of a word added.")
flags.DEFINE_bool("allow_growth", True,
                  "With --extend: append the words that do not fit into [unused] slots after "
                  "the last token (the model's vocab_size grows; new embedding rows are "
                  "initialised when the checkpoint is loaded). --noallow_growth keeps the size.")
flags.DEFINE_string("bert_config_file", None,
                    "With --extend: the model's bert_config.json or HuggingFace config.json, "
                    "copied to --output_config_file with vocab_size raised to the new size.")
flags.DEFINE_string("output_config_file", None,
                    "With --extend: where to write that copy (pass it as --bert_config_file to "
                    "the runners).")
flags.mark_flags_as_required(["input_file", "output_file"])
FLAGS = flags.FLAGS

LEARN_ONLY = ("vocab_size", "num_unused", "max_unique_chars", "lower_thresh")
EXTEND_ONLY = ("num_new_tokens", "min_count", "allow_growth", "bert_config_file",
               "output_config_file")


def input_paths(patterns):
    paths = []
    for pattern in patterns.split(","):
        matches = sorted(glob.glob(pattern.strip()))
        if not matches:
            raise FileNotFoundError(f"--input_file: no file matches {pattern!r}")
        paths.extend(matches)
    return paths


def check_mode_flags():
    """Flags of the other mode are mistakes, not silently ignored."""
    given = [name for name in (LEARN_ONLY if FLAGS.extend else EXTEND_ONLY)
             if FLAGS[name].present]
    if given:
        names = ", ".join("--" + n for n in given)
        if FLAGS.extend:
            raise ValueError(f"{names}: for learning a vocabulary, not for --extend")
        raise ValueError(f"{names}: only with --extend (extending an existing vocabulary)")
    if not FLAGS.extend:
        return
    if FLAGS.num_new_tokens is None:
        raise ValueError("--extend needs --num_new_tokens (how many words to add)")
    if FLAGS.num_new_tokens < 1:
        raise ValueError(f"--num_new_tokens must be >= 1, got {FLAGS.num_new_tokens}")
    if bool(FLAGS.bert_config_file) != bool(FLAGS.output_config_file):
        raise ValueError("--bert_config_file and --output_config_file go together")


def learn(paths):
    from bert_tf.tokenization import vocab_learning
    counts = vocab_learning.count_words(paths, FLAGS.do_lower_case, FLAGS.max_lines or None)
    tokens = vocab_learning.learn_wordpiece_vocab(
        counts, FLAGS.vocab_size, num_unused=FLAGS.num_unused,
        max_unique_chars=FLAGS.max_unique_chars, max_token_length=FLAGS.max_token_length,
        lower_thresh=FLAGS.lower_thresh)
    vocab_learning.write_vocab(tokens, FLAGS.output_file)
    logging.info("wrote %d tokens to %s", len(tokens), FLAGS.output_file)


def extend(paths):
    from bert_tf import fileio
    from bert_tf.tokenization import vocab as _vocab, vocab_extension, vocab_learning
    if not fileio.exists(FLAGS.extend):
        raise FileNotFoundError(f"--extend: vocabulary file {FLAGS.extend} does not exist")
    old = _vocab.Vocabulary.from_file(FLAGS.extend)
    if FLAGS.bert_config_file:        # a wrong config fails before the corpus is read
        vocab_extension.read_config(FLAGS.bert_config_file, len(old))
    vocab_extension.check_case(old.id_to_token, FLAGS.do_lower_case, FLAGS.extend)
    counts = vocab_learning.count_words(paths, FLAGS.do_lower_case, FLAGS.max_lines or None)
    ext = vocab_extension.extend_vocab(
        old.id_to_token, counts, FLAGS.num_new_tokens, allow_growth=FLAGS.allow_growth,
        min_count=FLAGS.min_count, max_token_length=FLAGS.max_token_length, source=FLAGS.extend)
    vocab_extension.log_extension(ext, FLAGS.extend)
    if FLAGS.bert_config_file:
        vocab_extension.write_config_copy(FLAGS.bert_config_file, FLAGS.output_config_file,
                                          len(ext.tokens), len(old))
    elif ext.grew:
        logging.warning("the vocabulary grew to %d tokens: the model's config needs "
                        "vocab_size >= %d (--bert_config_file/--output_config_file write one)",
                        len(ext.tokens), len(ext.tokens))
    vocab_learning.write_vocab(ext.tokens, FLAGS.output_file)
    logging.info("wrote %d tokens to %s", len(ext.tokens), FLAGS.output_file)


def main(_):
    logging.getLogger().setLevel(logging.INFO)
    check_mode_flags()
    paths = input_paths(FLAGS.input_file)
    if FLAGS.extend:
        extend(paths)
    else:
        learn(paths)


if __name__ == "__main__":
    cli.run(main)
