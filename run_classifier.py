#!/usr/bin/env python3
"""BERT fine-tuning for sentence(-pair) classification and regression: GLUE, XNLI or your own
TSV/CSV/JSONL files (google-research/bert's flags, plus tensorflow-datasets input, periodic
evaluation with the best checkpoint kept, early stopping, distribution, mixed precision, XLA).

  python run_classifier.py --task_name=MRPC --data_dir=glue_data/MRPC \
      --vocab_file=$BERT/vocab.txt --bert_config_file=$BERT/bert_config.json \
      --init_checkpoint=$BERT/bert_model.ckpt --do_train --do_eval --do_predict \
      --max_seq_length=128 --train_batch_size=32 --learning_rate=2e-5 \
      --num_train_epochs=3 --output_dir=/tmp/mrpc_output
"""

from absl import app, flags

from bert_tf import flags as common

FLAGS = flags.FLAGS

common.define_model_flags()
common.define_tpu_flags()
common.define_runtime_flags()
flags.DEFINE_string("data_dir", None, "The input data dir: the task's .tsv (or other) files.")
flags.DEFINE_string("task_name", None,
                    "The task: cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli, ax, xnli, "
                    "or generic (your own files; see the column flags).")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file the BERT model was trained on (default: vocab.txt "
                    "beside --init_checkpoint).")
flags.DEFINE_string("output_dir", None, "Where checkpoints, results and predictions go.")
flags.DEFINE_bool("do_lower_case", True,
                  "Lower-case the input (True for uncased models, False for cased ones).")
