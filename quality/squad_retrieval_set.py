#!/usr/bin/env python3
"""Writes the SQuAD-derived retrieval set (bert_tf.data.embedding.squad_retrieval) from the
shared SQuAD v1.1 subsets: questions -> paragraphs of the training subset for run_embedding
--train_file, and of the dev subset for --eval_file with every dev paragraph as --corpus_file.

  python quality/squad_retrieval_set.py /tmp/squad_retrieval
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bert_tf.data.embedding import write_squad_retrieval  # noqa: E402

SQUAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data",
                     "squad")

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    counts = write_squad_retrieval(os.path.join(SQUAD, "train-v1.1.first44articles.json"),
                                   os.path.join(SQUAD, "dev-v1.1.half-a.json"), sys.argv[1])
    print(", ".join(f"{name}: {n} rows" for name, n in counts.items()))
