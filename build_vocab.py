"""Learns a WordPiece vocabulary from text files (one text per line), laid out like the
released English BERT vocabularies ([PAD]=0, [unused*], [UNK]=100, [CLS]=101, [SEP]=102,
[MASK]=103 with the default --num_unused), or extends an existing vocabulary with the words of
a domain corpus that it splits into several pieces, keeping every existing token's id.

  python build_vocab.py --input_file=a.txt,b.txt --output_file=vocab.txt --vocab_size=30522
  python build_vocab.py --extend=$BERT_DIR/vocab.txt --input_file=domain.txt \
      --output_file=domain_vocab.txt --num_new_tokens=500 \
      --bert_config_file=$BERT_DIR/bert_config.json --output_config_file=domain_config.json
"""

import logging

from absl import flags

from bert_tf import cli
from bert_tf.jobs.vocab import VocabOptions
from bert_tf.options import define_flags, flag_values

define_flags(VocabOptions)
flags.mark_flags_as_required(["input_file", "output_file"])
FLAGS = flags.FLAGS


def main(_):
    from bert_tf.jobs.vocab import run
    logging.getLogger().setLevel(logging.INFO)
    values = flag_values(VocabOptions)
    run(VocabOptions(**values), given=[name for name in values if FLAGS[name].present])


if __name__ == "__main__":
    cli.run(main)
