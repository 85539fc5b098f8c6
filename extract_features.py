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

FLAGS = flags.FLAGS

common.define_model_flags()
common.define_tpu_flags()
common.define_runtime_flags()
common.define_vocab_flags(
    {"vocab_file": "The vocabulary file that the BERT model was trained on (default: vocab.txt "
                   "beside --init_checkpoint).",
     "do_lower_case": "Whether to lower case the input text. Should be True for uncased models "
                      "and False for cased models."})
common.define_export_flag(
    {"export_dir": "After extracting, export the encoder for TensorFlow Serving as the next "
                   "numbered version in this folder (pooled_output and sequence_output; "
                   "text_a and text_b when the input has `a ||| b` lines)."})
flags.DEFINE_string("input_file", None,
                    "One example per line: `text_a` or `text_a ||| text_b`.")
flags.DEFINE_string("output_file", None, "JSON lines output (one line per input line).")
flags.DEFINE_string("layers", "-1,-2,-3,-4",
                    "Encoder layers to output, comma-separated (-1 is the last).")
flags.DEFINE_integer("max_seq_length", 128,
                     "The maximum total input sequence length after WordPiece tokenization; "
                     "longer sequences are truncated.")
flags.DEFINE_integer("batch_size", 32, "Batch size for predictions.")
flags.DEFINE_bool("use_one_hot_embeddings", False,
                  "Kept for compatibility with google-research's flags; has no effect.")
flags.DEFINE_string("compact_file", None,
                    "Also write the features compactly: *.npz (features [rows, D], linex_index, "
                    "layers; per token also row_splits and input_ids) or *.tfrecord (one "
                    "tf.train.Example per line). D = hidden size x number of --layers "
                    "(concatenated), or the hidden size for --pooling=pooler.")
flags.DEFINE_enum("pooling", "none", ["none", "cls", "mean", "pooler"],
                  "Compact features per token (none) or one vector per line: the [CLS] row, "
                  "the mean over the line's tokens, or the pooler output.")
flags.DEFINE_enum("compact_dtype", "float32", ["float32", "float16"],
                  "Float type of the .npz features.")


def main(argv):
    del argv
    from bert_tf.jobs.features import FeatureOptions, run
    common.setup_logging()
    opts = FeatureOptions(**common.model_options(
        "input_file", "output_file", "layers", "batch_size", "compact_file", "pooling",
        "compact_dtype"))
    result = run(opts, common.runtime_from_flags())
    print(f"{result['lines']} lines -> " + ", ".join(
        p for p in (result["output_file"], result["compact_file"], result["export"]) if p))


if __name__ == "__main__":
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("init_checkpoint")
    cli.run(main)
