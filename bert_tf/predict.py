"""Predict with a fine-tuned model, without a test file: a few texts as flags, or a file of rows.

One JSON object per input row, on stdout or in --output_file (JSON lines, written atomically):

  python -m bert_tf.predict --model=serving/sst2 --text="a gripping, funny film"
  python -m bert_tf.predict --model=mrpc_output/best --task_name=MRPC \
      --text="The cat sat." --text_pair="A cat was sitting."
  python -m bert_tf.predict --model=serving/squad --question="Who wrote it?" \
      --context="The book was written by Harper Lee in 1960."
  python -m bert_tf.predict --model=serving/ner --text="John Smith flew to Paris ."
  python -m bert_tf.predict --model=serving/swag --context="She opened the door." \
      --choices="She walked in." --choices="The door ate lunch." \
      --choices="It rained fish." --choices="Tables sang."
  python -m bert_tf.predict --model=serving/sst2 --input_file=rows.jsonl \
      --output_file=predictions.jsonl
  python -m bert_tf.predict --model=tags_output/best --task=multi_label \
      --labels=LOC,MISC,ORG,PER --text="John Smith flew to Paris ."
  python -m bert_tf.predict --model=long_output/best --input_file=documents.tsv

--model is a SavedModel exported by bert_tf (a version folder, or an export_dir whose highest
version is used), which knows its task, labels and lengths; or a checkpoint (a runner's
output_dir or best/ folder, a TF1 prefix, a HuggingFace folder) with bert_config.json and
vocab.txt beside it (or --bert_config_file, --vocab_file), whose task is read from its head
(or --task), built in memory into the serving module an export would save; its input
settings not given as flags come from the run_options.json a fine-tuning run writes beside its
checkpoints. See docs/predict.md.
"""

from absl import flags

from bert_tf import cli

FLAGS = flags.FLAGS

_TASKS = ("classifier", "regression", "multi_label", "squad", "tagger", "multiple_choice")

flags.DEFINE_string("model", None,
                    "A SavedModel version folder, an export_dir of numbered versions (the "
                    "highest is used), or a checkpoint: a runner's output_dir or best/, a TF1 "
                    "prefix, a native prefix, a HuggingFace folder.")
flags.DEFINE_enum("task", None, list(_TASKS),
                  "What the model does; only for a checkpoint whose head does not say (a "
                  "SavedModel knows its task), and multi_label for a run_classifier "
                  "--multi_label checkpoint (its head is a classifier's; taken as multi_label "
                  "without this flag when the eval_results.txt beside it records a "
                  "threshold).")
flags.DEFINE_multi_string("text", None,
                          "A text to predict (repeat for several): classifier, regression, NER "
                          "(words split on whitespace); SQuAD: the question; multiple choice: "
                          "the context.")
flags.DEFINE_multi_string("text_pair", None,
                          "The second text of each --text, by position (sentence-pair "
                          "classifiers; SQuAD: the context).")
flags.DEFINE_multi_string("question", None, "SQuAD: a question (with --context).")
flags.DEFINE_multi_string("context", None,
                          "SQuAD: the passage of each --question; multiple choice: the first "
                          "sentence the --choices continue.")
flags.DEFINE_multi_string("choices", None,
                          "Multiple choice: one choice (repeat for each, in order).")
flags.DEFINE_string("input_file", None,
                    "Rows to predict instead of the text flags: JSON lines (fields text, "
                    "text_pair, question, context, choices, id) or TSV/CSV with a header "
                    "naming those fields (choices as columns choice_0, choice_1, ...).")
flags.DEFINE_string("output_file", None,
                    "Write the predictions here as JSON lines (atomically); default: stdout.")
flags.DEFINE_integer("batch_size", 32, "Rows per model call (NER: windows per call).")
flags.DEFINE_integer("doc_stride", None,
                     "Distance in WordPieces between the starts of a long text's windows. NER: "
                     "windows of whole words (default 64, as run_ner). SQuAD checkpoints: a "
                     "long context's windows (default 128). Classifier, regression and "
                     "multi_label checkpoints: read the first text in windows and combine "
                     "their logits (--window_pooling), as run_classifier --doc_stride (default: "
                     "the run's, else truncate). Checkpoints default to the run's value in the "
                     "run_options.json beside them. A SavedModel fixed it at export (except "
                     "NER's).")
