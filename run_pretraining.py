#!/usr/bin/env python3
"""Masked LM + next-sentence pre-training (google-research/bert's flags, plus distribution,
mixed precision, XLA, LAMB, gradient accumulation, held-out evaluation and dynamic masking).

  python run_pretraining.py --input_file='out/*.tfrecord' --output_dir=pretrain \
      --model_preset=tiny --do_train --do_eval --train_batch_size=32 --num_train_steps=1000

--export_dir (with --vocab_file) writes the encoder as a SavedModel for TensorFlow Serving.
--eval_every_steps=N evaluates on --eval_input_file every N steps and keeps the weights with the
lowest held-out masked_lm_loss in output_dir/best/.
"""

from absl import flags

from bert_tf import cli
from bert_tf import flags as common
from bert_tf.jobs.pretraining import PretrainingOptions

FLAGS = flags.FLAGS

common.define_job_flags(PretrainingOptions)


def main(argv):
    del argv
    from bert_tf.jobs.results import summary_lines
    from bert_tf.jobs.pretraining import run
    common.setup_logging(FLAGS.output_dir)
    opts = common.job_options(PretrainingOptions)
    print("\n".join(summary_lines(run(opts, opts.start_runtime()))))


if __name__ == "__main__":
    flags.mark_flag_as_required("output_dir")
    cli.run(main)
