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

FLAGS = flags.FLAGS

common.define_finetune_flags(
    max_seq_length=384, eval_batch_size=False,
    helps={"vocab_file": "The vocabulary file that the BERT model was trained on.",
           "output_dir": "Where checkpoints, features, predictions and results are written.",
           "max_seq_length": "Maximum total input length after WordPiece tokenization; longer "
                             "documents are split into windows, shorter ones padded.",
           "do_predict": "Whether to run prediction on --predict_file.",
           "do_eval": "Score the predictions with the official SQuAD metrics (needs "
                      "--do_predict and answers in --predict_file): eval_results.json and "
                      "TensorBoard.",
           "predict_batch_size": "Total batch size for predictions."})
flags.DEFINE_string("train_file", None, "SQuAD json for training, e.g. train-v1.1.json.")
flags.DEFINE_string("predict_file", None, "SQuAD json for predictions, e.g. dev-v1.1.json.")
flags.DEFINE_integer("doc_stride", 128, "Distance between the starts of consecutive windows.")
flags.DEFINE_integer("max_query_length", 64,
                     "Maximum question length in tokens; longer questions are truncated.")
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
flags.DEFINE_enum("epochs_over", "examples", ["examples", "features"],
                  "What --num_train_epochs counts: questions (google-research: steps = "
                  "examples / batch x epochs, fewer passes than epochs when contexts span several "
                  "windows) or windowed features (HuggingFace: full passes over every window).")
flags.DEFINE_bool("skip_bad_examples", False,
                  "Skip (and count) malformed questions instead of stopping with an error.")


def main(argv):
    del argv
    from bert_tf.jobs.common import summary_lines
    from bert_tf.jobs.squad import SquadOptions, run
    common.setup_logging(FLAGS.output_dir)
    opts = SquadOptions(**common.finetune_options(
        "train_file", "predict_file", "doc_stride", "max_query_length", "n_best_size",
        "max_answer_length", "verbose_logging", "version_2_with_negative",
        "null_score_diff_threshold", "skip_bad_examples", "epochs_over"))
    result = run(opts, common.runtime_from_flags())
    print("\n".join(summary_lines(result, predictions=lambda predicted: (
        f"{predicted['num_examples']} questions -> {predicted['files']['predictions']}"))))


if __name__ == "__main__":
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("output_dir")
    cli.run(main)
