"""Creates masked-LM / next-sentence TFRecords for BERT pre-training from raw text.

Drop-in for google-research/bert's create_pretraining_data.py (same flags, input format and
TFRecord schema), parallel and streaming: memory is bounded by --shard_size_mb per worker, and a
rerun with the same arguments resumes or skips finished work. See bert_tf/data/pretraining/job.py;
with --beam_pipeline_options the same job runs as an Apache Beam pipeline (docs/scale.md).
"""

from absl import flags, logging

from bert_tf import cli
from bert_tf.data.pretraining.options import PretrainingDataFiles, PretrainingDataOptions
from bert_tf.options import define_flags, flag_values

define_flags(PretrainingDataFiles)
define_flags(PretrainingDataOptions)


def main(_):
    files = PretrainingDataFiles(**flag_values(PretrainingDataFiles))
    options = PretrainingDataOptions(**flag_values(PretrainingDataOptions))
    if files.beam_pipeline_options is None:
        from bert_tf.data.pretraining import create_pretraining_data
        create_pretraining_data(files.input_file, files.output_file, options,
                                num_workers=files.num_workers)
        return
    if files.num_workers is not None:
        raise ValueError("--num_workers is the pool's: with --beam_pipeline_options give the "
                         "runner's workers there (e.g. direct_num_workers=2)")
    from bert_tf.beam.pretraining_data import create_pretraining_data
    create_pretraining_data(files.input_file, files.output_file, options,
                            files.beam_pipeline_options)


if __name__ == "__main__":
    flags.mark_flags_as_required(["input_file", "output_file", "vocab_file"])
    logging.set_verbosity(logging.INFO)
    cli.run(main)
