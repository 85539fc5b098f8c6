#!/usr/bin/env python3
"""SQuAD v1.1 / v2.0 fine-tuning and prediction (google-research/bert's flags and outputs), with
the official evaluation built in (--do_eval), distribution, mixed precision and XLA.

  python run_squad.py --vocab_file=$BERT_DIR/vocab.txt \
      --bert_config_file=$BERT_DIR/bert_config.json --init_checkpoint=$BERT_DIR/bert_model.ckpt \
      --do_train --train_file=train-v1.1.json --do_predict --predict_file=dev-v1.1.json \
      --do_eval --train_batch_size=12 --learning_rate=3e-5 --num_train_epochs=2.0 \
      --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad_base

Writes predictions.json, nbest_predictions.json, null_odds.json (--version_2_with_negative) and,
with --do_eval, eval_results.json (official metrics) to --output_dir.
"""

from absl import app, flags

from bert_tf import flags as common

FLAGS = flags.FLAGS

common.define_model_flags()
common.define_tpu_flags()
common.define_runtime_flags()
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_string("output_dir", None,
                    "Where checkpoints, features, predictions and results are written.")
flags.DEFINE_string("train_file", None, "SQuAD json for training, e.g. train-v1.1.json.")
flags.DEFINE_string("predict_file", None, "SQuAD json for predictions, e.g. dev-v1.1.json.")
flags.DEFINE_bool("do_lower_case", True,
                  "Lower case the input text (True for uncased models, False for cased ones).")
flags.DEFINE_integer("max_seq_length", 384,
                     "Maximum total input length after WordPiece tokenization; longer "
                     "documents are split into windows, shorter ones padded.")
flags.DEFINE_integer("doc_stride", 128, "Distance between the starts of consecutive windows.")
flags.DEFINE_integer("max_query_length", 64,
                     "Maximum question length in tokens; longer questions are truncated.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_predict", False, "Whether to run prediction on --predict_file.")
flags.DEFINE_bool("do_eval", False,
                  "Score the predictions with the official SQuAD metrics (needs --do_predict "
                  "and answers in --predict_file): eval_results.json and TensorBoard.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predictions.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
flags.DEFINE_float("warmup_proportion", 0.1,
                   "Proportion of training to perform linear learning rate warmup for.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000,
                     "Steps per tf.function call (and per progress line).")
flags.DEFINE_integer("n_best_size", 20,
                     "Number of n-best predictions to keep per question in "
                     "nbest_predictions.json.")
flags.DEFINE_integer("max_answer_length", 30,
                     "Maximum length of a predicted answer in WordPieces.")
flags.DEFINE_bool("verbose_logging", False,
                  "Log more features and the cases where an answer could not be mapped back to "
                  "the original text.")
flags.DEFINE_bool("version_2_with_negative", False,
                  "SQuAD 2.0: some questions have no answer in the context.")
flags.DEFINE_float("null_score_diff_threshold", 0.0,
                   "SQuAD 2.0: predict no answer when null score - best non-null score exceeds "
                   "this.")
flags.DEFINE_bool("skip_bad_examples", False,
                  "Skip (and count) malformed questions instead of stopping with an error.")
flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "Optimizer.")
flags.DEFINE_integer("gradient_accumulation_steps", 1,
                     "Split each batch into this many micro-batches and sum their gradients.")


def main(argv):
    del argv
    from bert_tf.jobs.squad import SquadOptions, run
    common.setup_logging(FLAGS.output_dir)
    opts = SquadOptions(
        config=common.config_from_flags(), vocab_file=FLAGS.vocab_file,
        output_dir=FLAGS.output_dir, train_file=FLAGS.train_file,
        predict_file=FLAGS.predict_file, init_checkpoint=FLAGS.init_checkpoint,
        do_lower_case=FLAGS.do_lower_case, max_seq_length=FLAGS.max_seq_length,
        doc_stride=FLAGS.doc_stride, max_query_length=FLAGS.max_query_length,
        do_train=FLAGS.do_train, do_predict=FLAGS.do_predict, do_eval=FLAGS.do_eval,
        train_batch_size=FLAGS.train_batch_size, predict_batch_size=FLAGS.predict_batch_size,
        learning_rate=FLAGS.learning_rate, num_train_epochs=FLAGS.num_train_epochs,
        warmup_proportion=FLAGS.warmup_proportion,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        iterations_per_loop=FLAGS.iterations_per_loop, n_best_size=FLAGS.n_best_size,
        max_answer_length=FLAGS.max_answer_length, verbose_logging=FLAGS.verbose_logging,
        version_2_with_negative=FLAGS.version_2_with_negative,
        null_score_diff_threshold=FLAGS.null_score_diff_threshold,
        skip_bad_examples=FLAGS.skip_bad_examples, optimizer=FLAGS.optimizer,
        gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        mixed_precision=FLAGS.mixed_precision, jit_compile=FLAGS.jit_compile, seed=FLAGS.seed)
    opts.validate()
    result = run(opts, common.runtime_from_flags())
    train, predicted, evaluation = result["train"], result["predict"], result["eval"]
    if train:
        loss = f", loss {train['loss']:.4f}" if "loss" in train else ""
        print(f"training: step {train['step']}{loss}"
              + (" (preempted: rerun the same command to resume)" if train["preempted"] else ""))
    if predicted:
        print(f"predictions: {predicted['num_examples']} questions -> "
              f"{predicted['files']['predictions']}")
    if evaluation:
        print("eval: " + ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                                   for k, v in evaluation.items()))


if __name__ == "__main__":
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("output_dir")
    app.run(main)
