"""Creates masked-LM / next-sentence TFRecords for BERT pre-training from raw text.

Drop-in for google-research/bert's create_pretraining_data.py (same flags, input format and
TFRecord schema), parallel and streaming: memory is bounded by --shard_size_mb per worker, and a
rerun with the same arguments resumes or skips finished work. See bert_tf/data/pretraining/job.py.
"""

from absl import flags, logging

from bert_tf import cli

FLAGS = flags.FLAGS

flags.DEFINE_string("input_file", None,
                    "Input raw text file (or comma-separated list of files/globs).")
flags.DEFINE_string("output_file", None,
                    "Output TF example file (or comma-separated list of files, written "
                    "round-robin).")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_bool("do_lower_case", True,
                  "Whether to lower case the input text. Should be True for uncased models and "
                  "False for cased models.")
flags.DEFINE_bool("do_whole_word_mask", False,
                  "Whether to use whole word masking rather than per-WordPiece masking.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer("dupe_factor", 10,
                     "Number of times to duplicate the input data (with different masks).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1,
                   "Probability of creating sequences which are shorter than the maximum length.")
flags.DEFINE_integer("num_workers", None,
                     "Worker processes (default: all available cores). The output does not "
                     "depend on it.")
flags.DEFINE_float("shard_size_mb", 4.0,
                   "MB of input text a worker handles at once. Bounds memory; instances are "
                   "shuffled, and random next documents drawn, within such a shard.")
flags.DEFINE_bool("dynamic_masking", False,
                  "Store unmasked sequences (no masked_lm_* features) for masking at read time "
                  "(make_pretraining_dataset(..., dynamic_masking=True)).")


def main(_):
    from bert_tf.data.pretraining import PretrainingDataOptions, create_pretraining_data

    options = PretrainingDataOptions(
        vocab_file=FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case,
        do_whole_word_mask=FLAGS.do_whole_word_mask, max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq, random_seed=FLAGS.random_seed,
        dupe_factor=FLAGS.dupe_factor, masked_lm_prob=FLAGS.masked_lm_prob,
        short_seq_prob=FLAGS.short_seq_prob, shard_size_mb=FLAGS.shard_size_mb,
        dynamic_masking=FLAGS.dynamic_masking)
    create_pretraining_data(FLAGS.input_file, FLAGS.output_file, options,
                            num_workers=FLAGS.num_workers)


if __name__ == "__main__":
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("output_file")
    flags.mark_flag_as_required("vocab_file")
    logging.set_verbosity(logging.INFO)
    cli.run(main)
