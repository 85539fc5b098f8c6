#!/usr/bin/env python3
"""Fill-mask: the most likely tokens, with probabilities, for each [MASK] in a text, from the
masked-LM head of a pre-trained checkpoint (a run_pretraining output_dir, google-research's
bert_model.ckpt, or a HuggingFace BertForPreTraining/BertForMaskedLM folder).

  python predict_masked.py --init_checkpoint=pretrain_out --vocab_file=vocab.txt \
      --text="the capital of [MASK] is paris ." --top_k=5
  python predict_masked.py --init_checkpoint=$BERT/bert_model.ckpt --input_file=probes.txt \
      --output_file=probes.jsonl
  python predict_masked.py --init_checkpoint=pretrain_out --vocab_file=vocab.txt \
      --export_dir=serving/fill_mask --top_k=5
"""

from absl import flags

from bert_tf import cli
from bert_tf import flags as common

FLAGS = flags.FLAGS

common.define_model_flags()
common.define_vocab_flags(
    {"vocab_file": "The vocabulary file the model was trained on (default: vocab.txt beside "
                   "--init_checkpoint)."})
common.define_export_flag(
    {"export_dir": "Also export the model for TensorFlow Serving as the next numbered version "
                   "in this folder (text with [MASK] tokens in, the --top_k tokens and "
                   "probabilities of each mask out); alone, without --text/--input_file, "
                   "only exports."})
flags.DEFINE_multi_string("text", None, "A text with [MASK] tokens (repeat for several).")
flags.DEFINE_string("input_file", None,
                    "One text per line instead of --text (`text_a` or `text_a ||| text_b`; "
                    "blank lines are skipped).")
flags.DEFINE_string("output_file", None,
                    "Write JSON lines here (linex_index, text, tokens, masks: [{position, "
                    "predictions: [{token, token_id, probability}]}]); default: print.")
flags.DEFINE_integer("max_seq_length", None,
                     "Maximum sequence length after tokenization (default: the model's "
                     "max_position_embeddings; batches are padded to their longest text).")
flags.DEFINE_integer("batch_size", 32, "Texts per batch.")
flags.DEFINE_integer("top_k", 5, "Predictions per [MASK].")
flags.DEFINE_bool("include_special_tokens", False,
                  "Also rank [PAD], [CLS], [SEP], [MASK], [UNK] and [unusedN].")


def main(argv):
    del argv
    from bert_tf.jobs.fill_mask import FillMaskOptions, format_result, run
    common.setup_logging()
    opts = FillMaskOptions(**common.model_options(
        "input_file", "output_file", "batch_size", "top_k", "include_special_tokens"),
        texts=FLAGS.text)
    results = run(opts)
    if not FLAGS.output_file:
        for result in results:
            print(format_result(result))


if __name__ == "__main__":
    flags.mark_flag_as_required("init_checkpoint")
    cli.run(main)
