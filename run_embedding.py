#!/usr/bin/env python3
"""Sentence-embedding fine-tuning: in-batch negatives on (anchor, positive[, negative]) rows or
cosine-similarity regression on scored pairs, evaluated by retrieval (MRR@10, Recall@1/10,
nDCG@10) or STS Spearman, as sentence-transformers trains and evaluates.

  python quality/squad_retrieval_set.py /tmp/squad_retrieval
  python run_embedding.py --init_checkpoint=$MINILM --do_train --do_eval \
      --train_file=/tmp/squad_retrieval/train.jsonl --eval_file=/tmp/squad_retrieval/dev.jsonl \
      --corpus_file=/tmp/squad_retrieval/dev_corpus.jsonl --max_seq_length=256 \
      --train_batch_size=32 --learning_rate=2e-5 --output_dir=/tmp/embedding

($MINILM: a sentence-transformers folder such as all-MiniLM-L6-v2: its config, vocabulary and
pooling are read from it.) --export_dir writes the model as a SavedModel for TensorFlow Serving
(texts in, embeddings out).
"""

from absl import flags

from bert_tf import cli
from bert_tf import flags as common
from bert_tf.jobs.embedding import EmbeddingOptions

FLAGS = flags.FLAGS

common.define_job_flags(EmbeddingOptions)


def main(argv):
    del argv
    from bert_tf.jobs.embedding import run
    from bert_tf.jobs.results import summary_lines
    common.setup_logging(FLAGS.output_dir)
    opts = common.job_options(EmbeddingOptions)
    result = run(opts, opts.start_runtime())
    print("\n".join(summary_lines(result, None, str)))


if __name__ == "__main__":
    flags.mark_flag_as_required("output_dir")
    cli.run(main)
