#!/usr/bin/env python3
"""Export a fine-tuned checkpoint as a SavedModel for TensorFlow Serving.

Writes <export_dir>/<next version>/ (saved_model.pb, variables/, assets/vocab.txt,
assets.extra/tf_serving_warmup_requests) with the signatures serving_default (raw text),
serve_features (int32 ids) and serve_examples (serialized tf.Example), for a classifier,
regression, SQuAD, tagger (NER), multiple-choice (SWAG), fill-mask or bare encoder model.

  python export_savedmodel.py --init_checkpoint=mrpc_output/best --task_name=MRPC \
      --vocab_file=uncased_L-12_H-768_A-12/vocab.txt --max_seq_length=128 \
      --export_dir=serving/mrpc
  tensorflow_model_server --rest_api_port=8501 --model_name=mrpc \
      --model_base_path=$PWD/serving/mrpc
  python export_savedmodel.py --init_checkpoint=swag_output/best --task=multiple_choice \
      --num_choices=4 --export_dir=serving/swag
  python export_savedmodel.py --init_checkpoint=pretrain_output --task=fill_mask --top_k=5 \
      --export_dir=serving/fill_mask
"""

from absl import flags

from bert_tf import cli
from bert_tf import flags as common
from bert_tf.jobs.options import EXPORT_HELP
from bert_tf.kinds import SERVED

FLAGS = flags.FLAGS

common.define_model_flags()
flags.DEFINE_string("export_dir", None,
                    "Folder of numbered versions (TF Serving's --model_base_path); the export "
                    "becomes its next version.")
flags.DEFINE_enum("task", None, list(SERVED),
                  "What the model does (optional with --task_name).")
flags.DEFINE_string("task_name", None,
                    "A GLUE/XNLI task name (MRPC, STS-B, ...): sets --task, --labels and "
                    "--text_pair.")
flags.DEFINE_list("labels", None,
                  "Label strings in class-id order (classifier, tagger, multi_label).")
flags.DEFINE_float("multi_label_threshold", None,
                   "multi_label: a label is selected when its probability is >= this (default: "
                   "the tuned threshold in the eval_results.txt beside --init_checkpoint, as "
                   "run_classifier --multi_label writes it, else 0.5).")
flags.DEFINE_bool("text_pair", None,
                  "serving_default takes text_a and text_b (default: from --task_name, "
                  "else single text).")
flags.DEFINE_string("vocab_file", None,
                    "The model's vocab.txt (default: vocab.txt beside --init_checkpoint).")
flags.DEFINE_bool("do_lower_case", True, "Whether the model is uncased.")
flags.DEFINE_integer("max_seq_length", 128,
                     "Sequence length of the raw-text and tf.Example signatures.")
flags.DEFINE_integer("max_query_length", 64, "SQuAD: question tokens kept.")
flags.DEFINE_integer("max_answer_length", 30, "SQuAD: longest answer, in WordPieces.")
flags.DEFINE_integer("doc_stride", None,
                     "SQuAD: distance between the starts of a long context's windows (default "
                     "128). Classifier, regression, multi_label: read a long first text in "
                     "windows of --max_seq_length whose starts are this many WordPieces apart "
                     "and combine their logits (--window_pooling), as run_classifier "
                     "--doc_stride (default: truncate).")
flags.DEFINE_enum("window_pooling", "mean", ["mean", "max"],
                  "With --doc_stride (classifier, regression, multi_label): how the windows' "
                  "logits combine.")
flags.DEFINE_integer("max_windows", 0,
                     "With --doc_stride (classifier, regression, multi_label): at most this many "
                     "windows per text, from its start (0: all).")
flags.DEFINE_integer("num_choices", 4, "multiple_choice: endings per request row (SWAG: 4).")
flags.DEFINE_integer("top_k", 5, "fill_mask: predictions per [MASK].")
flags.DEFINE_bool("include_special_tokens", False,
                  "fill_mask: also rank [PAD], [CLS], [SEP], [MASK], [UNK] and [unusedN].")
flags.DEFINE_integer("version", None, "Version number (default: the next free one).")
flags.DEFINE_bool("warmup", True, "Write assets.extra/tf_serving_warmup_requests.")
flags.DEFINE_enum("precision", None, ["fp32", "bf16"], EXPORT_HELP["precision"])
flags.DEFINE_bool("jit_compile", False, EXPORT_HELP["jit_compile"])
flags.DEFINE_bool("text_signatures", True,
                  "Include serving_default (raw text; needs two TensorFlow Text ops, present "
                  "in stock tensorflow_model_server). --notext_signatures exports only "
                  "core-TensorFlow signatures.")


def recorded_settings():
    """Input settings not given take the values of the run_options.json beside
    --init_checkpoint (a fine-tuning run's output_dir or best/) when that run trained the
    task exported, logged."""
    from bert_tf.checkpoints.run_options import (SETTINGS, WINDOW_SETTINGS, read_run_options,
                                                 settings_from_run)
    if not FLAGS.init_checkpoint:
        return
    task = FLAGS.task
    if task is None and FLAGS.task_name:
        from bert_tf.serving.job import task_of_name
        try:
            task = task_of_name(FLAGS.task_name)
        except ValueError:
            return                          # ExportOptions.resolve names the bad --task_name
    names = SETTINGS + WINDOW_SETTINGS + ("doc_stride",)
    record = read_run_options(FLAGS.init_checkpoint)
    taken = settings_from_run(record, {name: FLAGS[name].value for name in names
                                       if FLAGS[name].present}, task)
    for name, value in taken.items():
        FLAGS[name].value = value


def main(argv):
    del argv
    from bert_tf.serving.job import ExportOptions, run
    common.setup_logging()
    config = None
    if FLAGS.bert_config_file or FLAGS.model_preset:
        config = common.config_from_flags()
    recorded_settings()
    opts = ExportOptions(
        export_dir=FLAGS.export_dir, init_checkpoint=FLAGS.init_checkpoint, task=FLAGS.task,
        task_name=FLAGS.task_name, config=config, vocab_file=FLAGS.vocab_file,
        do_lower_case=FLAGS.do_lower_case, max_seq_length=FLAGS.max_seq_length,
        labels=FLAGS.labels, text_pair=FLAGS.text_pair,
        max_query_length=FLAGS.max_query_length, max_answer_length=FLAGS.max_answer_length,
        doc_stride=FLAGS.doc_stride, window_pooling=FLAGS.window_pooling,
        max_windows=FLAGS.max_windows,
        num_choices=FLAGS.num_choices, top_k=FLAGS.top_k,
        include_special_tokens=FLAGS.include_special_tokens, version=FLAGS.version,
        warmup=FLAGS.warmup, text_signatures=FLAGS.text_signatures,
        precision=FLAGS.precision, jit_compile=FLAGS.jit_compile,
        multi_label_threshold=FLAGS.multi_label_threshold)
    print(f"exported {run(opts)}")


if __name__ == "__main__":
    flags.mark_flags_as_required(["export_dir", "init_checkpoint"])
    cli.run(main)
