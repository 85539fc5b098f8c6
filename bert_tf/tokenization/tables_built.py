"""Importing this module builds the in-graph tokenizer's code point tables in this process.

bert_tf.processes' fork server preloads it, so every runner forked from the server starts with
the tables (pure Python, no op; about 1.7 s per process otherwise)."""

from bert_tf.tokenization import graph_tables

graph_tables.build_all()
