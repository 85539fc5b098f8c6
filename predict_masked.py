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
from bert_tf.jobs.fill_mask import FillMaskOptions

FLAGS = flags.FLAGS

common.define_job_flags(FillMaskOptions)


def main(argv):
    del argv
    from bert_tf.jobs.fill_mask import format_result, run
    common.setup_logging()
    opts = common.job_options(FillMaskOptions)
    results = run(opts)
    if not FLAGS.output_file:
        for result in results:
            print(format_result(result))


if __name__ == "__main__":
    flags.mark_flag_as_required("init_checkpoint")
    cli.run(main)
