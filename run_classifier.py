#!/usr/bin/env python3
"""BERT fine-tuning for sentence(-pair) classification and regression: GLUE, XNLI or your own
TSV/CSV/JSONL files (google-research/bert's flags, plus tensorflow-datasets input, periodic
evaluation with the best checkpoint kept, early stopping, distribution, mixed precision, XLA,
distillation of a fine-tuned run into a smaller student).

  python run_classifier.py --task_name=MRPC --data_dir=glue_data/MRPC \
      --vocab_file=$BERT/vocab.txt --bert_config_file=$BERT/bert_config.json \
      --init_checkpoint=$BERT/bert_model.ckpt --do_train --do_eval --do_predict \
      --max_seq_length=128 --train_batch_size=32 --learning_rate=2e-5 \
      --num_train_epochs=3 --output_dir=/tmp/mrpc_output --export_dir=/tmp/mrpc_serving

--export_dir writes the model evaluated and predicted with (the best one with --eval_every_steps
and --load_best_at_end) as a SavedModel for TensorFlow Serving: the task's labels, text pairs
except for CoLA, SST-2 and generic tasks without --text_b_column, a score for STS-B.
"""

from absl import flags

from bert_tf import cli
from bert_tf import flags as common
from bert_tf.jobs.classifier import ClassifierOptions, ProcessorOptions
from bert_tf.options import define_flags, flag_values

FLAGS = flags.FLAGS

common.define_job_flags(ClassifierOptions)
define_flags(ProcessorOptions)


def main(argv):
    del argv
    from bert_tf.jobs.classifier import run
    from bert_tf.jobs.results import summary_lines
    common.setup_logging(FLAGS.output_dir)
    processor = ProcessorOptions(**flag_values(ProcessorOptions))
    opts = common.job_options(
        ClassifierOptions, processor_options=processor.keyword_arguments(FLAGS.task_name))
    result = run(opts, opts.start_runtime())
    print("\n".join(summary_lines(result, predictions=lambda predicted: ", ".join(
        sorted(predicted.values())))))


if __name__ == "__main__":
    flags.mark_flag_as_required("output_dir")
    cli.run(main)
