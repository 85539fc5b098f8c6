#!/usr/bin/env python3
"""BERT fine-tuning for sentence(-pair) classification and regression: GLUE, XNLI or your own
TSV/CSV/JSONL files (google-research/bert's flags, plus tensorflow-datasets input, periodic
evaluation with the best checkpoint kept, early stopping, distribution, mixed precision, XLA).

  python run_classifier.py --task_name=MRPC --data_dir=glue_data/MRPC \
      --vocab_file=$BERT/vocab.txt --bert_config_file=$BERT/bert_config.json \
      --init_checkpoint=$BERT/bert_model.ckpt --do_train --do_eval --do_predict \
      --max_seq_length=128 --train_batch_size=32 --learning_rate=2e-5 \
      --num_train_epochs=3 --output_dir=/tmp/mrpc_output --export_dir=/tmp/mrpc_serving

--export_dir writes the model evaluated and predicted with (the best one with --eval_every_steps
and --load_best_at_end) as a SavedModel for TensorFlow Serving: the task's labels, text pairs
except for CoLA, SST-2 and generic tasks without --text_b_column, a score for STS-B.
"""

from absl import flags

from bert_tf import cli
from bert_tf import flags as common

FLAGS = flags.FLAGS

common.define_finetune_flags()
flags.DEFINE_string("data_dir", None, "The input data dir: the task's .tsv (or other) files.")
flags.DEFINE_string("task_name", None,
                    "The task: cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli, ax, xnli, "
                    "or generic (your own files; see the column flags).")
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
# Input pipeline.
flags.DEFINE_bool("pad_to_max_length", False,
                  "Pad every batch to max_seq_length (fixed shapes, as on TPU). Default: pad "
                  "each batch to its longest sequence, rounded up to 16.")
flags.DEFINE_string("feature_cache_dir", None,
                    "Tokenize once into TFRecord files here and reuse them (large tasks).")

# Every option() field of ClassifierOptions beyond FinetuneOptions' (which
# define_finetune_flags() defines) becomes a flag here, with the help text declared there.
from bert_tf.jobs.classifier import ClassifierOptions  # noqa: E402
from bert_tf.jobs.finetune import FinetuneOptions  # noqa: E402
from bert_tf.options import define_flags, flag_fields, flag_values  # noqa: E402

_OWN_OPTIONS = [f.name for f in flag_fields(ClassifierOptions)
                if f.name not in {g.name for g in flag_fields(FinetuneOptions)}]
define_flags(ClassifierOptions, _OWN_OPTIONS)

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


def main(argv):
    del argv
    from bert_tf.jobs.classifier import run
    from bert_tf.jobs.common import summary_lines
    common.setup_logging(FLAGS.output_dir)
    opts = ClassifierOptions(**common.finetune_options(
        "task_name", "data_dir", "tfds_name", "tfds_data_dir", "tfds_download", "skip_bad_rows",
        "pad_to_max_length", "feature_cache_dir"), processor_options=processor_options(),
        **flag_values(ClassifierOptions, _OWN_OPTIONS))
    result = run(opts, common.runtime_from_flags())
    print("\n".join(summary_lines(result, predictions=lambda predicted: ", ".join(
        sorted(predicted.values())))))


if __name__ == "__main__":
    flags.mark_flag_as_required("output_dir")
    cli.run(main)
