#!/usr/bin/env python3
"""BERT fine-tuning for named-entity recognition on CoNLL-2003-style files (IOB1 or BIO tags,
learnt as BIO, first-WordPiece labelling, windows for long inputs, conlleval entity scores).

  python run_ner.py --train_file=conll2003/eng.train --eval_file=conll2003/eng.testa \
      --predict_file=conll2003/eng.testb --init_checkpoint=$BERT/bert_model.ckpt \
      --vocab_file=$BERT/vocab.txt --bert_config_file=$BERT/bert_config.json \
      --do_lower_case=False --do_train --do_eval --do_predict --max_seq_length=128 \
      --train_batch_size=32 --learning_rate=5e-5 --num_train_epochs=3 --output_dir=/tmp/ner

--export_dir writes the tagger as a SavedModel for TensorFlow Serving (per-token labels with
byte offsets of raw text). --class_weights=auto weights each word's loss against label
imbalance; --eval_every_steps=N evaluates on --eval_file every N steps and keeps the best
weights (entity f1) in output_dir/best/.
"""

from absl import flags

from bert_tf import cli
from bert_tf import flags as common
from bert_tf.options import define_flags, flag_values
from bert_tf.training.class_weights import ClassWeightOptions

FLAGS = flags.FLAGS

common.define_finetune_flags(
    helps={"max_seq_length": "WordPieces per window including [CLS] and [SEP]; longer inputs "
                             "are split into overlapping windows.",
           "do_eval": "Whether to run eval on --eval_file.",
           "do_predict": "Whether to tag --predict_file."})
flags.DEFINE_string("train_file", None, "CoNLL file to train on (word first, tag last).")
flags.DEFINE_string("eval_file", None, "Tagged CoNLL file to evaluate on (--do_eval).")
flags.DEFINE_string("predict_file", None,
                    "CoNLL file to tag (--do_predict); words only, or with tags to be scored.")
flags.DEFINE_integer("doc_stride", 64,
                     "How far (in WordPieces, at most) each window starts after the previous "
                     "one when an input is split (>= max_seq_length - 2: no overlap).")
flags.DEFINE_enum("context", "sentence", ["sentence", "document"],
                  "What one input holds: a sentence, or a whole -DOCSTART- document (the "
                  "paper's document context).")
flags.DEFINE_list("labels", None,
                  "The label list in the model's output order (default: from output_dir or "
                  "the training file: O, then B-/I- of each type in sorted order).")
define_flags(ClassWeightOptions)


def main(argv):
    del argv
    from bert_tf.jobs.common import summary_lines
    from bert_tf.jobs.ner import NerOptions, run
    common.setup_logging(FLAGS.output_dir)
    opts = NerOptions(**common.finetune_options(
        "train_file", "eval_file", "predict_file", "doc_stride", "context", "labels"),
        **flag_values(ClassWeightOptions))
    result = run(opts, common.runtime_from_flags())
    print("\n".join(summary_lines(result, ("precision", "recall", "f1", "accuracy", "loss"),
                                  lambda predicted: predicted["predictions"])))


if __name__ == "__main__":
    flags.mark_flag_as_required("output_dir")
    cli.run(main)
