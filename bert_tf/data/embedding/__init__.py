"""Sentence-embedding data (run_embedding): pairs, scored pairs and corpus files, their
in-graph tokenized tf.data input, and the SQuAD-derived retrieval set."""

from bert_tf.data.embedding.rows import CORPUS, PAIRS, SCORED, read_rows
from bert_tf.data.embedding.squad_retrieval import read_squad_pairs, write_squad_retrieval