flags.DEFINE_bool("version_2_with_negative", False,
                  "SQuAD 2.0 model: answer \"\" when null_score - score > "
                  "--null_score_diff_threshold, as run_squad.")
flags.DEFINE_float("null_score_diff_threshold", 0.0,
                   "SQuAD 2.0: the threshold of --version_2_with_negative.")
# Checkpoints only: a SavedModel fixed these at export.
flags.DEFINE_string("task_name", None,
                    "Checkpoints: a GLUE/XNLI task name (MRPC, SST-2, STS-B, ...): sets the "
                    "task, the labels and whether the model reads pairs.")
flags.DEFINE_list("labels", None,
                  "Checkpoints: label names in class-id order (classifier, NER; default: "
                  "label_list.txt beside the checkpoint, as run_ner writes it, or a HuggingFace "
                  "config's id2label).")
flags.DEFINE_string("bert_config_file", None,
                    "Checkpoints: the model's config (default: bert_config.json or config.json "
                    "beside it).")
flags.DEFINE_string("vocab_file", None,
                    "Checkpoints: the model's vocab.txt (default: the one beside it).")
flags.DEFINE_bool("do_lower_case", None, "Checkpoints: whether the model is uncased "
                                         "(default: the run's, else true).")
flags.DEFINE_integer("max_seq_length", None,
                     "Checkpoints: sequence length (default: the run's, else 128; SQuAD 384, as "
                     "run_squad).")
flags.DEFINE_integer("max_query_length", None,
                     "SQuAD checkpoints: question WordPieces kept (default: the run's, else "
                     "64).")
flags.DEFINE_integer("max_answer_length", None,
                     "SQuAD checkpoints: longest answer in WordPieces (default: the run's, else "
                     "30).")
flags.DEFINE_enum("window_pooling", None, ["mean", "max"],
                  "Classifier, regression and multi_label checkpoints with --doc_stride: how "
                  "the windows' logits combine (default: the run's "
                  "run_classifier --window_pooling, else mean).")
flags.DEFINE_integer("max_windows", None,
                     "Classifier, regression and multi_label checkpoints with --doc_stride: at "
                     "most this many windows per text, from its start (default: the run's, else "
                     "0: all).")
flags.DEFINE_float("multi_label_threshold", None,
                   "multi_label checkpoints: a label is selected when its probability is >= "
                   "this (default: the threshold in the eval_results.txt beside the "
                   "checkpoint, as run_classifier --multi_label tunes it, else 0.5).")


def main(argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments {' '.join(argv[1:])}: texts go in --text")
    from bert_tf import flags as common
    from bert_tf.prediction.job import PredictOptions, json_lines, run
    from bert_tf.prediction.loading import CheckpointSettings
    common.setup_logging()
    opts = PredictOptions(
        model=FLAGS.model, task=FLAGS.task, texts=FLAGS.text, text_pairs=FLAGS.text_pair,
        questions=FLAGS.question, contexts=FLAGS.context, choices=FLAGS.choices,
        input_file=FLAGS.input_file, output_file=FLAGS.output_file,
        batch_size=FLAGS.batch_size, doc_stride=FLAGS.doc_stride,
        version_2_with_negative=FLAGS.version_2_with_negative,
        null_score_diff_threshold=FLAGS.null_score_diff_threshold,
        checkpoint=CheckpointSettings(
            task_name=FLAGS.task_name, bert_config_file=FLAGS.bert_config_file,
            vocab_file=FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case,
            labels=FLAGS.labels, max_seq_length=FLAGS.max_seq_length,
            max_query_length=FLAGS.max_query_length,
            max_answer_length=FLAGS.max_answer_length,
            window_pooling=FLAGS.window_pooling, max_windows=FLAGS.max_windows,
            multi_label_threshold=FLAGS.multi_label_threshold))
    results = run(opts)
    if not FLAGS.output_file:
        print(json_lines(results), end="", flush=True)


if __name__ == "__main__":
    flags.mark_flag_as_required("model")
    cli.run(main)
