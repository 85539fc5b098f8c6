#!/usr/bin/env python3
"""Extract per-token BERT activations: google-research/bert's extract_features.py (same flags,
defaults, input and JSON-lines output), streaming and resumable, with an optional compact
.npz/.tfrecord of the same features per token or pooled per line.

  python extract_features.py --input_file=input.txt --output_file=output.jsonl \
      --vocab_file=$BERT/vocab.txt --bert_config_file=$BERT/bert_config.json \
      --init_checkpoint=$BERT/bert_model.ckpt --layers=-1,-2,-3,-4 --max_seq_length=128 \
      --batch_size=8
  # + --compact_file=features.npz --pooling=mean   (one 4H vector per line)
  # + --export_dir=serving/encoder   (the encoder as a SavedModel for TensorFlow Serving)
"""

from absl import flags

from bert_tf import cli
from bert_tf import flags as common
from bert_tf.jobs.features import FeatureOptions

FLAGS = flags.FLAGS

common.define_job_flags(FeatureOptions)


def main(argv):
    del argv
    from bert_tf.jobs.features import run
    common.setup_logging()
    opts = common.job_options(FeatureOptions)
    result = run(opts, opts.start_runtime())
    print(f"{result['lines']} lines -> " + ", ".join(
        p for p in (result["output_file"], result["compact_file"], result["export"]) if p))


if __name__ == "__main__":
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("init_checkpoint")
    cli.run(main)
