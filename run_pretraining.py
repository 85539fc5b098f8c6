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
from bert_tf.options import define_flags, flag_values
from bert_tf.training.best import EvaluationOptions

FLAGS = flags.FLAGS

common.define_training_flags(
    helps={"vocab_file": "Vocabulary (needed by --dynamic_masking and --export_dir; default: "
                         "vocab.txt beside --init_checkpoint).",
           "do_lower_case": "Whether the exported model lower-cases its input (--export_dir).",
           "export_dir": "After the run, export the encoder for TensorFlow Serving as the next "
                         "numbered version in this folder (pooled_output and sequence_output "
                         "of raw text; see export_savedmodel.py).",
           "output_dir": "Where checkpoints, summaries and results go.",
           "max_seq_length": "Sequence length the input files were written with.",
           "iterations_per_loop": "Steps per tf.function call (and per log line)."})
flags.DEFINE_string("input_file", None, "Input TF example files (comma-separated globs).")
flags.DEFINE_string("eval_input_file", None,
                    "Held-out files for --do_eval (default: --input_file, as the original).")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked LM predictions per sequence.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
flags.DEFINE_bool("dynamic_masking", False,
                  "Input files hold unmasked sequences; mask them afresh on every read.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability (--dynamic_masking).")
flags.DEFINE_bool("do_whole_word_mask", False, "Whole-word masking (--dynamic_masking).")
flags.DEFINE_bool("use_next_sentence", True, "Train the next-sentence head (False: MLM only).")
define_flags(EvaluationOptions)


def main(argv):
    del argv
    from bert_tf.jobs.common import summary_lines
    from bert_tf.jobs.pretraining import PretrainingOptions, run
    common.setup_logging(FLAGS.output_dir)
    opts = PretrainingOptions(**common.training_options(
        "input_file", "eval_input_file", "max_predictions_per_seq", "num_train_steps",
        "num_warmup_steps", "max_eval_steps", "dynamic_masking", "masked_lm_prob",
        "do_whole_word_mask", "use_next_sentence"), **flag_values(EvaluationOptions))
    print("\n".join(summary_lines(run(opts, common.runtime_from_flags()))))


if __name__ == "__main__":
    flags.mark_flag_as_required("output_dir")
    cli.run(main)
