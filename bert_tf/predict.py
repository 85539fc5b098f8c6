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
checkpoints. See docs/predict.md. With --beam_pipeline_options (a SavedModel, --input_file and
--output_file) the rows are predicted by an Apache Beam pipeline (docs/scale.md).
"""

from absl import flags

from bert_tf import cli
from bert_tf.jobs.predict import PredictOptions
from bert_tf.options import define_flags, flag_values
from bert_tf.prediction.loading import CheckpointSettings

FLAGS = flags.FLAGS

define_flags(PredictOptions)
define_flags(CheckpointSettings)     # checkpoints only: a SavedModel fixed these at export


def main(argv):
    if len(argv) > 1:
        raise ValueError(f"unexpected arguments {' '.join(argv[1:])}: texts go in --text")
    from bert_tf import flags as common
    from bert_tf.jobs.predict import json_lines, run
    common.setup_logging()
    opts = PredictOptions(checkpoint=CheckpointSettings(**flag_values(CheckpointSettings)),
                          **flag_values(PredictOptions))
    if opts.beam_pipeline_options is not None:
        from bert_tf.beam.prediction import predict_on_beam
        predict_on_beam(opts)
        return
    results = run(opts)
    if not FLAGS.output_file:
        print(json_lines(results), end="", flush=True)


if __name__ == "__main__":
    flags.mark_flag_as_required("model")
    cli.run(main)
