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
from bert_tf.jobs.swag import SwagOptions

FLAGS = flags.FLAGS

common.define_job_flags(SwagOptions)


def main(argv):
    del argv
    from bert_tf.jobs.results import summary_lines
    from bert_tf.jobs.swag import run
    common.setup_logging(FLAGS.output_dir)
    opts = common.job_options(SwagOptions)
    result = run(opts, opts.start_runtime())
    print("\n".join(summary_lines(result, ("eval_accuracy", "eval_loss"), str)))


if __name__ == "__main__":
    flags.mark_flag_as_required("output_dir")
    cli.run(main)
