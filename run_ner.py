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
weights (entity f1) in output_dir/best/. --teacher_checkpoint=<a run_ner output_dir> trains
this run as a student of that run's tagger (with --student_layers=0,2,4 of its checkpoint, a
smaller tagger).
"""

from absl import flags

from bert_tf import cli
from bert_tf import flags as common
from bert_tf.jobs.ner import NerOptions

FLAGS = flags.FLAGS

common.define_job_flags(NerOptions)


def main(argv):
    del argv
    from bert_tf.jobs.results import summary_lines
    from bert_tf.jobs.ner import run
    common.setup_logging(FLAGS.output_dir)
    opts = common.job_options(NerOptions)
    result = run(opts, opts.start_runtime())
    print("\n".join(summary_lines(result, ("precision", "recall", "f1", "accuracy", "loss"),
                                  lambda predicted: predicted["predictions"])))


if __name__ == "__main__":
    flags.mark_flag_as_required("output_dir")
    cli.run(main)
