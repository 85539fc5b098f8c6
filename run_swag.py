#!/usr/bin/env python3
"""BERT fine-tuning for multiple choice on SWAG (rowanz/swagaf's train.csv/val.csv/test.csv or
train_full.csv/val_full.csv layouts; accuracy).

  python run_swag.py --train_file=swagaf/data/train.csv --eval_file=swagaf/data/val.csv \
      --init_checkpoint=$BERT/bert_model.ckpt --vocab_file=$BERT/vocab.txt \
      --bert_config_file=$BERT/bert_config.json --do_train --do_eval --max_seq_length=128 \
      --train_batch_size=16 --learning_rate=2e-5 --num_train_epochs=3 --output_dir=/tmp/swag

--export_dir writes the model as a SavedModel for TensorFlow Serving (a context and its endings
in, one score per ending out).
"""

from absl import flags

from bert_tf import cli
from bert_tf import flags as common

FLAGS = flags.FLAGS

common.define_finetune_flags(
    train_batch_size=16, learning_rate=2e-5,
    helps={"max_seq_length": "Maximum length of each (context, ending) pair after WordPiece "
                             "tokenization; longer pairs are truncated.",
           "do_eval": "Whether to run eval on --eval_file.",
           "do_predict": "Whether to predict --predict_file.",
           "train_batch_size": "Total batch size for training (examples)."})
flags.DEFINE_string("train_file", None, "SWAG csv to train on (either layout, labelled).")
flags.DEFINE_string("eval_file", None, "Labelled SWAG csv to evaluate on (--do_eval).")
flags.DEFINE_string("predict_file", None, "SWAG csv to predict (--do_predict), e.g. test.csv.")
flags.DEFINE_integer("num_choices", 4,
                     "train_full.csv layout: the gold ending plus this many - 1 distractors "
                     "(2-5). The train.csv layout always has 4.")
flags.DEFINE_integer("max_train_examples", 0, "Use only the first N training rows (0: all).")
flags.DEFINE_integer("max_eval_examples", 0, "Use only the first N eval rows (0: all).")
flags.DEFINE_bool("skip_bad_rows", False,
                  "Skip malformed rows (and count them) instead of stopping at the first.")


def main(argv):
    del argv
    from bert_tf.jobs.common import summary_lines
    from bert_tf.jobs.swag import SwagOptions, run
    common.setup_logging(FLAGS.output_dir)
    opts = SwagOptions(**common.finetune_options(
        "train_file", "eval_file", "predict_file", "num_choices", "max_train_examples",
        "max_eval_examples", "skip_bad_rows"))
    result = run(opts, common.runtime_from_flags())
    print("\n".join(summary_lines(result, ("eval_accuracy", "eval_loss"), str)))


if __name__ == "__main__":
    flags.mark_flag_as_required("output_dir")
    cli.run(main)
