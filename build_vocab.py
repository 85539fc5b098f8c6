"""Learns a WordPiece vocabulary from text files (one text per line), laid out like the
released English BERT vocabularies ([PAD]=0, [unused*], [UNK]=100, [CLS]=101, [SEP]=102,
[MASK]=103 with the default --num_unused).

  python build_vocab.py --input_file=a.txt,b.txt --output_file=vocab.txt --vocab_size=30522
"""

import glob
import logging

from absl import flags

from bert_tf import cli

flags.DEFINE_string("input_file", None, "Comma-separated text files or glob patterns.")
flags.DEFINE_string("output_file", None, "Vocabulary file to write (written atomically).")
flags.DEFINE_integer("vocab_size", 30522, "Maximum number of tokens, reserved ones included.")
flags.DEFINE_bool("do_lower_case", True, "Count words lower-cased and accent-stripped "
                  "(for uncased models).")
flags.DEFINE_integer("num_unused", 994, "Number of [unusedN] slots (bert-base-uncased: 994).")
flags.DEFINE_integer("max_unique_chars", 1000, "Most frequent characters kept as pieces.")
flags.DEFINE_integer("max_token_length", 50, "Longest piece, in characters.")
flags.DEFINE_integer("lower_thresh", 10, "Lowest count threshold the learner searches.")
flags.DEFINE_integer("max_lines", 0, "Stop after this many lines (0: read everything).")
flags.mark_flags_as_required(["input_file", "output_file"])
FLAGS = flags.FLAGS


def main(_):
    logging.getLogger().setLevel(logging.INFO)
    from bert_tf.tokenization import vocab_learning
    paths = []
    for pattern in FLAGS.input_file.split(","):
        matches = sorted(glob.glob(pattern.strip()))
        if not matches:
            raise FileNotFoundError(f"--input_file: no file matches {pattern!r}")
        paths.extend(matches)
    counts = vocab_learning.count_words(paths, FLAGS.do_lower_case, FLAGS.max_lines or None)
    tokens = vocab_learning.learn_wordpiece_vocab(
        counts, FLAGS.vocab_size, num_unused=FLAGS.num_unused,
        max_unique_chars=FLAGS.max_unique_chars, max_token_length=FLAGS.max_token_length,
        lower_thresh=FLAGS.lower_thresh)
    vocab_learning.write_vocab(tokens, FLAGS.output_file)
    logging.info("wrote %d tokens to %s", len(tokens), FLAGS.output_file)


if __name__ == "__main__":
    cli.run(main)
