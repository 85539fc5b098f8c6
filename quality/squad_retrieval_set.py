#!/usr/bin/env python3
"""Writes the SQuAD-derived retrieval set (bert_tf.data.embedding.squad_retrieval) from the
shared SQuAD v1.1 subsets: questions -> paragraphs of the training subset for run_embedding
--train_file, and of the dev subset for --eval_file with every dev paragraph as --corpus_file.

  python quality/squad_retrieval_set.py OUT
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bert_tf.data.embedding import write_squad_retrieval  # noqa: E402

SQUAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data",
                     "squad")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output_dir", help="where train.jsonl, dev.jsonl and dev_corpus.jsonl go")
    parser.add_argument("--squad_dir", default=SQUAD, help="the shared SQuAD subsets' folder")
    parser.add_argument("--max_articles", type=int, default=0,
                        help="only the first N articles of each file (0: all)")
    args = parser.parse_args()
    counts = write_squad_retrieval(
        os.path.join(args.squad_dir, "train-v1.1.first44articles.json"),
        os.path.join(args.squad_dir, "dev-v1.1.half-a.json"), args.output_dir,
        args.max_articles)
    print(", ".join(f"{name}: {n} rows" for name, n in counts.items()))


if __name__ == "__main__":
    main()
