"""The README's main job (`python -m bert_tf.quickstart`): pre-training, fine-tuning, export and
serving on text harvested from the installed Python standard library, nothing downloaded.

Modules (the text itself: bert_tf.data.docstrings): task (the package-classification task),
data (the CLI writing both), pipeline (the stages as docs/quickstart.md's commands), serve (raw-text
requests through an exported SavedModel), minilm (real pretrained weights, optional demo).
"""
