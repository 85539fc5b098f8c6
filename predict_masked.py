#!/usr/bin/env python3
"""Fill-mask: the most likely tokens, with probabilities, for each [MASK] in a text, from the
masked-LM head of a pre-trained checkpoint (a run_pretraining output_dir, google-research's
bert_model.ckpt, or a HuggingFace BertForPreTraining/BertForMaskedLM folder).

  python predict_masked.py --init_checkpoint=pretrain_out --vocab_file=vocab.txt \
      --text="the capital of [MASK] is paris ." --top_k=5
  python predict_masked.py --init_checkpoint=$BERT/bert_model.ckpt --input_file=probes.txt \
      --output_file=probes.jsonl
"""

from absl import app, flags

from bert_tf import flags as common

FLAGS = flags.FLAGS

common.define_model_flags()
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file the model was trained on (default: vocab.txt beside "
                    "--init_checkpoint).")
flags.DEFINE_multi_string("text", None, "A text with [MASK] tokens (repeat for several).")
flags.DEFINE_string("input_file", None,
                    "One text per line instead of --text (`text_a` or `text_a ||| text_b`; "
                    "blank lines are skipped).")
flags.DEFINE_string("output_file", None,
                    "Write JSON lines here (linex_index, text, tokens, masks: [{position, "
                    "predictions: [{token, token_id, probability}]}]); default: print.")
flags.DEFINE_bool("do_lower_case", True,
                  "Lower-case the input (True for uncased models, False for cased ones).")
flags.DEFINE_integer("max_seq_length", None,
                     "Maximum sequence length after tokenization (default: the model's "
                     "max_position_embeddings; batches are padded to their longest text).")
flags.DEFINE_integer("batch_size", 32, "Texts per batch.")
flags.DEFINE_integer("top_k", 5, "Predictions per [MASK].")
flags.DEFINE_bool("include_special_tokens", False,
                  "Also rank [PAD], [CLS], [SEP], [MASK], [UNK] and [unusedN].")


def model_config():
    """--bert_config_file / --model_preset, else the config beside --init_checkpoint."""
    if not FLAGS.bert_config_file and not FLAGS.model_preset and FLAGS.init_checkpoint:
        from bert_tf.checkpoints import find_config
        return find_config(FLAGS.init_checkpoint)
    return common.config_from_flags()


def main(argv):
    del argv
    from bert_tf.jobs.fill_mask import FillMaskOptions, format_result, run
    common.setup_logging()
    opts = FillMaskOptions(
        config=model_config(), init_checkpoint=FLAGS.init_checkpoint,
        vocab_file=FLAGS.vocab_file, input_file=FLAGS.input_file, texts=FLAGS.text,
        output_file=FLAGS.output_file, do_lower_case=FLAGS.do_lower_case,
        max_seq_length=FLAGS.max_seq_length, batch_size=FLAGS.batch_size, top_k=FLAGS.top_k,
        include_special_tokens=FLAGS.include_special_tokens)
    results = run(opts)
    if not FLAGS.output_file:
        for result in results:
            print(format_result(result))


if __name__ == "__main__":
    flags.mark_flag_as_required("init_checkpoint")
    app.run(main)
