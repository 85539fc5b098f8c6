#!/usr/bin/env python3
"""Masked LM + next-sentence pre-training (google-research/bert's flags, plus distribution,
mixed precision, XLA, LAMB, gradient accumulation, held-out evaluation and dynamic masking).

  python run_pretraining.py --input_file='out/*.tfrecord' --output_dir=pretrain \
      --model_preset=tiny --do_train --do_eval --train_batch_size=32 --num_train_steps=1000
"""

from absl import app, flags

from bert_tf import flags as common

FLAGS = flags.FLAGS

common.define_model_flags()
common.define_tpu_flags()
common.define_runtime_flags()
flags.DEFINE_string("input_file", None, "Input TF example files (comma-separated globs).")
flags.DEFINE_string("eval_input_file", None,
                    "Held-out files for --do_eval (default: --input_file, as the original).")
flags.DEFINE_string("output_dir", None, "Where checkpoints, summaries and results go.")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length the input files were written with.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked LM predictions per sequence.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000, "Steps per tf.function call (and per log line).")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "Optimizer.")
flags.DEFINE_integer("gradient_accumulation_steps", 1,
                     "Split each batch into this many micro-batches and sum their gradients.")
flags.DEFINE_bool("dynamic_masking", False,
                  "Input files hold unmasked sequences; mask them afresh on every read.")
flags.DEFINE_string("vocab_file", None, "Vocabulary (needed by --dynamic_masking).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability (--dynamic_masking).")
flags.DEFINE_bool("do_whole_word_mask", False, "Whole-word masking (--dynamic_masking).")
flags.DEFINE_bool("use_next_sentence", True, "Train the next-sentence head (False: MLM only).")


def main(argv):
    del argv
    from bert_tf.jobs.pretraining import PretrainingOptions, run
    common.setup_logging(FLAGS.output_dir)
    opts = PretrainingOptions(
        config=common.config_from_flags(), input_file=FLAGS.input_file,
        output_dir=FLAGS.output_dir, init_checkpoint=FLAGS.init_checkpoint,
        eval_input_file=FLAGS.eval_input_file, max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq, do_train=FLAGS.do_train,
        do_eval=FLAGS.do_eval, train_batch_size=FLAGS.train_batch_size,
        eval_batch_size=FLAGS.eval_batch_size, learning_rate=FLAGS.learning_rate,
        num_train_steps=FLAGS.num_train_steps, num_warmup_steps=FLAGS.num_warmup_steps,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        iterations_per_loop=FLAGS.iterations_per_loop, max_eval_steps=FLAGS.max_eval_steps,
        optimizer=FLAGS.optimizer, gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        dynamic_masking=FLAGS.dynamic_masking, vocab_file=FLAGS.vocab_file,
        masked_lm_prob=FLAGS.masked_lm_prob, do_whole_word_mask=FLAGS.do_whole_word_mask,
        use_next_sentence=FLAGS.use_next_sentence, mixed_precision=FLAGS.mixed_precision,
        jit_compile=FLAGS.jit_compile, seed=FLAGS.seed)
    opts.validate()
    result = run(opts, common.runtime_from_flags())
    train, evaluation = result["train"], result["eval"]
    if train:
        print(f"training: step {train['step']}, loss {train.get('loss', float('nan')):.4f}"
              + (" (preempted: rerun the same command to resume)" if train["preempted"] else ""))
    if evaluation:
        print("eval: " + ", ".join(f"{k}={evaluation[k]:.4f}" for k in sorted(evaluation)
                                   if isinstance(evaluation[k], float)))


if __name__ == "__main__":
    flags.mark_flag_as_required("output_dir")
    app.run(main)
