#!/usr/bin/env python3
"""SQuAD v1.1 / v2.0 fine-tuning and prediction (google-research/bert's flags and outputs), with
the official evaluation built in (--do_eval), distribution, mixed precision and XLA.

  python run_squad.py --vocab_file=$BERT_DIR/vocab.txt \
      --bert_config_file=$BERT_DIR/bert_config.json --init_checkpoint=$BERT_DIR/bert_model.ckpt \
      --do_train --train_file=train-v1.1.json --do_predict --predict_file=dev-v1.1.json \
      --do_eval --train_batch_size=12 --learning_rate=3e-5 --num_train_epochs=2.0 \
      --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad_base

Writes predictions.json, nbest_predictions.json, null_odds.json (--version_2_with_negative) and,
with --do_eval, eval_results.json (official metrics) to --output_dir; with --export_dir, a
SavedModel for TensorFlow Serving (question + context in, the best answer out).
"""

from absl import flags

from bert_tf import cli
from bert_tf import flags as common
from bert_tf.jobs.squad import SquadOptions

FLAGS = flags.FLAGS

common.define_job_flags(SquadOptions)


def main(argv):
    del argv
    from bert_tf.jobs.results import summary_lines
    from bert_tf.jobs.squad import run
    common.setup_logging(FLAGS.output_dir)
    opts = common.job_options(SquadOptions)
    result = run(opts, opts.start_runtime())
    print("\n".join(summary_lines(result, predictions=lambda predicted: (
        f"{predicted['num_examples']} questions -> {predicted['files']['predictions']}"))))


if __name__ == "__main__":
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("output_dir")
    cli.run(main)
