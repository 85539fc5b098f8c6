#!/usr/bin/env python3
"""BERT fine-tuning for named-entity recognition on CoNLL-2003-style files (IOB1 or BIO tags,
learnt as BIO, first-WordPiece labelling, windows for long inputs, conlleval entity scores).

  python run_ner.py --train_file=conll2003/eng.train --eval_file=conll2003/eng.testa \
      --predict_file=conll2003/eng.testb --init_checkpoint=$BERT/bert_model.ckpt \
      --vocab_file=$BERT/vocab.txt --bert_config_file=$BERT/bert_config.json \
      --do_lower_case=False --do_train --do_eval --do_predict --max_seq_length=128 \
      --train_batch_size=32 --learning_rate=5e-5 --num_train_epochs=3 --output_dir=/tmp/ner
"""

from absl import app, flags

from bert_tf import flags as common

FLAGS = flags.FLAGS

common.define_model_flags()
common.define_tpu_flags()
common.define_runtime_flags()
flags.DEFINE_string("train_file", None, "CoNLL file to train on (word first, tag last).")
flags.DEFINE_string("eval_file", None, "Tagged CoNLL file to evaluate on (--do_eval).")
flags.DEFINE_string("predict_file", None,
                    "CoNLL file to tag (--do_predict); words only, or with tags to be scored.")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file the BERT model was trained on (default: vocab.txt "
                    "beside --init_checkpoint).")
flags.DEFINE_string("output_dir", None, "Where checkpoints, results and predictions go.")
flags.DEFINE_bool("do_lower_case", True,
                  "Lower-case the input (True for uncased models, False for cased ones).")
flags.DEFINE_integer("max_seq_length", 128,
                     "WordPieces per window including [CLS] and [SEP]; longer inputs are split "
                     "into overlapping windows.")
flags.DEFINE_integer("doc_stride", 64,
                     "How far (in WordPieces, at most) each window starts after the previous "
                     "one when an input is split (>= max_seq_length - 2: no overlap).")
flags.DEFINE_enum("context", "sentence", ["sentence", "document"],
                  "What one input holds: a sentence, or a whole -DOCSTART- document (the "
                  "paper's document context).")
flags.DEFINE_list("labels", None,
                  "The label list in the model's output order (default: from output_dir or "
                  "the training file: O, then B-/I- of each type in sorted order).")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on --eval_file.")
flags.DEFINE_bool("do_predict", False, "Whether to tag --predict_file.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
flags.DEFINE_float("warmup_proportion", 0.1,
                   "Proportion of training to perform linear learning rate warmup for.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000,
                     "Steps per tf.function call (and per progress line).")


def model_config():
    """--bert_config_file / --model_preset, else the config beside --init_checkpoint."""
    if not FLAGS.bert_config_file and not FLAGS.model_preset and FLAGS.init_checkpoint:
        from bert_tf.checkpoints import find_config
        return find_config(FLAGS.init_checkpoint)
    return common.config_from_flags()


def main(argv):
    del argv
    from bert_tf.jobs.ner import NerOptions, run
    common.setup_logging(FLAGS.output_dir)
    opts = NerOptions(
        config=model_config(), output_dir=FLAGS.output_dir, vocab_file=FLAGS.vocab_file,
        train_file=FLAGS.train_file, eval_file=FLAGS.eval_file,
        predict_file=FLAGS.predict_file, init_checkpoint=FLAGS.init_checkpoint,
        do_lower_case=FLAGS.do_lower_case, max_seq_length=FLAGS.max_seq_length,
        doc_stride=FLAGS.doc_stride, context=FLAGS.context, labels=FLAGS.labels,
        do_train=FLAGS.do_train, do_eval=FLAGS.do_eval, do_predict=FLAGS.do_predict,
        train_batch_size=FLAGS.train_batch_size, eval_batch_size=FLAGS.eval_batch_size,
        predict_batch_size=FLAGS.predict_batch_size, learning_rate=FLAGS.learning_rate,
        num_train_epochs=FLAGS.num_train_epochs, warmup_proportion=FLAGS.warmup_proportion,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        iterations_per_loop=FLAGS.iterations_per_loop, mixed_precision=FLAGS.mixed_precision,
        jit_compile=FLAGS.jit_compile, seed=FLAGS.seed)
    result = run(opts, common.runtime_from_flags())
    train, evaluation, predictions = result["train"], result["eval"], result["predict"]
    if train:
        print(f"training: step {train['step']}, loss {train.get('loss', float('nan')):.4f}"
              + (" (preempted: rerun the same command to resume)" if train["preempted"] else ""))
    if evaluation:
        print("eval: " + ", ".join(f"{k}={evaluation[k]:.4f}" for k in
                                   ("precision", "recall", "f1", "accuracy", "loss")))
    if predictions:
        print(f"predictions: {predictions['predictions']}")


if __name__ == "__main__":
    flags.mark_flag_as_required("output_dir")
    app.run(main)