flags.DEFINE_integer("max_seq_length", 128,
                     "Maximum total input length after WordPiece tokenization; longer inputs "
                     "are truncated.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_bool("do_predict", False, "Whether to run prediction on the test set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
flags.DEFINE_float("warmup_proportion", 0.1,
                   "Proportion of training to perform linear learning rate warmup for.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000,
                     "Steps per tf.function call (and per progress line).")
# Data sources beyond google-research's.
flags.DEFINE_string("tfds_name", None,
                    "Read the task from tensorflow-datasets instead of --data_dir, e.g. "
                    "glue/mrpc (--task_name is then implied).")
flags.DEFINE_string("tfds_data_dir", None, "tensorflow-datasets data folder (TFDS default).")
flags.DEFINE_bool("tfds_download", False, "Let tensorflow-datasets download the data.")
flags.DEFINE_bool("skip_bad_rows", False,
                  "Skip malformed rows (missing columns, unknown labels, empty text) and count "
                  "them, instead of stopping with the file and line.")
flags.DEFINE_string("xnli_language", "zh", "XNLI: the language to train and evaluate on.")
flags.DEFINE_string("text_a_column", None,
                    "generic: column of the first text (header name, or 0-based position "
                    "without --has_header; JSONL: key).")
flags.DEFINE_string("text_b_column", None, "generic: column of the second text, if any.")
flags.DEFINE_string("label_column", None, "generic: column of the label.")
flags.DEFINE_string("id_column", None, "generic: column of the row id (default: row number).")
flags.DEFINE_enum("file_format", "tsv", ["tsv", "csv", "jsonl"], "generic: file format.")
flags.DEFINE_bool("has_header", True, "generic: the first line names the columns.")
flags.DEFINE_list("labels", None,
                  "generic: the label list in id order (default: sorted labels of train).")
flags.DEFINE_bool("is_regression", False, "generic: labels are numbers (MSE loss).")
flags.DEFINE_string("train_file", None, "generic: training file in data_dir (train.<fmt>).")
flags.DEFINE_string("dev_file", None, "generic: dev file in data_dir (dev.<fmt>).")
flags.DEFINE_string("test_file", None, "generic: test file in data_dir (test.<fmt>).")
# Evaluation during training.
flags.DEFINE_integer("eval_every_steps", 0,
                     "Evaluate on the dev set every this many training steps (0: never).")
flags.DEFINE_string("keep_best_metric", None,
                    "Metric that picks the best checkpoint, kept in output_dir/best/ (default: "
                    "the task's: mcc for CoLA, acc_and_f1 for MRPC/QQP, corr for STS-B, "
                    "eval_accuracy otherwise; names ending in 'loss' are minimised).")
flags.DEFINE_integer("early_stopping_patience", 0,
                     "Stop after this many evaluations without improvement (0: never).")
flags.DEFINE_bool("load_best_at_end", True,
                  "After training with --eval_every_steps, evaluate and predict with the best "
                  "checkpoint rather than the last one.")
# Input pipeline.
flags.DEFINE_bool("pad_to_max_length", False,
                  "Pad every batch to max_seq_length (fixed shapes, as on TPU). Default: pad "
                  "each batch to its longest sequence, rounded up to 16.")
flags.DEFINE_string("feature_cache_dir", None,
                    "Tokenize once into TFRecord files here and reuse them (large tasks).")

_GENERIC_FLAGS = ("text_a_column", "text_b_column", "label_column", "id_column", "labels",
                  "train_file", "dev_file", "test_file")


def processor_options():
    """Keyword arguments of the task's processor, from the generic/XNLI flags."""
    task = (FLAGS.task_name or "").strip().lower()
    if task == "generic":
        return dict(text_a_column=FLAGS.text_a_column, text_b_column=FLAGS.text_b_column,
                    label_column=FLAGS.label_column, id_column=FLAGS.id_column,
                    fmt=FLAGS.file_format, has_header=FLAGS.has_header, labels=FLAGS.labels,
                    is_regression=FLAGS.is_regression, train_file=FLAGS.train_file,
                    dev_file=FLAGS.dev_file, test_file=FLAGS.test_file)
    given = [f"--{name}" for name in _GENERIC_FLAGS if FLAGS[name].present]
    if given:
        raise ValueError(f"{', '.join(given)} only apply to --task_name=generic")
    if task == "xnli":
        return dict(language=FLAGS.xnli_language)
    return {}


def model_config():
    """--bert_config_file / --model_preset, else the config beside --init_checkpoint."""
    if not FLAGS.bert_config_file and not FLAGS.model_preset and FLAGS.init_checkpoint:
        from bert_tf.checkpoints import find_config
        return find_config(FLAGS.init_checkpoint)
    return common.config_from_flags()


def main(argv):
    del argv
    from bert_tf.jobs.classifier import ClassifierOptions, run
    common.setup_logging(FLAGS.output_dir)
    opts = ClassifierOptions(
        config=model_config(), task_name=FLAGS.task_name, output_dir=FLAGS.output_dir,
        data_dir=FLAGS.data_dir, vocab_file=FLAGS.vocab_file,
        init_checkpoint=FLAGS.init_checkpoint, do_lower_case=FLAGS.do_lower_case,
        max_seq_length=FLAGS.max_seq_length, do_train=FLAGS.do_train, do_eval=FLAGS.do_eval,
        do_predict=FLAGS.do_predict, train_batch_size=FLAGS.train_batch_size,
        eval_batch_size=FLAGS.eval_batch_size, predict_batch_size=FLAGS.predict_batch_size,
        learning_rate=FLAGS.learning_rate, num_train_epochs=FLAGS.num_train_epochs,
        warmup_proportion=FLAGS.warmup_proportion,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        iterations_per_loop=FLAGS.iterations_per_loop, tfds_name=FLAGS.tfds_name,
        tfds_data_dir=FLAGS.tfds_data_dir, tfds_download=FLAGS.tfds_download,
        skip_bad_rows=FLAGS.skip_bad_rows, processor_options=processor_options(),
        eval_every_steps=FLAGS.eval_every_steps, keep_best_metric=FLAGS.keep_best_metric,
        early_stopping_patience=FLAGS.early_stopping_patience,
        load_best_at_end=FLAGS.load_best_at_end, pad_to_max_length=FLAGS.pad_to_max_length,
        feature_cache_dir=FLAGS.feature_cache_dir, mixed_precision=FLAGS.mixed_precision,
        jit_compile=FLAGS.jit_compile, seed=FLAGS.seed)
    result = run(opts, common.runtime_from_flags())
    train, evaluation, predictions = result["train"], result["eval"], result["predict"]
    if train:
        print(f"training: step {train['step']}, loss {train.get('loss', float('nan')):.4f}"
              + (" (stopped early)" if train["stopped_early"] else "")
              + (" (preempted: rerun the same command to resume)" if train["preempted"] else ""))
    if evaluation:
        print("eval: " + ", ".join(f"{k}={evaluation[k]:.4f}" for k in sorted(evaluation)
                                   if isinstance(evaluation[k], float)))
    if predictions:
        print("predictions: " + ", ".join(sorted(predictions.values())))


if __name__ == "__main__":
    flags.mark_flag_as_required("output_dir")
    app.run(main)
