"""What bert_tf.predict (bert_tf.jobs.predict) is made of, for every fine-tuned task: rows
from strings or an input file (`inputs`), a SavedModel exported by bert_tf or what a checkpoint
holds (`loading`), and what each kind returns per row (`runners`). Names load on first use:
importing the package does not import TensorFlow.
"""

from bert_tf._lazy import lazy_exports

_EXPORTS = {
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
