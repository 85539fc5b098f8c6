"""Predictions without a test file, for every fine-tuned task (`python -m bert_tf.predict`).

`run(PredictOptions(model=..., texts=[...]))` reads rows from strings or an input file
(`inputs`), loads a SavedModel exported by bert_tf or builds a checkpoint into the same serving
module (`loading`), and returns one JSON-able dict per row (`tasks` says what each task
returns). Names load on first use: importing the package does not import TensorFlow.
"""

from bert_tf._lazy import lazy_exports

_EXPORTS = {
    "PredictOptions": "bert_tf.prediction.job",
    "run": "bert_tf.prediction.job",
    "json_lines": "bert_tf.prediction.job",
    "CheckpointSettings": "bert_tf.prediction.loading",
    "Predictor": "bert_tf.prediction.loading",
    "InputError": "bert_tf.prediction.inputs",
    "Row": "bert_tf.prediction.inputs",
    "read_rows": "bert_tf.prediction.inputs",
    "read_input_file": "bert_tf.prediction.inputs",
    "word_entities": "bert_tf.prediction.runners",
    "split_words": "bert_tf.prediction.runners",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
